//! End-to-end (issue 33): `probe diff` between two vLLM nodes deployed by one role, one with a
//! leftover systemd drop-in that changes the tensor-parallel communication path
//! (`NCCL_P2P_DISABLE=1`, `--disable-custom-all-reduce`): the fixture hosts `tp-node-a` and
//! `tp-node-b` over real SSH. The resolved KV size that moved with them is shown as their
//! consequence, under them; the identity of each node is in the header, never a cause; the
//! verdict names the drop-in's changes as explaining the slower decode, with the arithmetic.

use std::process::Output;
use std::sync::OnceLock;

use probe_model::SnapshotDiff;

use crate::util;

type Env = util::Stored;

fn env() -> &'static Env {
    static ENV: OnceLock<Env> = OnceLock::new();
    ENV.get_or_init(|| util::Stored::collect(&["tp-node-a", "tp-node-b", "tp-node-c"]))
}

fn probe(env: &Env, args: &[&str]) -> Output {
    env.probe(args)
}

/// The diff of the good node against the one with the drop-in: human text and JSON.
fn diff() -> &'static (String, SnapshotDiff, i32) {
    static D: OnceLock<(String, SnapshotDiff, i32)> = OnceLock::new();
    D.get_or_init(|| {
        let env = env();
        let args = ["diff", "fx-tp-node-a@latest", "fx-tp-node-b@latest"];
        let human = probe(env, &args);
        let json = probe(env, &[&args[..], &["--format", "json"]].concat());
        util::assert_output_schema(&[&args[..], &["--format", "json"]].concat(), &json);
        let parsed: SnapshotDiff = serde_json::from_slice(&json.stdout)
            .unwrap_or_else(|e| panic!("{e}: {}", util::text(&json.stdout)));
        (
            util::text(&human.stdout),
            parsed,
            human.status.code().unwrap_or(-1),
        )
    })
}

/// A block of the human diff, from its heading to the blank line after it.
fn block(text: &str, heading: &str) -> String {
    let start = text
        .find(&format!("\n{heading}"))
        .unwrap_or_else(|| panic!("{heading} in {text}"));
    let rest = text.get(start + 1..).unwrap_or_default();
    let end = rest.find("\n\n").unwrap_or(rest.len());
    rest.get(..end).unwrap_or_default().to_string()
}

/// What differs from one collection to the next: times, snapshot ids, ports.
fn filters() -> Vec<(&'static str, &'static str)> {
    vec![
        (r"20[0-9]{2}-[0-9]{2}-[0-9]{2} [0-9:]{5,8} UTC", "[time]"),
        (
            r"fixture-tp-node-([abc])-[0-9]+-[0-9a-f]{8}",
            "fixture-tp-node-$1-[id]",
        ),
        (r"root@127\.0\.0\.(5[568]):[0-9]+", "root@127.0.0.$1:[port]"),
        // PIDs, uptime and utilisation differ by how long each host has been up.
        (r"[0-9]+ volatile differences", "[n] volatile differences"),
    ]
}

#[test]
fn tp_nodes_consequence_under_its_causes() {
    let (_, diff, code) = diff();
    assert_eq!(*code, 1, "the nodes differ");
    let keys: Vec<&str> = diff.changes.iter().map(|c| c.key.as_str()).collect();
    let at = |key: &str| {
        keys.iter()
            .position(|k| *k == key)
            .unwrap_or_else(|| panic!("{key} in {keys:?}"))
    };
    let causes = ["disable-custom-all-reduce", "env:NCCL_P2P_DISABLE"];
    let kv = &diff.changes[at("limit:kv_cache_tokens")];
    assert_eq!(kv.before, Some(serde_json::json!(1_154_496)));
    assert_eq!(kv.after, Some(serde_json::json!(1_155_304)));
    assert_eq!(kv.consequence_of, causes, "linked to the drop-in's changes");
    assert!(
        kv.verdict.is_none(),
        "never judged as a cause: {:?}",
        kv.verdict
    );
    for cause in causes {
        assert!(at(cause) < at("limit:kv_cache_tokens"), "{keys:?}");
        assert!(diff.changes[at(cause)].impact <= kv.impact, "never above");
    }
}

