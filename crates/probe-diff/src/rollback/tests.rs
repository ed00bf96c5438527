//! The plan per launcher, from snapshots built as the collector writes them: a systemd unit
//! whose drop-in holds more than the change (its lines edited, not a revert) with a redacted
//! variable of its `EnvironmentFile=`; one whose drop-in holds only the change (removed); a
//! Compose service; a process started by hand with a redacted flag value.

use std::collections::BTreeMap;

use probe_model::{
    Change, ComposeOrigin, ContainerInfo, DefiningFileRole, EnvironmentFile, FileText,
    LaunchConfig, LaunchFile, LaunchFileKind, LaunchOption, LaunchSource, Launcher, RollbackAction,
    RollbackPlan, Snapshot, SnapshotDiff, SourceKind, SystemdUnit,
};
use serde_json::{Value, json};

use super::plan;

const UNIT: &str = "/etc/systemd/system/vllm.service";
const DROP_IN: &str = "/etc/systemd/system/vllm.service.d/override.conf";
const EXEC: &str = "ExecStart=\nExecStart=/v/bin/vllm serve /m \\\n    --tensor-parallel-size 4 \\\n    --disable-custom-all-reduce\n";

fn file(path: &str, content: &str) -> FileText {
    FileText {
        path: path.into(),
        content: content.into(),
        ..FileText::default()
    }
}

fn unit(drop_in: &str) -> SystemdUnit {
    let mut unit = SystemdUnit {
        name: "vllm.service".into(),
        fragment: file(
            UNIT,
            "[Service]\nEnvironmentFile=/etc/default/vllm\nExecStart=/v/bin/vllm serve /m --tensor-parallel-size 4\n",
        ),
        drop_ins: vec![file(DROP_IN, drop_in)],
        environment_files: vec![EnvironmentFile {
            path: "/etc/default/vllm".into(),
            vars: [("HF_TOKEN".to_string(), "<redacted:11112222>".to_string())].into(),
            ..EnvironmentFile::default()
        }],
        ..SystemdUnit::default()
    };
    let parsed = probe_launch::unit_files(&unit);
    assert_eq!(parsed.len(), 2);
    unit.exec_start = vec![String::from(
        "/v/bin/vllm serve /m --tensor-parallel-size 4 --disable-custom-all-reduce",
    )];
    unit
}

fn launch_of(unit: &SystemdUnit) -> LaunchConfig {
    let hints = probe_launch::ParseHints {
        source: LaunchSource {
            kind: SourceKind::Unit,
            location: format!("unit:{}", unit.name),
            ..LaunchSource::default()
        },
        ..probe_launch::ParseHints::default()
    };
    probe_launch::from_unit(unit, &hints)
        .into_iter()
        .next()
        .expect("a launch")
}

fn change(key: &str, before: Option<Value>, after: Option<Value>) -> Change {
    Change {
        key: key.into(),
        before,
        after,
        ..Change::default()
    }
}

fn diff() -> SnapshotDiff {
    let mut diff = SnapshotDiff::default();
    diff.before.host = "node-a".into();
    diff.after.host = "node-b".into();
    diff
}

fn kinds(plan: &RollbackPlan) -> Vec<&'static str> {
    plan.steps
        .iter()
        .map(|s| match s.action {
            RollbackAction::EditLine { .. } => "edit",
            RollbackAction::RemoveFile { .. } => "remove",
            RollbackAction::Stop { .. } => "stop",
            RollbackAction::Run { .. } => "run",
            RollbackAction::Restart { .. } => "restart",
            RollbackAction::Verify { .. } => "verify",
            RollbackAction::Manual { .. } => "manual",
        })
        .collect()
}

/// No redaction marker anywhere in the plan: placeholders only.
fn no_marker(plan: &RollbackPlan) {
    let json = serde_json::to_string(plan).unwrap();
    assert!(!json.contains("<redacted:"), "{json}");
}

