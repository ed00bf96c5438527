//! The rollback script applied to files in a temporary directory (`ROOT=`), under every shell
//! and awk the host side is held to (dash, busybox sh with its awk, sh with mawk and gawk),
//! with `systemctl` a stand-in that logs its arguments (systemd cannot run here).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use probe_model::{
    DefiningFileRole, Launcher, Placeholder, RollbackAction, RollbackPlan, RollbackStep,
    SnapshotDiff, VerifyAt,
};

use super::rollback_script;

const UNIT: &str = "/etc/systemd/system/vllm.service";
const DROP_IN: &str = "/etc/systemd/system/vllm.service.d/override.conf";
const ENV_FILE: &str = "/etc/default/vllm";

const DROP_IN_TEXT: &str = "# keep: the start-up timeout\n[Service]\nTimeoutStartSec=1800\nEnvironment=NCCL_P2P_DISABLE=1 NCCL_DEBUG=INFO\nExecStart=\nExecStart=/v/bin/vllm serve /m \\\n    --tensor-parallel-size 4 \\\n    --disable-custom-all-reduce\n";
const DROP_IN_AFTER: &str = "# keep: the start-up timeout\n[Service]\nTimeoutStartSec=1800\nEnvironment=NCCL_DEBUG=INFO\nExecStart=\nExecStart=/v/bin/vllm serve /m --tensor-parallel-size 4\nEnvironment=VLLM_ATTENTION_BACKEND=FLASHINFER\n";

fn step(action: RollbackAction, why: &str) -> RollbackStep {
    RollbackStep {
        action,
        why: why.to_string(),
    }
}

fn edit(
    file: &str,
    role: DefiningFileRole,
    old: Option<&str>,
    new: Option<&str>,
    key_only: bool,
) -> RollbackAction {
    RollbackAction::EditLine {
        file: file.into(),
        role,
        setting: String::from("x"),
        old: old.map(String::from),
        new: new.map(String::from),
        section: Some(String::from("[Service]")),
        key_only,
    }
}

/// A plan over a unit with a drop-in and an environment file, ending with a restart and checks.
fn plan() -> SnapshotDiff {
    let mut diff = SnapshotDiff::default();
    diff.before.host = "good\nrm -rf /".into();
    diff.after.host = "slow".into();
    diff.rollback_plan = RollbackPlan {
        launcher: Launcher::Systemd {
            unit: "vllm.service".into(),
        },
        steps: vec![
            step(
                edit(
                    DROP_IN,
                    DefiningFileRole::DropIn,
                    Some(
                        "ExecStart=/v/bin/vllm serve /m \\\n    --tensor-parallel-size 4 \\\n    --disable-custom-all-reduce",
                    ),
                    Some("ExecStart=/v/bin/vllm serve /m --tensor-parallel-size 4"),
                    false,
                ),
                "drop --disable-custom-all-reduce\nrm -rf / (a why is a comment, whatever it holds)",
            ),
            step(
                edit(
                    DROP_IN,
                    DefiningFileRole::DropIn,
                    Some("Environment=NCCL_P2P_DISABLE=1 NCCL_DEBUG=INFO"),
                    Some("Environment=NCCL_DEBUG=INFO"),
                    false,
                ),
                "NCCL_P2P_DISABLE was not set before",
            ),
            step(
                edit(
                    DROP_IN,
                    DefiningFileRole::DropIn,
                    None,
                    Some("Environment=VLLM_ATTENTION_BACKEND=FLASHINFER"),
                    false,
                ),
                "set before",
            ),
            step(
                edit(
                    ENV_FILE,
                    DefiningFileRole::EnvironmentFile,
                    Some("VLLM_USE_V1=<redacted:00ff00ff>"),
                    None,
                    true,
                ),
                "not set before",
            ),
            step(
                RollbackAction::Run {
                    command: "systemctl daemon-reload".into(),
                },
                "reload",
            ),
            step(
                RollbackAction::Restart {
                    command: "systemctl restart vllm.service".into(),
                },
                "restart",
            ),
            step(
                RollbackAction::Verify {
                    command: Some("systemctl show -p ExecStart -p Environment vllm.service".into()),
                    at: VerifyAt::Host,
                    expect: "ExecStart= runs /v/bin/vllm serve /m --tensor-parallel-size 4".into(),
                },
                "what systemd runs",
            ),
            step(
                RollbackAction::Verify {
                    command: Some("probe diff good slow".into()),
                    at: VerifyAt::Probe,
                    expect: "exit 0".into(),
                },
                "again",
            ),
        ],
        placeholders: Vec::new(),
    };
    diff
}