#[test]
fn tp_nodes_identity_in_the_header_only() {
    let (human, diff, _) = diff();
    let header: String = human.lines().take(4).collect::<Vec<_>>().join("\n");
    for needle in [
        "host fixture-tp-node-a, machine-id 3b9e61c04d7f4a2e9c85d1f0a6b7e248",
        "host fixture-tp-node-b, machine-id 8d02f5a7c1e94b36a0d7e2c9b4f81a53",
        "4 x NVIDIA H100 80GB HBM3",
    ] {
        assert!(header.contains(needle), "{needle}: {header}");
    }
    for change in &diff.changes {
        assert!(
            !probe_model::identity::is_identity(&change.key),
            "identity among the changes: {}",
            change.key
        );
    }
    let verdict = diff.verdict.as_ref().expect("a verdict");
    assert!(
        verdict
            .cause
            .as_deref()
            .is_some_and(|k| !probe_model::identity::is_identity(k))
    );
    for text in [&verdict.headline, &verdict.ruled_out] {
        for field in [
            "host.hostname",
            "host.machine_id",
            "host.boot_time",
            "uuid",
            "serial",
        ] {
            assert!(!text.contains(field), "{field} in {text}");
        }
    }
}

#[test]
fn tp_nodes_the_drop_in_explains_the_slower_decode() {
    let (human, diff, _) = diff();
    let verdict = diff.verdict.as_ref().expect("a verdict");
    assert_eq!(verdict.cause.as_deref(), Some("disable-custom-all-reduce"));
    for key in ["disable-custom-all-reduce", "env:NCCL_P2P_DISABLE"] {
        let change = diff.changes.iter().find(|c| c.key == key).unwrap();
        let v = change.verdict.as_ref().unwrap();
        assert_eq!(v.test, probe_model::Test::Collective, "{key}");
        assert_eq!(
            v.assessment,
            probe_model::Assessment::Explains,
            "{key}: {}",
            v.reason
        );
        // 46 layers x 2 all-reduces, the added step time shared out over them.
        assert_eq!(v.numbers.get("all_reduces_per_step"), Some(&92.0), "{key}");
        let per = v.numbers["added_us_per_all_reduce"];
        assert!((30.0..70.0).contains(&per), "{key}: {per}");
    }
    insta::with_settings!({filters => filters()}, {
        insta::assert_snapshot!("tp_nodes_header", human.lines().take(4).collect::<Vec<_>>().join("\n"));
        insta::assert_snapshot!("tp_nodes_verdict", block(human, "Verdict"));
        insta::assert_snapshot!("tp_nodes_changes", block(human, "Changes, most likely cause"));
        insta::assert_snapshot!("tp_nodes_drop_in", block(human, "/etc/systemd/system/vllm.service.d/debug.conf"));
    });
}

/// `probe audit --outliers` ranks as the diff does: the node with the drop-in is the group's
/// outlier, the drop-in's changes first, the resolved KV size under them, and no
/// identity among its differences.
#[test]
fn tp_nodes_outliers_rank_a_consequence_under_its_causes() {
    let env = env();
    let inventory = env.dir.path().join("tp.toml");
    std::fs::write(
        &inventory,
        "[groups.tp]\nhosts = [\"tp-a\", \"tp-a-again\", \"tp-b\"]\n\n\
         [hosts.tp-a]\naddress = \"fx-tp-node-a\"\n\n\
         [hosts.tp-a-again]\naddress = \"fx-tp-node-a\"\n\n\
         [hosts.tp-b]\naddress = \"fx-tp-node-b\"\n",
    )
    .unwrap();
    let args = [
        "audit",
        "--inventory",
        inventory.to_str().unwrap(),
        "--outliers",
        "--jsonl",
        "--fail-on",
        "never",
    ];
    let out = probe(env, &args);
    assert_eq!(out.status.code(), Some(0), "{}", util::text(&out.stderr));
    let stdout = util::text(&out.stdout);
    let group = stdout
        .lines()
        .filter_map(|line| serde_json::from_str::<probe_model::OutliersLine>(line).ok())
        .map(|line| line.group)
        .find(|group| group.group == "tp")
        .unwrap_or_else(|| panic!("no outliers line for tp: {stdout}"));
    let b = group
        .outliers
        .iter()
        .find(|h| h.host == "tp-b")
        .unwrap_or_else(|| panic!("tp-b an outlier: {group:#?}"));
    let keys: Vec<&str> = b.changes.iter().map(|c| c.key.as_str()).collect();
    for change in &b.changes {
        assert!(!probe_model::identity::is_identity(&change.key), "{keys:?}");
    }
    let at = |key: &str| keys.iter().position(|k| *k == key);
    let cause = at("disable-custom-all-reduce").unwrap_or_else(|| panic!("{keys:?}"));
    assert!(at("env:NCCL_P2P_DISABLE").is_some(), "{keys:?}");
    let kv = at("limit:kv_cache_tokens").unwrap_or_else(|| panic!("{keys:?}"));
    assert!(kv > cause, "a consequence under its cause: {keys:?}");
    assert!(!b.changes[kv].consequence_of.is_empty(), "{keys:?}");
    for pair in b.changes.windows(2) {
        assert!(pair[0].impact <= pair[1].impact, "ranked: {keys:?}");
    }
}

