//! End-to-end (issue 33): a pair of vLLM nodes whose servers were started by hand with nohup
//! (`hand-node-a`, `hand-node-b`), node b relaunched with `--gpu-memory-utilization 0.80`
//! instead of 0.90. `probe diff` shows the identity of each in its header, the flag as the
//! cause and the smaller KV cache under it as its consequence; `--rollback` stops the running
//! server (nothing else does) and starts node a's launch in the background; run on a private
//! instance of node b, that plan leaves nothing serving-relevant different.

use std::process::Output;
use std::sync::OnceLock;

use probe_model::SnapshotDiff;

use crate::apply_plan::{LOGIN_ENV, Loop, left};
use crate::util;

type Env = util::Stored;

fn env() -> &'static Env {
    static ENV: OnceLock<Env> = OnceLock::new();
    ENV.get_or_init(|| util::Stored::collect(&["hand-node-a", "hand-node-b"]))
}

fn probe(env: &Env, args: &[&str]) -> Output {
    env.probe(args)
}

const ARGS: [&str; 3] = ["diff", "fx-hand-node-a@latest", "fx-hand-node-b@latest"];

/// What differs from one collection to the next: times, snapshot ids, ports, PIDs.
fn filters() -> Vec<(&'static str, &'static str)> {
    vec![
        (r"20[0-9]{2}-[0-9]{2}-[0-9]{2} [0-9:]{5,8} UTC", "[time]"),
        (
            r"fixture-hand-node-([ab])-[0-9]+-[0-9a-f]{8}",
            "fixture-hand-node-$1-[id]",
        ),
        (r"root@127\.0\.0\.(6[67]):[0-9]+", "root@127.0.0.$1:[port]"),
        (r"[0-9]+ volatile differences", "[n] volatile differences"),
        (
            r"kill [0-9]+ && while kill -0 [0-9]+",
            "kill [pid] && while kill -0 [pid]",
        ),
        (r"PID [0-9]+", "PID [pid]"),
        (r"pid:[0-9]+", "pid:[pid]"),
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
fn hand_nodes_the_flag_is_the_cause_the_kv_cache_its_consequence() {
    let (human, diff, code) = diff();
    assert_eq!(*code, 1, "the nodes differ: {human}");
    let keys: Vec<&str> = diff.changes.iter().map(|c| c.key.as_str()).collect();
    let at = |key: &str| {
        keys.iter()
            .position(|k| *k == key)
            .unwrap_or_else(|| panic!("{key} in {keys:?}"))
    };
    let flag = &diff.changes[at("gpu-memory-utilization")];
    assert_eq!(flag.before, Some(serde_json::json!(0.9)), "{flag:?}");
    assert_eq!(flag.after, Some(serde_json::json!(0.8)), "{flag:?}");
    let kv = &diff.changes[at("limit:kv_cache_tokens")];
    assert_eq!(kv.before, Some(serde_json::json!(1_154_496)));
    assert_eq!(kv.after, Some(serde_json::json!(945_536)));
    assert_eq!(kv.consequence_of, ["gpu-memory-utilization"]);
    assert!(at("gpu-memory-utilization") < at("limit:kv_cache_tokens"));
    assert!(flag.impact <= kv.impact, "never above its cause");
    for change in &diff.changes {
        assert!(
            !probe_model::identity::is_identity(&change.key),
            "identity among the changes: {}",
            change.key
        );
    }
    let header: String = human.lines().take(4).collect::<Vec<_>>().join("\n");
    for needle in [
        "host fixture-hand-node-a, machine-id b74f465dc8c615dbeac97d8920c1cde3",
        "host fixture-hand-node-b, machine-id 28734e9e08f4f73f49b8fea62d40db9b",
        "4 x NVIDIA H100 80GB HBM3",
    ] {
        assert!(header.contains(needle), "{needle}: {header}");
    }
    insta::with_settings!({filters => filters()}, {
        insta::assert_snapshot!("hand_nodes_diff", human);
    });
}

/// The plan for a server started by hand: stop the running one (by its PID: nothing else
/// stops it, and the earlier launch needs its port), then node a's command in the background
/// with its output appended to the log, then the checks; no unit, no reload.
#[test]
fn hand_nodes_rollback_stops_the_running_server_then_starts_the_earlier_launch() {
    let env = env();
    let (_, diff, _) = diff();
    let plan = &diff.rollback_plan;
    let pid = match plan.launcher {
        probe_model::Launcher::Process { pid: Some(pid) } => pid,
        ref other => panic!("a process started by hand: {other:?}"),
    };
    let kinds: Vec<&str> = plan
        .steps
        .iter()
        .map(|s| match &s.action {
            probe_model::RollbackAction::Stop { .. } => "stop",
            probe_model::RollbackAction::Restart { .. } => "restart",
            probe_model::RollbackAction::Verify { .. } => "verify",
            probe_model::RollbackAction::Run { .. } => "run",
            probe_model::RollbackAction::EditLine { .. } => "edit",
            probe_model::RollbackAction::RemoveFile { .. } => "remove",
            probe_model::RollbackAction::Manual { .. } => "manual",
        })
        .collect();
    assert_eq!(kinds.first(), Some(&"stop"), "{kinds:?}");
    assert_eq!(kinds.get(1), Some(&"restart"), "{kinds:?}");
    assert!(kinds[2..].iter().all(|k| *k == "verify"), "{kinds:?}");
    let probe_model::RollbackAction::Stop { command } = &plan.steps[0].action else {
        unreachable!()
    };
    assert!(command.starts_with(&format!("kill {pid} ")), "{command}");
    let probe_model::RollbackAction::Restart { command } = &plan.steps[1].action else {
        unreachable!()
    };
    assert!(
        command.contains("--gpu-memory-utilization 0.90") && command.contains(">> /root/vllm.log"),
        "{command}"
    );
    let checklist = probe(env, &[&ARGS[..], &["--rollback"]].concat());
    assert_eq!(checklist.status.code(), Some(1));
    // As JSON, `--rollback` is the typed plan itself (its schema: rollback-plan), not the
    // checklist's lines.
    let json_args = [&ARGS[..], &["--rollback", "--format", "json"]].concat();
    let json = probe(env, &json_args);
    assert_eq!(json.status.code(), Some(1));
    util::assert_output_schema(&json_args, &json);
    let typed: probe_model::RollbackPlan = serde_json::from_slice(&json.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", util::text(&json.stdout)));
    assert_eq!(&typed, plan);
    let sh = probe(env, &[&ARGS[..], &["--format", "sh"]].concat());
    assert_eq!(sh.status.code(), Some(1));
    insta::with_settings!({filters => filters()}, {
        insta::assert_snapshot!("hand_nodes_rollback", util::text(&checklist.stdout));
        insta::assert_snapshot!("hand_nodes_rollback_sh", util::text(&sh.stdout));
    });
}

/// The loop: node b's plan run on (a private instance of) node b, from a login shell like the
/// one that started its server; the server it starts logs node a's numbers, and `probe diff`
/// against node a exits 0.
#[test]
fn hand_nodes_rollback_applied_on_the_host_leaves_no_difference() {
    let lp = Loop::start("hand-node-a", "hand-node-b");
    lp.collect();
    let (before, code) = lp.diff_json();
    assert_eq!(code, 1, "{:?}", left(&before));
    let out = lp.apply(&format!("{LOGIN_ENV} VLLM_LOG_STATS_INTERVAL=1"));
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}{}",
        util::text(&out.stdout),
        util::text(&out.stderr)
    );
    // The earlier launch's start-up and ten stats lines, after the stopped one's.
    lp.wait_for("/root/vllm.log", "GPU KV cache size: 1,154,496 tokens", 1);
    lp.wait_for("/root/vllm.log", "Avg prompt throughput", 20);
    lp.collect();
    let (after, code) = lp.diff_json();
    assert_eq!(code, 0, "after the rollback: {:#?}", left(&after));
    assert!(after.rollback_plan.is_empty(), "{:#?}", after.rollback_plan);
}
