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