/// The rollback plan of the node with the drop-in (issue 33 items 5 and 6): `--rollback`
/// names the drop-in (not the unit file) and what to check after the restart; `--format sh`
/// writes it as a script that does nothing unreviewed; applied with `ROOT=` to a copy of
/// tp-node-b's files (with `systemctl` and `curl` stand-ins that log), it leaves the unit's
/// files exactly as tp-node-a's: the unit file untouched, no drop-in left that systemd reads.
#[test]
fn tp_nodes_rollback_plan_applied_to_a_copy_matches_the_good_node() {
    let env = env();
    let args = ["diff", "fx-tp-node-a@latest", "fx-tp-node-b@latest"];
    let checklist = probe(env, &[&args[..], &["--rollback"]].concat());
    assert_eq!(
        checklist.status.code(),
        Some(1),
        "{}",
        util::text(&checklist.stderr)
    );
    let checklist = util::text(&checklist.stdout);
    let sh = probe(env, &[&args[..], &["--format", "sh"]].concat());
    assert_eq!(sh.status.code(), Some(1), "{}", util::text(&sh.stderr));
    let script = util::text(&sh.stdout);
    let (_, diff, _) = diff();
    let plan = &diff.rollback_plan;
    insta::with_settings!({filters => filters()}, {
        insta::assert_snapshot!("tp_nodes_rollback", checklist);
        insta::assert_snapshot!("tp_nodes_rollback_sh", script);
    });
    assert_eq!(
        plan.launcher,
        probe_model::Launcher::Systemd {
            unit: "vllm.service".into()
        }
    );
    for want in [
        "remove: the drop-in /etc/systemd/system/vllm.service.d/debug.conf",
        "run: systemctl daemon-reload",
        "restart: systemctl restart vllm.service",
        "verify: systemctl show -p ExecStart -p Environment vllm.service",
        "verify where probe runs: gen_throughput back near 2082.4 tok/s",
        "verify where probe runs: probe diff fixture-tp-node-a fixture-tp-node-b",
    ] {
        assert!(checklist.contains(want), "{want}: {checklist}");
    }
    assert!(
        !checklist.contains("cd /home/vllm"),
        "no hand-run launch beside systemd: {checklist}"
    );
    // A script is only the diff's rollback plan.
    let refused = probe(env, &["timeline", "fx-tp-node-a@latest", "--format", "sh"]);
    assert_eq!(refused.status.code(), Some(2));
    assert!(
        util::text(&refused.stderr).contains("--format sh is for probe diff"),
        "{}",
        util::text(&refused.stderr)
    );
    // In the config file, `sh` is a default: the diff writes its script, other commands text.
    let config_dir = tempfile::tempdir().unwrap();
    let config = config_dir.path().join("config.toml");
    std::fs::write(&config, "format = \"sh\"\n").unwrap();
    let config = config.to_str().unwrap();
    let timeline = probe(
        env,
        &["--config", config, "timeline", "fx-tp-node-a@latest"],
    );
    assert_eq!(
        timeline.status.code(),
        Some(0),
        "{}",
        util::text(&timeline.stderr)
    );
    assert!(
        !util::text(&timeline.stdout).starts_with("#!"),
        "text, not a script"
    );
    let by_default = probe(
        env,
        &[
            "--config",
            config,
            "diff",
            "fx-tp-node-a@latest",
            "fx-tp-node-b@latest",
        ],
    );
    assert!(
        util::text(&by_default.stdout).starts_with("#!"),
        "{}",
        util::text(&by_default.stderr)
    );

    // Applied to a copy of node b's files.
    let fixtures =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../probe-testkit/fixtures");
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    std::fs::create_dir_all(&root).unwrap();
    let copy = std::process::Command::new("cp")
        .arg("-R")
        .arg(fixtures.join("tp-node-b/root/etc"))
        .arg(root.join("etc"))
        .status();
    assert!(copy.is_ok_and(|s| s.success()), "copied");
    let bin = dir.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let log = dir.path().join("launcher.log");
    for stand_in in ["systemctl", "curl"] {
        let path = bin.join(stand_in);
        std::fs::write(
            &path,
            format!("#!/bin/sh\necho \"{stand_in} $*\" >> '{}'\n", log.display()),
        )
        .unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let file = dir.path().join("rollback.sh");
    std::fs::write(&file, &script).unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let apply = |reviewed: bool| {
        let mut cmd = std::process::Command::new("sh");
        cmd.arg(&file).env("ROOT", &root).env("PATH", &path);
        if reviewed {
            cmd.env("REVIEWED", "yes");
        } else {
            cmd.env_remove("REVIEWED");
        }
        cmd.output().unwrap()
    };
    let unit_dir = "etc/systemd/system";
    let drop_ins = |base: &std::path::Path| -> Vec<String> {
        std::fs::read_dir(base.join(unit_dir).join("vllm.service.d"))
            .map(|d| {
                let mut names: Vec<String> = d
                    .filter_map(|e| e.ok())
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .filter(|n| n.ends_with(".conf"))
                    .collect();
                names.sort();
                names
            })
            .unwrap_or_default()
    };
    let out = apply(false);
    assert_eq!(out.status.code(), Some(2), "nothing done unreviewed");
    assert_eq!(drop_ins(&root), ["debug.conf"]);
    assert!(!log.exists());
    let out = apply(true);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}{}",
        util::text(&out.stdout),
        util::text(&out.stderr)
    );
    let good = fixtures.join("tp-node-a/root");
    for file in [
        format!("{unit_dir}/vllm.service"),
        String::from("etc/default/vllm"),
    ] {
        assert_eq!(
            std::fs::read_to_string(root.join(&file)).unwrap(),
            std::fs::read_to_string(good.join(&file)).unwrap(),
            "{file}"
        );
    }
    assert_eq!(
        drop_ins(&root),
        drop_ins(&good),
        "the drop-ins systemd reads"
    );
    assert_eq!(
        std::fs::read_to_string(&log).unwrap(),
        "systemctl daemon-reload\nsystemctl restart vllm.service\nsystemctl show -p ExecStart -p Environment vllm.service\n"
    );
    // The drop-in was moved aside, not lost.
    let kept: Vec<_> = std::fs::read_dir(root.join(unit_dir).join("vllm.service.d"))
        .unwrap()
        .filter_map(|e| e.ok())
        .collect();
    assert_eq!(kept.len(), 1);
    assert_eq!(
        std::fs::read_to_string(kept[0].path()).unwrap(),
        std::fs::read_to_string(
            fixtures
                .join("tp-node-b/root")
                .join(unit_dir)
                .join("vllm.service.d/debug.conf")
        )
        .unwrap()
    );
}