fn systemd_plan(drop_in: &str, changes: &[Change]) -> RollbackPlan {
    let after_unit = unit(drop_in);
    let before_unit = probe_launch::without_drop_ins(&after_unit).unwrap();
    let after = Snapshot {
        units: vec![after_unit.clone()],
        ..Snapshot::default()
    };
    let before = Snapshot {
        units: vec![before_unit.clone()],
        ..Snapshot::default()
    };
    let (b, a) = (launch_of(&before_unit), launch_of(&after_unit));
    assert!(
        a.options.contains_key("disable-custom-all-reduce"),
        "{a:#?}"
    );
    plan((&before, &after), Some((&b, &a)), changes, &diff())
}

fn tp_changes() -> Vec<Change> {
    vec![
        change("disable-custom-all-reduce", None, Some(json!(true))),
        change("env:NCCL_P2P_DISABLE", None, Some(json!("1"))),
        change(
            "env:HF_TOKEN",
            Some(json!("<redacted:aaaabbbb>")),
            Some(json!("<redacted:11112222>")),
        ),
    ]
}

#[test]
fn systemd_the_lines_of_the_drop_in_that_holds_more_than_the_change() {
    let drop_in = format!(
        "[Service]\nTimeoutStartSec=1800\nEnvironment=NCCL_P2P_DISABLE=1 NCCL_DEBUG=INFO\n{EXEC}"
    );
    let plan = systemd_plan(&drop_in, &tp_changes());
    assert_eq!(
        plan.launcher,
        Launcher::Systemd {
            unit: "vllm.service".into()
        }
    );
    assert_eq!(
        kinds(&plan),
        ["edit", "edit", "edit", "run", "restart", "verify", "verify"],
        "{plan:#?}"
    );
    // (file, role, old, new, key_only), in order.
    let want = [
        (
            DROP_IN,
            DefiningFileRole::DropIn,
            Some(
                "ExecStart=/v/bin/vllm serve /m \\\n    --tensor-parallel-size 4 \\\n    --disable-custom-all-reduce",
            ),
            Some("ExecStart=/v/bin/vllm serve /m --tensor-parallel-size 4"),
            false,
        ),
        (
            DROP_IN,
            DefiningFileRole::DropIn,
            Some("Environment=NCCL_P2P_DISABLE=1 NCCL_DEBUG=INFO"),
            Some("Environment=NCCL_DEBUG=INFO"),
            false,
        ),
        (
            "/etc/default/vllm",
            DefiningFileRole::EnvironmentFile,
            Some("HF_TOKEN="),
            Some("HF_TOKEN=<REDACTED:HF_TOKEN>"),
            true,
        ),
    ];
    for (step, (w_file, w_role, w_old, w_new, w_key)) in plan.steps.iter().zip(want) {
        let RollbackAction::EditLine {
            file,
            role,
            old,
            new,
            key_only,
            ..
        } = &step.action
        else {
            panic!("{step:?}");
        };
        assert_eq!(
            (file.as_str(), *role, new.as_deref(), *key_only),
            (w_file, w_role, w_new, w_key),
            "{step:#?}"
        );
        let old = old.as_deref().unwrap();
        if w_key {
            assert!(old.starts_with(w_old.unwrap()), "{old}");
        } else {
            assert_eq!(Some(old), w_old);
        }
    }
    let first = &plan.steps[0].why;
    assert!(
        first.contains("not `systemctl revert vllm.service`")
            && first.contains("TimeoutStartSec=1800"),
        "what a revert would also drop: {first}"
    );
    assert_eq!(plan.placeholders.len(), 1, "{:#?}", plan.placeholders);
    assert_eq!(plan.placeholders[0].text, "<REDACTED:HF_TOKEN>");
    assert!(plan.placeholders[0].lives.contains("node-a"));
    no_marker(&plan);
    let RollbackAction::Verify {
        command, expect, ..
    } = &plan.steps[5].action
    else {
        panic!()
    };
    assert_eq!(
        command.as_deref(),
        Some("systemctl show -p ExecStart -p Environment vllm.service")
    );
    assert!(
        expect.starts_with("ExecStart= runs /v/bin/vllm serve /m --tensor-parallel-size 4;"),
        "{expect}"
    );
    let RollbackAction::Verify { command, .. } = &plan.steps[6].action else {
        panic!()
    };
    assert_eq!(command.as_deref(), Some("probe diff node-a node-b"));
}

