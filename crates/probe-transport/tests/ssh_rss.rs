//! 50 MB of remote output with the default 16 MiB stdout cap keeps the peak RSS of this test
//! process under 64 MB. Its own test binary, so no other test inflates VmHWM.
#![expect(
    clippy::print_stderr,
    reason = "progress lines on stderr while fixture hosts start and stop"
)]

#[path = "transport/ssh_support/mod.rs"]
mod ssh_support;

use std::time::{Duration, Instant};

use probe_transport::{Exec, ExecRequest};
use ssh_support::*;

fn vm_hwm_kb() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmHWM in /proc/self/status")
}

#[tokio::test]
async fn fifty_megabytes_capped_with_bounded_memory() {
    let env = Env::new();
    let t0 = Instant::now();
    let c = env.connect().await;
    let connect = t0.elapsed();
    let t1 = Instant::now();
    let out = c
        .exec(&ExecRequest::new("true").with_timeout(Duration::from_secs(20)))
        .await
        .unwrap();
    let first_exec = t1.elapsed();
    assert_eq!(out.exit_status, 0);
    let t2 = Instant::now();
    let out = c
        .exec(&ExecRequest::new("true").with_timeout(Duration::from_secs(20)))
        .await
        .unwrap();
    let second_exec = t2.elapsed();
    assert_eq!(out.exit_status, 0);
    let before = vm_hwm_kb();

    let t3 = Instant::now();
    let out = c
        .exec(
            &ExecRequest::new("head -c 52428800 /dev/urandom")
                .with_timeout(Duration::from_secs(30)),
        )
        .await
        .unwrap();
    let big = t3.elapsed();
    let hwm = vm_hwm_kb();
    assert_eq!(out.exit_status, 0);
    assert!(out.stdout_truncated);
    assert_eq!(out.stdout.len(), 16 << 20);
    eprintln!(
        "connect+auth {connect:?}; exec(true) first {first_exec:?}, second {second_exec:?}; \
         50 MB capped at 16 MiB in {big:?}; VmHWM before {before} kB, after {hwm} kB"
    );
    assert!(hwm < 64 * 1024, "peak RSS {hwm} kB is not under 64 MB");
    c.close().await;
}