/// A fresh copy of the host's files under a temporary root, with a `systemctl` stand-in.
fn root() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let at = |p: &str| dir.path().join("root").join(p.trim_start_matches('/'));
    for (path, text) in [
        (
            UNIT,
            "[Service]\nExecStart=/v/bin/vllm serve /m --tensor-parallel-size 4\n",
        ),
        (DROP_IN, DROP_IN_TEXT),
        (ENV_FILE, "HF_TOKEN=hf_real\nVLLM_USE_V1=1\n"),
    ] {
        std::fs::create_dir_all(at(path).parent().unwrap()).unwrap();
        std::fs::write(at(path), text).unwrap();
    }
    let bin = dir.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let stub = bin.join("systemctl");
    std::fs::write(
        &stub,
        format!(
            "#!/bin/sh\necho \"$*\" >> {}\n",
            dir.path().join("systemctl.log").display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&stub, std::fs::Permissions::from_mode(0o755)).unwrap();
    let root = dir.path().join("root");
    (dir, root)
}

/// Runs `script` with `shell` (argv), ROOT and a PATH whose `awk` is `awk` where given.
fn run(
    shell: &[&str],
    script: &str,
    dir: &Path,
    root: &Path,
    reviewed: bool,
    awk: Option<&str>,
) -> Output {
    let file = dir.join("plan.sh");
    std::fs::write(&file, script).unwrap();
    let bin = dir.join("bin");
    if let Some(awk) = awk {
        let link = bin.join("awk");
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink(awk, link).unwrap();
    }
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut cmd = Command::new(shell[0]);
    cmd.args(&shell[1..])
        .arg(&file)
        .current_dir(dir)
        .env("ROOT", root)
        .env("PATH", path);
    if reviewed {
        cmd.env("REVIEWED", "yes");
    } else {
        cmd.env_remove("REVIEWED");
    }
    cmd.output().unwrap()
}

fn read(root: &Path, p: &str) -> String {
    std::fs::read_to_string(root.join(p.trim_start_matches('/'))).unwrap()
}

fn shells() -> Vec<(Vec<&'static str>, Option<&'static str>)> {
    let mut out: Vec<(Vec<&str>, Option<&str>)> = Vec::new();
    for (shell, awk) in [
        (vec!["/bin/dash"], Some("/usr/bin/mawk")),
        (vec!["/bin/dash"], Some("/usr/bin/gawk")),
        (vec!["/usr/bin/busybox", "sh"], Some("/usr/bin/busybox")),
        (vec!["/bin/sh"], None),
    ] {
        if Path::new(shell[0]).exists() && awk.is_none_or(|a| Path::new(a).exists()) {
            out.push((shell, awk));
        }
    }
    out
}