#[test]
fn systemd_a_drop_in_holding_only_the_change_is_removed() {
    let drop_in = format!("# TEMP\n[Service]\nEnvironment=NCCL_P2P_DISABLE=1\n{EXEC}");
    let changes = &tp_changes()[..2];
    let plan = systemd_plan(&drop_in, changes);
    assert_eq!(
        kinds(&plan),
        ["remove", "run", "restart", "verify", "verify"],
        "{plan:#?}"
    );
    assert_eq!(
        plan.steps[0].action,
        RollbackAction::RemoveFile {
            file: DROP_IN.into(),
            role: DefiningFileRole::DropIn
        }
    );
    assert!(plan.steps[0].why.contains("systemctl revert vllm.service"));
    assert!(plan.placeholders.is_empty());
    // A variable set before and by nothing now goes into the drop-in.
    let mut changes = changes.to_vec();
    changes.push(change(
        "env:VLLM_ATTENTION_BACKEND",
        Some(json!("FLASHINFER")),
        None,
    ));
    let plan = systemd_plan(&drop_in, &changes);
    let added = plan
        .steps
        .iter()
        .find_map(|s| match &s.action {
            RollbackAction::EditLine {
                old: None,
                new,
                file,
                ..
            } => Some((file.clone(), new.clone())),
            _ => None,
        })
        .expect("an added line");
    assert_eq!(
        added,
        (
            DROP_IN.to_string(),
            Some("Environment=VLLM_ATTENTION_BACKEND=FLASHINFER".into())
        )
    );
}

#[test]
fn compose_the_service_lines_and_up() {
    let compose = "services:\n  vllm:\n    image: vllm/vllm-openai:v0.11.0\n    command:\n      - --model\n      - /models/m\n      - --disable-custom-all-reduce\n    environment:\n      NCCL_P2P_DISABLE: \"1\"\n      HF_TOKEN: <redacted:11112222>\n";
    let after = Snapshot {
        containers: vec![ContainerInfo {
            id: "c0ffee".into(),
            name: Some("llm-vllm-1".into()),
            compose: Some(ComposeOrigin {
                project: "llm".into(),
                service: "vllm".into(),
                config_files: vec!["/srv/llm/compose.yaml".into()],
                ..ComposeOrigin::default()
            }),
            ..ContainerInfo::default()
        }],
        launch_files: vec![LaunchFile {
            kind: LaunchFileKind::Compose,
            path: "/srv/llm/compose.yaml".into(),
            text: compose.into(),
            ..LaunchFile::default()
        }],
        ..Snapshot::default()
    };
    let launch = |options: BTreeMap<String, LaunchOption>| LaunchConfig {
        options,
        source: LaunchSource {
            kind: SourceKind::Container,
            location: "container:llm-vllm-1".into(),
            ..LaunchSource::default()
        },
        ..LaunchConfig::default()
    };
    let a = launch(
        [(
            "disable-custom-all-reduce".to_string(),
            LaunchOption {
                value: json!(true),
                written: "--disable-custom-all-reduce".into(),
            },
        )]
        .into(),
    );
    let b = launch(BTreeMap::new());
    let digest =
        "vllm/vllm-openai@sha256:4f1c6e0b0d2a9b8c7d6e5f4a3b2c1d0e9f8a7b6c5d4e3f2a1b0c9d8e7f6a5b4c";
    let before = Snapshot {
        containers: vec![ContainerInfo {
            name: Some("llm-vllm-1".into()),
            image: "vllm/vllm-openai:v0.10.2".into(),
            repo_digests: vec![digest.into()],
            ..ContainerInfo::default()
        }],
        ..Snapshot::default()
    };
    let mut changes = tp_changes()[..2].to_vec();
    changes.push(change(
        "container:llm-vllm-1.image",
        Some(json!("vllm/vllm-openai:v0.10.2")),
        Some(json!("vllm/vllm-openai:v0.11.0")),
    ));
    let plan = plan((&before, &after), Some((&b, &a)), &changes, &diff());
    assert_eq!(
        kinds(&plan),
        ["edit", "edit", "edit", "restart", "verify"],
        "{plan:#?}"
    );
    let edits: Vec<(Option<&str>, Option<&str>)> = plan
        .steps
        .iter()
        .filter_map(|s| match &s.action {
            RollbackAction::EditLine { old, new, role, .. } => {
                assert_eq!(*role, DefiningFileRole::Compose);
                Some((old.as_deref(), new.as_deref()))
            }
            _ => None,
        })
        .collect();
    assert_eq!(
        edits,
        [
            (Some("      - --disable-custom-all-reduce"), None),
            (Some("      NCCL_P2P_DISABLE: \"1\""), None),
            (
                Some("    image: vllm/vllm-openai:v0.11.0"),
                Some(format!("    image: {digest}").as_str())
            ),
        ]
    );
    assert!(
        plan.steps[2].why.contains("by digest"),
        "{:?}",
        plan.steps[2]
    );
    assert_eq!(
        plan.steps[3].action,
        RollbackAction::Restart {
            command: "docker compose -p llm -f /srv/llm/compose.yaml up -d vllm".into()
        }
    );
}

