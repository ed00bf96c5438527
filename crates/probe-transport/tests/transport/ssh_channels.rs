//! Channel concurrency on one connection against a real sshd that allows fewer sessions than
//! the client's own limit: refused channels lower the limit and wait, nothing fails.
#![expect(
    clippy::print_stderr,
    reason = "progress lines on stderr while fixture hosts start and stop"
)]

use crate::ssh_support;

use std::time::{Duration, Instant};

use probe_transport::{Exec, MAX_CHANNELS};
use ssh_support::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fewer_server_sessions_than_channels_still_runs_everything() {
    // `MaxSessions` under `Match all` overrides the test server's default of 20.
    let env = Env::with_server("ed25519", "", None, "Match all\n  MaxSessions 3\n");
    let c = env.connect().await;
    let n = MAX_CHANNELS + 4;
    let t = Instant::now();
    let reqs: Vec<_> = (0..n)
        .map(|i| req(&format!("sleep 0.3; echo job{i}")).with_timeout(Duration::from_secs(30)))
        .collect();
    let mut handles = Vec::new();
    let c = std::sync::Arc::new(c);
    for r in reqs {
        let c = c.clone();
        handles.push(tokio::spawn(async move { c.exec(&r).await }));
    }
    let mut ok = 0;
    for (i, h) in handles.into_iter().enumerate() {
        match h.await.unwrap() {
            Ok(o) => {
                assert_eq!(last_line(&o.stdout), format!("job{i}"));
                ok += 1;
            }
            Err(e) => panic!("job {i} failed: {e}\nsshd log:\n{}", env.sshd.log()),
        }
    }
    assert_eq!(ok, n);
    // At most 3 at once: at least ceil(n/3) rounds of 0.3 s.
    let wall = t.elapsed();
    eprintln!("{n} jobs with MaxSessions 3: {wall:?}");
    assert!(
        wall >= Duration::from_millis(300 * (n as u64).div_ceil(3)),
        "{wall:?}"
    );
}
