//! End-to-end (issue 33): a pair of vLLM nodes serving from containers Docker Compose made
//! (`compose-node-a`, `compose-node-b`), node b's compose file edited while debugging an NCCL
//! hang (`NCCL_P2P_DISABLE: "1"` in the service's environment, `--disable-custom-all-reduce`
//! in its command). `probe diff` shows each node's identity in its header, the two settings as
//! causes and the KV cache size under them; `--rollback` edits those two lines of
//! /srv/llm/compose.yaml and runs `docker compose ... up -d vllm`; run on a private instance of
//! node b (the docker stand-in recreates the container from the edited file), it leaves nothing
//! serving-relevant different.

use std::process::Output;
use std::sync::OnceLock;

use probe_model::SnapshotDiff;

use crate::apply_plan::{LOGIN_ENV, Loop, count_in, left};
use crate::util;

type Env = util::Stored;

fn env() -> &'static Env {
    static ENV: OnceLock<Env> = OnceLock::new();
    ENV.get_or_init(|| util::Stored::collect(&["compose-node-a", "compose-node-b"]))
}

fn probe(env: &Env, args: &[&str]) -> Output {
    env.probe(args)
}

const ARGS: [&str; 3] = [
    "diff",
    "fx-compose-node-a@latest",
    "fx-compose-node-b@latest",
];

/// What differs from one collection to the next: times, snapshot ids, ports, PIDs.
fn filters() -> Vec<(&'static str, &'static str)> {
    vec![
        (r"20[0-9]{2}-[0-9]{2}-[0-9]{2} [0-9:]{5,8} UTC", "[time]"),
        (
            r"fixture-compose-node-([ab])-[0-9]+-[0-9a-f]{8}",
            "fixture-compose-node-$1-[id]",
        ),
        (r"root@127\.0\.0\.(6[89]):[0-9]+", "root@127.0.0.$1:[port]"),
        (r"[0-9]+ volatile differences", "[n] volatile differences"),
        (r"pid:[0-9]+", "pid:[pid]"),
        (r"PID [0-9]+", "PID [pid]"),
        (r"[0-9]+\.[0-9] tok/s", "[n] tok/s"),
        (
            r"[0-9]+\.[0-9]+ -> [0-9]+\.[0-9]+ tok/s",
            "[n] -> [n] tok/s",
        ),
    ]
}

fn diff() -> &'static (String, SnapshotDiff, i32) {
    static D: OnceLock<(String, SnapshotDiff, i32)> = OnceLock::new();
    D.get_or_init(|| {
        let env = env();
        let human = probe(env, &ARGS);
        let json_args = [&ARGS[..], &["--format", "json"]].concat();
        let json = probe(env, &json_args);
        util::assert_output_schema(&json_args, &json);
        let parsed: SnapshotDiff = serde_json::from_slice(&json.stdout)
            .unwrap_or_else(|e| panic!("{e}: {}", util::text(&json.stdout)));
        (
            util::text(&human.stdout),
            parsed,
            human.status.code().unwrap_or(-1),
        )
    })
}

#[test]
fn compose_nodes_the_edit_is_the_cause_the_kv_cache_its_consequence() {
    let (human, diff, code) = diff();
    assert_eq!(*code, 1, "the nodes differ: {human}");
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
    assert_eq!(kv.consequence_of, causes);
    for cause in causes {
        assert!(at(cause) < at("limit:kv_cache_tokens"), "{keys:?}");
        assert!(diff.changes[at(cause)].impact <= kv.impact, "never above");
    }
    for change in &diff.changes {
        assert!(
            !probe_model::identity::is_identity(&change.key),
            "identity among the changes: {}",
            change.key
        );
    }
    let header: String = human.lines().take(4).collect::<Vec<_>>().join("\n");
    for needle in [
        "host fixture-compose-node-a, machine-id ",
        "host fixture-compose-node-b, machine-id ",
        "4 x NVIDIA H100 80GB HBM3",
    ] {
        assert!(header.contains(needle), "{needle}: {header}");
    }
    insta::with_settings!({filters => filters()}, {
        insta::assert_snapshot!("compose_nodes_diff", human);
    });
}

