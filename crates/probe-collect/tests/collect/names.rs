//! Names that are not UTF-8 (issue 31): a log file with a Latin-1 name, as a launch under an
//! ISO-8859-1 locale names it, is read under its exact name by every shell; when its name
//! matches no file or several, it is said why.

use crate::util::{run_round2, shells};
use probe_model::SectionStatus;
use std::os::unix::ffi::OsStrExt as _;

/// vLLM 0.8's periodic stats line (vllm/engine/metrics.py `LoggingStatLogger.log`).
fn stats(i: u32) -> String {
    format!(
        "INFO 11-28 10:{:02}:00 metrics.py:455] Avg prompt throughput: 900.0 tokens/s, Avg generation throughput: {}.0 tokens/s, Running: 4 reqs, Swapped: 0 reqs, Pending: 0 reqs, GPU KV cache usage: 12.0%, CPU KV cache usage: 0.0%.\n",
        i % 60,
        500 + i
    )
}

fn write(dir: &std::path::Path, name: &[u8], text: &str) {
    std::fs::write(dir.join(std::ffi::OsStr::from_bytes(name)), text).unwrap();
}

#[test]
fn a_latin1_log_name_is_read_under_its_exact_name() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let text: String = (0..40).map(stats).collect();
    // `café.log` and `naïve.log` in Latin-1; `r?sum?.log` twins (é, è) that one name matches.
    write(d, b"caf\xe9.log", &text);
    write(d, b"caf\xe9.log.1", &text);
    write(d, b"na\xefve.log", &text);
    write(d, b"r\xe9sum\xe9.log", &text);
    write(d, b"r\xe8sum\xe8.log", &text);
    // An ASCII twin that `gon?.log` would match: a Latin-1 byte is never an ASCII letter.
    write(d, b"gone.log", &text);
    let lossy = |name: &[u8]| format!("{}/{}", d.display(), String::from_utf8_lossy(name));
    let asked = [
        (lossy(b"caf\xe9.log"), true),
        (lossy(b"na\xefve.log"), true),
        (lossy(b"r\xe9sum\xe9.log"), false),
        (lossy(b"gon\xe9.log"), false),
    ];
    let inputs = probe_collect::script::Round2Inputs {
        logs: asked.iter().map(|(p, _)| p.clone()).collect(),
        ..Default::default()
    };
    for shell in shells() {
        let snap = run_round2(&shell, &inputs);
        for (path, read) in &asked {
            let src = snap
                .logs
                .iter()
                .find(|l| &l.location == path)
                .unwrap_or_else(|| panic!("{}: no record of {path}: {:#?}", shell.name, snap.logs));
            if *read {
                assert_eq!(src.status, SectionStatus::Ok, "{}: {path}", shell.name);
                assert!(
                    src.metrics.iter().any(|m| m.points.len() >= 40),
                    "{}: {path}: its lines were not read",
                    shell.name
                );
            } else {
                assert_eq!(
                    src.status,
                    SectionStatus::NotPresent,
                    "{}: {path}",
                    shell.name
                );
                assert!(
                    src.message
                        .as_deref()
                        .is_some_and(|m| m.contains("not UTF-8")),
                    "{}: {path}: {:?}",
                    shell.name,
                    src.message
                );
            }
        }
        // The rotated copy beside the Latin-1 name is found from its exact name too.
        assert!(
            snap.logs
                .iter()
                .any(|l| l.location == lossy(b"caf\xe9.log.1") && l.status == SectionStatus::Ok),
            "{}: the rotated copy was not read",
            shell.name
        );
    }
}

/// The same for the launch files round 2 reads (a config file a running launch names, a compose
/// file): one whose name came with U+FFFD is read under its exact name.
#[test]
fn a_latin1_config_file_name_is_read_under_its_exact_name() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write(d, b"caf\xe9.yaml", "max-num-seqs: 64\n");
    let asked = format!(
        "{}/{}",
        d.display(),
        String::from_utf8_lossy(b"caf\xe9.yaml")
    );
    let inputs = probe_collect::script::Round2Inputs {
        launch_files: vec![("config".into(), "pid:4242".into(), asked.clone())],
        ..Default::default()
    };
    for shell in shells() {
        let snap = run_round2(&shell, &inputs);
        let f = snap
            .launch_files
            .iter()
            .find(|f| f.path == asked)
            .unwrap_or_else(|| panic!("{}: {:#?}", shell.name, snap.launch_files));
        assert_eq!(
            f.status,
            SectionStatus::Ok,
            "{}: {:?}",
            shell.name,
            f.message
        );
        assert_eq!(f.text, "max-num-seqs: 64\n", "{}", shell.name);
    }
}