/// tp-node-c differs from tp-node-a by one pure-Python package of the serving venv, upgraded by
/// hand: it is the one cause, it says which history line installed it, and the rollback pins it
/// back in that venv.
#[test]
fn tp_nodes_a_pure_python_package_is_the_only_cause() {
    let env = env();
    let args = ["diff", "fx-tp-node-a@latest", "fx-tp-node-c@latest"];
    let json = probe(env, &[&args[..], &["--format", "json"]].concat());
    let diff: SnapshotDiff = serde_json::from_slice(&json.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", util::text(&json.stdout)));
    let causes: Vec<&probe_model::Change> = diff
        .changes
        .iter()
        .filter(|c| c.consequence_of.is_empty())
        .collect();
    let keys: Vec<&str> = causes.iter().map(|c| c.key.as_str()).collect();
    assert_eq!(keys, ["package:transformers"], "{:#?}", diff.changes);
    let package = causes[0];
    assert_eq!(package.before, Some(serde_json::json!("4.57.1")));
    assert_eq!(package.after, Some(serde_json::json!("4.57.3")));
    assert_eq!(
        package.note.as_deref(),
        Some(
            "upgraded in /opt/venvs/vllm/bin/python3, by pip, root's /root/.bash_history entry \
             5: /opt/venvs/vllm/bin/pip install -U transformers==4.57.3"
        )
    );
    let human = util::text(&probe(env, &args).stdout);
    let shown = format!(
        "{}\n\n{}",
        human.lines().take(4).collect::<Vec<_>>().join("\n"),
        block(&human, "Changes, most likely cause")
    );
    insta::with_settings!({filters => filters()}, {
        insta::assert_snapshot!("tp_nodes_package_diff", shown);
    });
    let rollback = probe(env, &[&args[..], &["--rollback"]].concat());
    let text = util::text(&rollback.stdout);
    assert!(text.contains("transformers==4.57.1"), "{text}");
    insta::with_settings!({filters => filters()}, {
        insta::assert_snapshot!("tp_nodes_package_rollback", text);
    });
}