/// The plan for a Compose service: the compose file's two lines back, `docker compose up -d`
/// for the one service, then the checks.
#[test]
fn compose_nodes_rollback_edits_the_compose_file_and_recreates_the_service() {
    let env = env();
    let (_, diff, _) = diff();
    let plan = &diff.rollback_plan;
    assert_eq!(
        plan.launcher,
        probe_model::Launcher::Compose {
            project: "llm".into(),
            service: "vllm".into(),
            files: vec!["/srv/llm/compose.yaml".into()],
        }
    );
    let edits: Vec<(&str, Option<&str>)> = plan
        .steps
        .iter()
        .filter_map(|s| match &s.action {
            probe_model::RollbackAction::EditLine { file, new, .. } => {
                Some((file.as_str(), new.as_deref()))
            }
            _ => None,
        })
        .collect();
    assert_eq!(
        edits,
        [
            (
                "/srv/llm/compose.yaml",
                Some("      --enable-prefix-caching")
            ),
            ("/srv/llm/compose.yaml", None),
        ],
        "{plan:#?}"
    );
    assert!(
        plan.steps.iter().any(|s| s.action
            == probe_model::RollbackAction::Restart {
                command: "docker compose -p llm -f /srv/llm/compose.yaml up -d vllm".into()
            }),
        "{plan:#?}"
    );
    let checklist = probe(env, &[&ARGS[..], &["--rollback"]].concat());
    assert_eq!(checklist.status.code(), Some(1));
    insta::with_settings!({filters => filters()}, {
        insta::assert_snapshot!("compose_nodes_rollback", util::text(&checklist.stdout));
    });
}

/// The loop: node b's plan run on (a private instance of) node b; the docker stand-in
/// recreates llm-vllm-1 from the edited compose file (a new container id, its process started
/// again), which logs node a's numbers, and `probe diff` against node a exits 0.
#[test]
fn compose_nodes_rollback_applied_on_the_host_leaves_no_difference() {
    let lp = Loop::start("compose-node-a", "compose-node-b");
    lp.collect();
    let (before, code) = lp.diff_json();
    assert_eq!(code, 1, "{:?}", left(&before));
    let out = lp.apply(LOGIN_ENV);
    let said = format!("{}{}", util::text(&out.stdout), util::text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{said}");
    assert!(said.contains("Container llm-vllm-1  Recreated"), "{said}");
    let compose = std::fs::read_to_string(lp.file("/srv/llm/compose.yaml")).unwrap();
    assert!(
        !compose.contains("NCCL_P2P_DISABLE") && !compose.contains("--disable-custom-all-reduce"),
        "{compose}"
    );
    // The recreated container's json-file log: node a's KV size and ten stats lines.
    let containers = lp.file("/var/lib/docker/containers");
    util::wait_until(
        "the recreated container's log",
        std::time::Duration::from_secs(60),
        || {
            std::fs::read_dir(&containers)
                .into_iter()
                .flatten()
                .flatten()
                .any(|dir| {
                    let id = dir.file_name().to_string_lossy().into_owned();
                    let log = dir.path().join(format!("{id}-json.log"));
                    count_in(&log, "GPU KV cache size: 1,154,496 tokens") == 1
                        && count_in(&log, "Avg prompt throughput") >= 10
                })
        },
    );
    lp.collect();
    let (after, code) = lp.diff_json();
    assert_eq!(
        code,
        0,
        "after the rollback: {:#?}\n{}",
        left(&after),
        util::text(&lp.diff(&[]).stdout)
    );
    assert!(after.rollback_plan.is_empty(), "{:#?}", after.rollback_plan);
}