fn mkdir(dir: &std::path::Path, name: &[u8]) -> std::path::PathBuf {
    let p = dir.join(std::ffi::OsStr::from_bytes(name));
    std::fs::create_dir_all(&p).unwrap();
    p
}

/// A path as round 1 reads it from a host whose names are Latin-1: U+FFFD for each byte.
fn lossy(dir: &std::path::Path, name: &[u8]) -> String {
    format!("{}/{}", dir.display(), String::from_utf8_lossy(name))
}

/// The message of section `name`, or "".
fn note<'a>(snap: &'a probe_model::Snapshot, name: &str) -> &'a str {
    snap.sections
        .iter()
        .find(|s| s.name == name)
        .and_then(|s| s.message.as_deref())
        .unwrap_or("")
}

/// Round 2's other lists, each with a Latin-1 name that one directory on the host has (read
/// under its exact name) and one that only an ASCII twin matches (`gone` for `gon?`: not
/// read, with the reason): Python prefixes, model directories, benchmark directories and the
/// places found in round 1. (input, then what each shell must give.)
#[test]
fn latin1_names_in_every_round2_list_are_read_or_said() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let not_utf8 = probe_collect::frame::NAME_NOT_MATCHED;
    // A venv at `café-venv` with vLLM installed.
    let sp = mkdir(
        d,
        b"caf\xe9-venv/lib/python3.11/site-packages/vllm-0.8.5.dist-info",
    );
    std::fs::write(
        sp.join("METADATA"),
        "Metadata-Version: 2.1\nName: vllm\nVersion: 0.8.5\n\n",
    )
    .unwrap();
    // A model directory `modèles/qwen` with its config.json.
    let m = mkdir(d, b"mod\xe8les/qwen");
    std::fs::write(
        m.join("config.json"),
        r#"{"model_type":"qwen2","num_hidden_layers":28}"#,
    )
    .unwrap();
    // vLLM's benchmark_serving.py result in `résultats`.
    let bench = std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../probe-testkit/fixtures/vllm-bench/root/home/vllm/bench/vllm-infqps-concurrency8-glm-4.5-air-20261120-165000.json"
    ))
    .unwrap();
    std::fs::write(mkdir(d, b"r\xe9sultats").join("vllm-bench.json"), bench).unwrap();
    // A log directory a cron line names, `journaux-été`.
    let text: String = (0..40).map(stats).collect();
    std::fs::write(
        mkdir(d, b"journaux-\xe9t\xe9").join("vllm-20261128.log"),
        &text,
    )
    .unwrap();
    // The ASCII twins a `?` would match.
    for twin in ["gone-venv", "gone-model", "gone-bench", "gone-logs"] {
        mkdir(d, twin.as_bytes());
    }
    std::fs::write(d.join("gone-model/config.json"), "{}").unwrap();
    std::fs::write(d.join("gone-logs/vllm-20261128.log"), &text).unwrap();

    let (venv, gone_venv) = (lossy(d, b"caf\xe9-venv"), lossy(d, b"gon\xe9-venv"));
    let (model, gone_model) = (lossy(d, b"mod\xe8les/qwen"), lossy(d, b"gon\xe9-model"));
    let (bench_dir, gone_bench) = (lossy(d, b"r\xe9sultats"), lossy(d, b"gon\xe9-bench"));
    let (logs, gone_logs) = (lossy(d, b"journaux-\xe9t\xe9"), lossy(d, b"gon\xe9-logs"));
    use probe_collect::found::{FoundMode, FoundPlace};
    use probe_collect::script::{BenchDir, ModelLookup, ModelLookupKind, Round2Inputs};
    let lookup = |dir: &str| ModelLookup {
        kind: ModelLookupKind::Dir,
        named: dir.to_string(),
        dir: dir.to_string(),
    };
    let bench_at = |dir: &str| BenchDir {
        owner: "-".into(),
        uid: None,
        home: None,
        dir: dir.to_string(),
    };
    let place = |dir: &str| FoundPlace {
        mode: FoundMode::Text,
        dir: dir.to_string(),
        pattern: "vllm-*.log".into(),
        reason: format!("cron:/etc/cron.d/vllm line 2 writes into {dir}"),
    };
    let inputs = Round2Inputs {
        python_prefixes: vec![venv.clone(), gone_venv.clone()],
        models: vec![lookup(&model), lookup(&gone_model)],
        bench_dirs: vec![bench_at(&bench_dir), bench_at(&gone_bench)],
        found: vec![place(&logs), place(&gone_logs)],
        ..Default::default()
    };
    // The found places reach the script (a directory that is not ASCII is no longer left out).
    assert_eq!(
        probe_collect::found::script_lines(&inputs.found)
            .lines()
            .count(),
        2
    );
    for shell in shells() {
        let snap = run_round2(&shell, &inputs);
        let sh = shell.name;
        // Python: the venv's packages, under the name round 1 gave; the twin not read, said.
        let env = snap
            .python_envs
            .iter()
            .find(|e| e.prefix.as_deref() == Some(venv.as_str()))
            .unwrap_or_else(|| panic!("{sh}: no env {venv}: {:#?}", snap.python_envs));
        assert!(
            env.packages
                .iter()
                .any(|p| p.name == "vllm" && p.version == "0.8.5"),
            "{sh}: {:?}",
            env.packages
        );
        assert!(
            !snap
                .python_envs
                .iter()
                .any(|e| e.prefix.as_deref() == Some(gone_venv.as_str())),
            "{sh}"
        );
        let py = note(&snap, "python_envs");
        assert!(
            py.contains(&format!("{gone_venv}: {not_utf8}")),
            "{sh}: {py}"
        );
        // Models: the config read; the twin not present, with the reason.
        let of = |named: &str| {
            snap.models
                .iter()
                .find(|m| m.model == named)
                .unwrap_or_else(|| panic!("{sh}: no model {named}: {:#?}", snap.models))
        };
        assert_eq!(
            of(&model).status,
            SectionStatus::Ok,
            "{sh}: {:?}",
            of(&model).message
        );
        assert_eq!(
            of(&model).fields.get("num_hidden_layers"),
            Some(&serde_json::json!(28)),
            "{sh}"
        );
        assert_eq!(of(&gone_model).status, SectionStatus::NotPresent, "{sh}");
        assert_eq!(of(&gone_model).message.as_deref(), Some(not_utf8), "{sh}");
        // Benchmarks: the result read from the exact directory; the twin's directory said.
        assert!(
            snap.benchmarks
                .iter()
                .any(|r| r.file == format!("{bench_dir}/vllm-bench.json")),
            "{sh}: {:#?} {}",
            snap.benchmarks,
            note(&snap, "benchmarks")
        );
        let bn = note(&snap, "benchmarks");
        assert!(
            bn.contains(&format!("{gone_bench}: {not_utf8}")),
            "{sh}: {bn}"
        );
        // Found places: the file in the exact directory read; the twin's directory said.
        let found = |loc: &str| snap.logs.iter().find(|l| l.location == loc);
        let log = found(&format!("{logs}/vllm-20261128.log"))
            .unwrap_or_else(|| panic!("{sh}: {:#?}", snap.logs));
        assert_eq!(log.status, SectionStatus::Ok, "{sh}: {:?}", log.message);
        assert!(log.metrics.iter().any(|m| m.points.len() >= 40), "{sh}");
        let gone = found(&format!("{gone_logs}/vllm-*.log"))
            .unwrap_or_else(|| panic!("{sh}: {:#?}", snap.logs));
        assert_eq!(gone.status, SectionStatus::NotPresent, "{sh}");
        assert_eq!(gone.message.as_deref(), Some(not_utf8), "{sh}");
        assert!(
            !snap.logs.iter().any(|l| l.location.contains("gone-logs")),
            "{sh}: the ASCII twin was read"
        );
    }
}

/// A unit whose file has a Latin-1 name: systemd loads no unit by it, so `journalctl -u` is
/// never given the name, and the journal section says why it was not read.
#[test]
fn a_latin1_unit_name_is_not_given_to_journalctl_and_said() {
    let odd = String::from_utf8_lossy(b"caf\xe9.service").into_owned();
    let inputs = probe_collect::script::Round2Inputs {
        units: vec![
            ("system".into(), odd.clone()),
            ("system".into(), "vllm.service".into()),
        ],
        ..Default::default()
    };
    let text = probe_collect::script::build_round2(
        &probe_collect::CollectOptions::default(),
        &probe_collect::script::new_boundary(),
        std::time::Duration::from_secs(60),
        &inputs,
    );
    assert!(text.contains("system vllm.service"));
    assert!(!text.contains(&odd), "the name reached the script");
    for shell in shells() {
        let snap = run_round2(&shell, &inputs);
        let j = note(&snap, "journal");
        assert!(
            j.contains(&format!(
                "journal not read for system unit {odd}: not a valid systemd unit name"
            )),
            "{}: {j}",
            shell.name
        );
        assert!(!j.contains("vllm.service"), "{}: {j}", shell.name);
    }
}