#[test]
fn the_plan_applied_to_a_copy_changes_exactly_its_lines() {
    let script = rollback_script(&plan());
    assert!(script.starts_with("#!/bin/sh\n"), "{script}");
    assert!(script.contains("\nset -eu\n"), "{script}");
    // A remote text with a newline stays inside its comment.
    assert!(!script.lines().any(|l| l.starts_with("rm -rf")), "{script}");
    assert!(
        !script.contains("<redacted:"),
        "a marker never printed: {script}"
    );
    let shells = shells();
    assert!(shells.len() >= 3, "dash, busybox and sh: {shells:?}");
    for (shell, awk) in shells {
        let (dir, root) = root();
        let out = run(&shell, &script, dir.path(), &root, true, awk);
        let said = format!(
            "{shell:?} {awk:?}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(out.status.code(), Some(0), "{said}");
        assert_eq!(read(&root, DROP_IN), DROP_IN_AFTER, "{said}");
        assert_eq!(read(&root, ENV_FILE), "HF_TOKEN=hf_real\n", "{said}");
        assert_eq!(
            read(&root, UNIT),
            "[Service]\nExecStart=/v/bin/vllm serve /m --tensor-parallel-size 4\n",
            "the unit file is not touched: {said}"
        );
        let log = std::fs::read_to_string(dir.path().join("systemctl.log")).unwrap();
        assert_eq!(
            log,
            "daemon-reload\nrestart vllm.service\nshow -p ExecStart -p Environment vllm.service\n",
            "{said}"
        );
        // Each file edited was kept first, as it was.
        let kept: Vec<String> = std::fs::read_dir(root.join("etc/systemd/system/vllm.service.d"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with("override.conf.probe-rollback-"))
            .collect();
        assert!(!kept.is_empty(), "{said}");
        assert!(
            kept.iter().all(|k| !k.ends_with(".conf")),
            "systemd ignores the copies"
        );
        let first = kept.iter().min().unwrap();
        let copy =
            std::fs::read_to_string(root.join("etc/systemd/system/vllm.service.d").join(first))
                .unwrap();
        assert_eq!(copy, DROP_IN_TEXT, "{said}");
    }
}

#[test]
fn nothing_is_done_unreviewed_and_nothing_changes_where_the_file_moved_on() {
    let script = rollback_script(&plan());
    let (dir, root) = root();
    let out = run(&["/bin/sh"], &script, dir.path(), &root, false, None);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(read(&root, DROP_IN), DROP_IN_TEXT);
    assert!(!dir.path().join("systemctl.log").exists());
    // The drop-in was changed since probe read it: the script stops before any restart.
    let changed = DROP_IN_TEXT.replace("--disable-custom-all-reduce", "--enforce-eager");
    std::fs::write(root.join(DROP_IN.trim_start_matches('/')), &changed).unwrap();
    let out = run(&["/bin/sh"], &script, dir.path(), &root, true, None);
    assert_eq!(
        out.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(read(&root, DROP_IN), changed);
    assert!(!dir.path().join("systemctl.log").exists());
}

#[test]
fn a_placeholder_stops_the_script_until_filled_in() {
    let mut diff = plan();
    diff.rollback_plan.steps.insert(
        0,
        step(
            edit(
                ENV_FILE,
                DefiningFileRole::EnvironmentFile,
                Some("HF_TOKEN=<redacted:0a1b2c3d>"),
                Some("HF_TOKEN=<REDACTED:HF_TOKEN>"),
                true,
            ),
            "the earlier token",
        ),
    );
    diff.rollback_plan.placeholders.push(Placeholder {
        text: "<REDACTED:HF_TOKEN>".into(),
        name: "HF_TOKEN".into(),
        lives: "the value HF_TOKEN has on good".into(),
    });
    let script = rollback_script(&diff);
    assert!(script.contains("# Secrets are never printed."), "{script}");
    assert!(
        script.contains("#   <REDACTED:HF_TOKEN>: the value HF_TOKEN has on good"),
        "{script}"
    );
    let (dir, root) = root();
    let out = run(&["/bin/sh"], &script, dir.path(), &root, true, None);
    assert_eq!(out.status.code(), Some(3));
    // Nothing at all is done while a placeholder is left: no file, no command.
    assert_eq!(read(&root, ENV_FILE), "HF_TOKEN=hf_real\nVLLM_USE_V1=1\n");
    assert_eq!(read(&root, DROP_IN), DROP_IN_TEXT);
    assert!(!dir.path().join("systemctl.log").exists());
    // Filled in, it runs.
    let filled = script.replace("<REDACTED:HF_TOKEN>'", "hf_earlier'");
    let out = run(&["/bin/sh"], &filled, dir.path(), &root, true, None);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(read(&root, ENV_FILE), "HF_TOKEN=hf_earlier\n");
}

/// An empty plan says so and does nothing; other formats of other commands are refused.
#[test]
fn an_empty_plan() {
    let script = rollback_script(&SnapshotDiff::default());
    assert!(script.contains("Nothing to roll back"), "{script}");
    assert!(script.trim_end().ends_with("exit 0"));
}

/// Texts from a host that a shell would read as code (quotes, `$(...)`, backticks, `;`) reach
/// the script as data: the file with that name gets exactly its edit and nothing else runs; a
/// text with a control character is left to do by hand, said on one line.
#[test]
fn hostile_texts_stay_data() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    let name = "/etc/x/it's $(touch pwned1) `touch pwned2`; touch pwned3.conf";
    let at = root.join(name.trim_start_matches('/'));
    std::fs::create_dir_all(at.parent().unwrap()).unwrap();
    std::fs::write(&at, "A='$(touch pwned4)'\nB=1\n").unwrap();
    let mut diff = SnapshotDiff::default();
    diff.rollback_plan.steps = vec![
        step(
            edit(
                name,
                DefiningFileRole::EnvFile,
                Some("A='$(touch pwned4)'"),
                Some("A=`touch pwned5`; touch pwned6"),
                false,
            ),
            "why $(touch pwned7)\n touch pwned8",
        ),
        step(
            edit(
                "/etc/x/y",
                DefiningFileRole::EnvFile,
                Some("A=\u{1b}]0;title\u{7}"),
                None,
                false,
            ),
            "a terminal escape",
        ),
    ];
    let script = rollback_script(&diff);
    assert!(!script.contains('\u{1b}'), "{script}");
    assert!(
        script.contains("# 2. BY HAND (not scripted): in the env file /etc/x/y"),
        "{script}"
    );
    let out = run(&["/bin/dash"], &script, dir.path(), &root, true, None);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        std::fs::read_to_string(&at).unwrap(),
        "A=`touch pwned5`; touch pwned6\nB=1\n"
    );
    let mut found = Vec::new();
    let mut stack = vec![dir.path().to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let e = e.unwrap();
            if e.file_type().unwrap().is_dir() {
                stack.push(e.path());
            } else if e.file_name().to_string_lossy().starts_with("pwned") {
                found.push(e.path());
            }
        }
    }
    assert!(found.is_empty(), "{found:?}");
}
