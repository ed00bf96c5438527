//! End-to-end: an LMDeploy server started through its Python API (issue 34). `lmdeploy-script`:
//! root runs `/opt/venvs/lmdeploy/bin/python3 serve_lmdeploy.py` from /srv/llm (the argv names
//! the script by a relative path; round 2 reads it at the process's working directory), whose
//! `serve(MODEL, backend_config=TurbomindEngineConfig(tp=2, ..., cache_max_entry_count=CACHE))`
//! is the whole configuration: no flag and no start-up line says it. mallory runs three scripts
//! named like LMDeploy servers and swaps each file once it runs (a link to /dev/zero, a FIFO, a
//! 2 GiB sparse file): each read stays bounded and is said once.

use probe_model::{DefiningFileRole, Engine, LaunchFileKind, SectionStatus};
use serde_json::json;

use crate::util;

const SCRIPT: &str = "/srv/llm/serve_lmdeploy.py";

fn host() -> &'static util::Collected {
    util::collected("lmdeploy-script")
}

/// The running launch is the script's: the engine config's keywords (a name assigned a literal
/// included) are LMDeploy's options, each written with the file it came from, the script among
/// the launch's defining files, and the engine version the venv's.
#[test]
fn lmdeploy_script_settings_come_from_the_script_the_process_runs() {
    let (report, text, snapshot) = host();
    let f = snapshot
        .launch_files
        .iter()
        .find(|f| f.path == SCRIPT)
        .expect("the script read in round 2");
    assert_eq!(f.kind, LaunchFileKind::PythonScript);
    assert_eq!(f.status, SectionStatus::Ok, "{f:?}");
    assert!(f.named_by.starts_with("pid:"), "{}", f.named_by);
    assert!(f.text.contains("cache_max_entry_count=CACHE"), "{}", f.text);
    let l = report
        .running
        .iter()
        .find(|l| l.files.iter().any(|d| d.path == SCRIPT))
        .unwrap_or_else(|| panic!("the script's launch: {:#?}", report.running));
    assert_eq!(l.engine, Engine::Lmdeploy);
    assert_eq!(l.engine_version.as_deref(), Some("0.16.0"));
    assert_eq!(l.model.as_deref(), Some("/models/Qwen2.5-14B-Instruct"));
    assert_eq!(l.entrypoint.as_deref(), Some("serve()"));
    assert_eq!(
        l.argv,
        ["/opt/venvs/lmdeploy/bin/python3", "serve_lmdeploy.py"]
    );
    assert_eq!(l.working_directory.as_deref(), Some("/srv/llm"));
    let value = |k: &str| l.options.get(k).map(|o| o.value.clone());
    for (k, v) in [
        ("cache-max-entry-count", json!(0.5)),
        ("tp", json!(2)),
        ("session-len", json!(16384)),
        ("max-batch-size", json!(128)),
        ("server-port", json!(23333)),
        ("backend", json!("turbomind")),
    ] {
        assert_eq!(value(k), Some(v), "{k}: {:#?}", l.options);
    }
    assert_eq!(
        l.options["cache-max-entry-count"].written,
        format!("cache_max_entry_count=0.5 (in {SCRIPT})")
    );
    let file = l.files.iter().find(|d| d.path == SCRIPT).unwrap();
    assert_eq!(file.role, DefiningFileRole::PythonScript);
    for k in ["cache-max-entry-count", "tp", "session-len", "server-port"] {
        assert!(file.sets.iter().any(|s| s == k), "{k}: {:?}", file.sets);
    }
    assert!(l.warnings.is_empty(), "{:?}", l.warnings);
    // The forked api_server (the same argv) is the script's worker, not a second launch.
    let same_argv = report
        .running
        .iter()
        .filter(|r| r.argv.last().is_some_and(|a| a == "serve_lmdeploy.py"))
        .count();
    assert_eq!(same_argv, 1, "{:#?}", report.running);
    assert!(text.contains("serve_lmdeploy.py"), "{text}");
}

/// mallory's swapped files: the link and the FIFO are not opened, the sparse file is read up to
/// the bound; the section says each once, and the two look-alikes whose script was not read are
/// LMDeploy by name only, their settings unknown.
#[test]
fn lmdeploy_script_swapped_files_stay_bounded_with_one_notice_each() {
    let (report, _, snapshot) = host();
    let file = |name: &str| {
        snapshot
            .launch_files
            .iter()
            .find(|f| f.path == format!("/home/mallory/{name}"))
            .unwrap_or_else(|| panic!("{name}: {:#?}", snapshot.launch_files))
    };
    let zero = file("lmdeploy_zero.py");
    assert_eq!(zero.status, SectionStatus::PermissionDenied, "{zero:?}");
    assert!(zero.text.is_empty());
    let fifo = file("lmdeploy_fifo.py");
    assert_eq!(fifo.status, SectionStatus::Failed, "{fifo:?}");
    assert!(fifo.text.is_empty());
    let huge = file("lmdeploy_huge.py");
    assert_eq!(huge.status, SectionStatus::Truncated, "{huge:?}");
    // Read to the bound, and not kept: a script that imports no engine's API is the user's
    // own code (as mallory's others are).
    assert!(
        huge.truncated && huge.text.is_empty(),
        "{}",
        huge.text.len()
    );
    let sec = snapshot
        .sections
        .iter()
        .find(|s| s.name == "launch_files")
        .expect("the section");
    let msg = sec.message.as_deref().unwrap_or_default();
    for said in [
        "/home/mallory/lmdeploy_zero.py: symbolic link: not followed",
        "/home/mallory/lmdeploy_fifo.py: not a regular file (a FIFO): not read",
        "/home/mallory/lmdeploy_huge.py: read up to 262144 bytes",
    ] {
        assert_eq!(msg.matches(said).count(), 1, "{said}: {msg}");
    }
    assert!(
        sec.duration_ms.is_none_or(|ms| ms < 10_000),
        "bounded in time: {sec:?}"
    );
    for (name, why) in [
        ("lmdeploy_zero.py", "symbolic link: not followed"),
        ("lmdeploy_fifo.py", "not a regular file (a FIFO): not read"),
    ] {
        let l = report
            .running
            .iter()
            .find(|l| l.argv.iter().any(|a| a.ends_with(name)))
            .unwrap_or_else(|| panic!("{name}: {:#?}", report.running));
        assert_eq!(l.engine, Engine::Lmdeploy);
        assert!(l.options.is_empty(), "{:?}", l.options);
        assert_eq!(
            l.warnings,
            [format!(
                "the Python script /home/mallory/{name} was not read on the host ({why}): the \
                 engine settings it gives are unknown"
            )]
        );
    }
    assert!(
        !report
            .running
            .iter()
            .any(|l| l.argv.iter().any(|a| a.ends_with("lmdeploy_huge.py"))),
        "a text of NULs starts no engine"
    );
}
