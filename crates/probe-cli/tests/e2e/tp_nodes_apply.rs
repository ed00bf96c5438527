//! The rollback loop on the tp-node pair (issue 33 item 6): tp-node-b's plan, as the script
//! `probe diff --format sh` writes, run as root on a private instance of tp-node-b. It moves the
//! leftover drop-in aside, `systemctl daemon-reload` (the stand-in reads the unit files again)
//! and `systemctl restart vllm.service` (the stand-in stops the running server and starts the
//! unit's ExecStart with its environment, as systemd would): the server then runs node a's
//! launch and logs node a's numbers, and `probe diff` against tp-node-a exits 0.

use crate::apply_plan::{LOGIN_ENV, Loop, left};
use crate::util;

#[test]
fn tp_nodes_rollback_applied_on_the_host_leaves_no_difference() {
    let lp = Loop::start("tp-node-a", "tp-node-b");
    lp.collect();
    let (before, code) = lp.diff_json();
    assert_eq!(code, 1, "{:?}", left(&before));
    let journal = "/usr/local/share/fixture/journal/vllm.service.live";
    let out = lp.apply(LOGIN_ENV);
    let said = format!("{}{}", util::text(&out.stdout), util::text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{said}");
    // The check the plan runs: what systemd runs the unit with now.
    assert!(
        said.contains("--port 8000 ; ignore_errors=no") && !said.contains("--disable-custom"),
        "{said}"
    );
    assert!(!said.contains("NCCL_P2P_DISABLE"), "{said}");
    lp.wait_for(journal, "GPU KV cache size: 1,154,496 tokens", 1);
    lp.wait_for(journal, "Avg prompt throughput", 20);
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