#[test]
fn by_hand_stop_the_running_one_then_the_earlier_command() {
    let launch = |kind, location: &str, extra: &[&str]| {
        let mut argv: Vec<String> = [
            "python3",
            "-m",
            "sglang.launch_server",
            "--model-path",
            "/m",
            "--api-key",
            "<redacted:0badf00d>",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        argv.extend(extra.iter().map(|s| s.to_string()));
        let mut l =
            probe_launch::reconstruct(&argv.join(" "), &probe_launch::ParseHints::default())
                .into_iter()
                .next()
                .expect("a launch");
        l.source = LaunchSource {
            kind,
            location: location.into(),
            ..LaunchSource::default()
        };
        l.working_directory = Some("/srv/sglang".into());
        l
    };
    let b = launch(SourceKind::History, "/root/.bash_history#12", &[]);
    let a = launch(
        SourceKind::Process,
        "pid:4242",
        &["--max-running-requests", "1"],
    );
    let changes = [change("max-running-requests", None, Some(json!(1)))];
    let plan = plan(
        (&Snapshot::default(), &Snapshot::default()),
        Some((&b, &a)),
        &changes,
        &diff(),
    );
    assert_eq!(plan.launcher, Launcher::Process { pid: Some(4242) });
    assert_eq!(kinds(&plan), ["stop", "restart", "verify"], "{plan:#?}");
    assert_eq!(
        plan.steps[0].action,
        RollbackAction::Stop {
            command: "kill 4242 && while kill -0 4242 2>/dev/null; do sleep 1; done".into()
        }
    );
    let RollbackAction::Restart { command } = &plan.steps[1].action else {
        panic!()
    };
    assert!(
        command.starts_with("nohup sh -c 'cd /srv/sglang && "),
        "{command}"
    );
    assert!(
        command.contains("--api-key '\\''<REDACTED:api-key>'\\''"),
        "{command}"
    );
    assert!(!command.contains("--max-running-requests"), "{command}");
    assert!(plan.steps[1].why.contains("nothing restarts it"));
    no_marker(&plan);
    // The checklist says it as the launch to run.
    let lines = super::lines(&plan, &[String::from("drop --max-running-requests 1")]);
    assert_eq!(lines[0], "flag: drop --max-running-requests 1");
    assert!(lines[2].starts_with("launch: nohup sh -c"), "{lines:#?}");
    assert!(
        lines
            .last()
            .unwrap()
            .starts_with("secret: <REDACTED:api-key>"),
        "{lines:#?}"
    );
}

/// Ollama reads its settings from its environment: a differing `OLLAMA_*` setting is its
/// `Environment=` line in the drop-in (quoted as `systemctl edit` users write it), changed
/// there; the drop-in's other lines stay, so no revert.
#[test]
fn systemd_an_engine_setting_read_from_the_environment() {
    let drop_in = "[Service]\nEnvironment=\"OLLAMA_HOST=127.0.0.1:11434\"\nEnvironment=\"OLLAMA_CONTEXT_LENGTH=32768\"\n";
    let after_unit = SystemdUnit {
        name: "ollama.service".into(),
        fragment: file(
            "/etc/systemd/system/ollama.service",
            "[Service]\nExecStart=/usr/local/bin/ollama serve\n",
        ),
        drop_ins: vec![file(
            "/etc/systemd/system/ollama.service.d/override.conf",
            drop_in,
        )],
        exec_start: vec![String::from("/usr/local/bin/ollama serve")],
        ..SystemdUnit::default()
    };
    let launch = |written: &str| LaunchConfig {
        engine: probe_model::Engine::Ollama,
        argv: vec!["/usr/local/bin/ollama".into(), "serve".into()],
        options: [(
            "OLLAMA_CONTEXT_LENGTH".to_string(),
            LaunchOption {
                value: json!(written.rsplit('=').next().unwrap()),
                written: written.into(),
            },
        )]
        .into(),
        source: LaunchSource {
            kind: SourceKind::Unit,
            location: "unit:ollama.service".into(),
            ..LaunchSource::default()
        },
        ..LaunchConfig::default()
    };
    let (b, a) = (
        launch("OLLAMA_CONTEXT_LENGTH=8192"),
        launch("OLLAMA_CONTEXT_LENGTH=32768"),
    );
    let after = Snapshot {
        units: vec![after_unit],
        ..Snapshot::default()
    };
    let changes = [change(
        "OLLAMA_CONTEXT_LENGTH",
        Some(json!("8192")),
        Some(json!("32768")),
    )];
    let plan = plan(
        (&Snapshot::default(), &after),
        Some((&b, &a)),
        &changes,
        &diff(),
    );
    assert_eq!(
        kinds(&plan),
        ["edit", "run", "restart", "verify", "verify"],
        "{plan:#?}"
    );
    let RollbackAction::EditLine { old, new, file, .. } = &plan.steps[0].action else {
        panic!()
    };
    assert_eq!(file, "/etc/systemd/system/ollama.service.d/override.conf");
    assert_eq!(
        old.as_deref(),
        Some("Environment=\"OLLAMA_CONTEXT_LENGTH=32768\"")
    );
    assert_eq!(
        new.as_deref(),
        Some("Environment=OLLAMA_CONTEXT_LENGTH=8192")
    );
    let RollbackAction::Verify { expect, .. } = &plan.steps[3].action else {
        panic!()
    };
    assert_eq!(
        expect,
        "Environment= or an EnvironmentFile= sets OLLAMA_CONTEXT_LENGTH=8192"
    );
    assert!(
        plan.steps[0].why.contains("OLLAMA_HOST"),
        "what a revert would also drop: {}",
        plan.steps[0].why
    );
}

/// A Kubernetes pod: the workload the pod's name points to, undone through the API server
/// (by hand: the manifest was not read), per kind of owner.
#[test]
fn kubernetes_the_owner_by_kind() {
    use probe_model::{PodOrigin, PodOwner, PodOwnerKind};
    let cases = [
        (
            Some(PodOwnerKind::Deployment),
            "kubectl -n serving rollout history deployment/vllm, then kubectl -n serving rollout undo deployment/vllm",
        ),
        (
            Some(PodOwnerKind::StatefulSet),
            "kubectl -n serving rollout history statefulset/vllm",
        ),
        (
            Some(PodOwnerKind::LeaderWorkerSet),
            "kubectl -n serving edit leaderworkerset/vllm",
        ),
        (
            Some(PodOwnerKind::Static),
            "edit the manifest of static pod vllm-0 in the kubelet's staticPodPath",
        ),
        (
            Some(PodOwnerKind::Generated),
            "find the workload that owns pod vllm-0 -n serving",
        ),
        (None, "find the workload that owns pod vllm-0"),
    ];
    for (kind, want) in cases {
        let after = Snapshot {
            containers: vec![ContainerInfo {
                name: Some("k8s_vllm_vllm-0".into()),
                pod: Some(PodOrigin {
                    namespace: Some("serving".into()),
                    pod: "vllm-0".into(),
                    owner: kind.map(|kind| PodOwner {
                        kind,
                        name: "vllm".into(),
                        detail: None,
                    }),
                    ..PodOrigin::default()
                }),
                ..ContainerInfo::default()
            }],
            ..Snapshot::default()
        };
        let launch = |written: Option<&str>| LaunchConfig {
            options: written
                .map(|w| {
                    [(
                        "max-num-seqs".to_string(),
                        LaunchOption {
                            value: json!(w.rsplit(' ').next().unwrap()),
                            written: w.into(),
                        },
                    )]
                    .into()
                })
                .unwrap_or_default(),
            source: LaunchSource {
                kind: SourceKind::Container,
                location: "container:k8s_vllm_vllm-0".into(),
                ..LaunchSource::default()
            },
            ..LaunchConfig::default()
        };
        let (b, a) = (
            launch(Some("--max-num-seqs 256")),
            launch(Some("--max-num-seqs 64")),
        );
        let changes = [change("max-num-seqs", Some(json!(256)), Some(json!(64)))];
        let plan = plan(
            (&Snapshot::default(), &after),
            Some((&b, &a)),
            &changes,
            &diff(),
        );
        assert!(
            matches!(plan.launcher, Launcher::Kubernetes { .. }),
            "{plan:#?}"
        );
        assert_eq!(kinds(&plan), ["manual", "manual", "verify"], "{kind:?}");
        let RollbackAction::Manual { what } = &plan.steps[0].action else {
            panic!()
        };
        assert!(what.starts_with(want), "{kind:?}: {what}");
        let RollbackAction::Manual { what } = &plan.steps[1].action else {
            panic!()
        };
        assert!(
            what.contains("--max-num-seqs 64 -> --max-num-seqs 256"),
            "{what}"
        );
    }
}

/// A word taken out of a compose line: the gap closes, the indentation stays (a folded block's
/// line indented less than its first ends the block); a list item left empty goes.
#[test]
fn compose_edit_keeps_the_indentation() {
    let cases = [
        (
            "      --enable-prefix-caching --disable-custom-all-reduce",
            "--disable-custom-all-reduce",
            None,
            Some("      --enable-prefix-caching"),
        ),
        (
            "      --tp 4 --disable-custom-all-reduce --port 8000",
            "--disable-custom-all-reduce",
            None,
            Some("      --tp 4 --port 8000"),
        ),
        (
            "      --max-num-seqs 64",
            "--max-num-seqs 64",
            Some("--max-num-seqs 32"),
            Some("      --max-num-seqs 32"),
        ),
        (
            "      - --disable-custom-all-reduce",
            "--disable-custom-all-reduce",
            None,
            None,
        ),
    ];
    for (line, remove, insert, want) in cases {
        assert_eq!(
            super::launchers::compose_edit(line, remove, insert).as_deref(),
            want,
            "{line}"
        );
    }
}
