//! A server that allows fewer sessions than the collector's channels (`MaxSessions 1`, `2`)
//! still gives every section: the groups whose channel it refuses run on the channels it
//! allowed, one after another. Real sshd on a fixture host, the real russh session.

#![expect(
    clippy::print_stderr,
    reason = "progress lines on stderr while fixture hosts start and stop"
)]

use std::sync::atomic::{AtomicUsize, Ordering};

use probe_collect::{CollectOptions, collect_with_stats};
use probe_model::{SectionStatus, Snapshot};
use probe_testkit::fixture::FixtureHost;
use probe_transport::{
    ConnectOptions, Connection, ErrorKind, Exec, ExecOutput, ExecRequest, TransportError, connect,
};

const HOST: &str = "sglang-hybrid";

fn connect_options(host: &FixtureHost) -> ConnectOptions {
    ConnectOptions {
        config_file: Some(host.ssh_config()),
        batch_mode: true,
        ..Default::default()
    }
}

/// Collects the fixture host started with `extra` sshd_config lines; each section's name,
/// status and message.
async fn sections(extra: &str) -> (Snapshot, Vec<(String, SectionStatus, Option<String>)>) {
    let host = FixtureHost::start_with_sshd_config(HOST, extra);
    let conn = connect(&format!("root@{}", host.alias), &connect_options(&host))
        .await
        .unwrap_or_else(|e| panic!("connect: {e}"));
    let opts = CollectOptions {
        target: host.alias.clone(),
        ..Default::default()
    };
    let (snap, stats) = collect_with_stats(&conn, &opts)
        .await
        .unwrap_or_else(|e| panic!("collect: {e}"));
    conn.close().await;
    eprintln!(
        "{HOST} with {extra:?}: {} channels, round1 {} ms, round2 {} ms",
        stats.channels, stats.round1_ms, stats.round2_ms
    );
    let mut out: Vec<_> = snap
        .sections
        .iter()
        .map(|s| (s.name.clone(), s.status, s.message.clone()))
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    (snap, out)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_section_arrives_when_the_server_allows_one_or_two_sessions() {
    let (_, default) = sections("").await;
    assert!(
        default
            .iter()
            .all(|(_, st, _)| *st != SectionStatus::Failed),
        "{default:#?}"
    );
    for max in [1, 2] {
        let (snap, limited) = sections(&format!("Match all\n  MaxSessions {max}\n")).await;
        let names = |v: &[(String, SectionStatus, Option<String>)]| {
            v.iter()
                .map(|(n, st, _)| (n.clone(), *st))
                .collect::<Vec<_>>()
        };
        assert_eq!(
            names(&limited),
            names(&default),
            "MaxSessions {max}: {limited:#?}"
        );
        let lost = probe_collect::lost_sections(&snap);
        assert!(lost.is_empty(), "MaxSessions {max}: lost {lost:?}");
    }
}

/// The real session to a host, but a second command while one runs is refused the way the
/// transport refuses a channel it could not wait for: what a server that allows one session
/// does when every group asks at once.
/// The groups that run a section of `never` are refused every time.
struct OneAtATime {
    inner: Connection,
    running: AtomicUsize,
    refused: AtomicUsize,
    never: &'static [&'static str],
}

impl OneAtATime {
    fn new(inner: Connection, never: &'static [&'static str]) -> Self {
        OneAtATime {
            inner,
            running: AtomicUsize::new(0),
            refused: AtomicUsize::new(0),
            never,
        }
    }
}

impl Exec for OneAtATime {
    async fn exec(&self, req: &ExecRequest) -> Result<ExecOutput, TransportError> {
        let script = String::from_utf8_lossy(req.stdin.as_deref().unwrap_or(&[])).into_owned();
        let never = self
            .never
            .iter()
            .any(|n| script.contains(&format!("\nsec {n} ")));
        if never || self.running.fetch_add(1, Ordering::SeqCst) > 0 {
            if !never {
                self.running.fetch_sub(1, Ordering::SeqCst);
            }
            self.refused.fetch_add(1, Ordering::SeqCst);
            return Err(TransportError::new(
                self.host(),
                ErrorKind::ChannelRefused("Failed to open channel (ConnectFailed)".into()),
            ));
        }
        let r = self.inner.exec(req).await;
        self.running.fetch_sub(1, Ordering::SeqCst);
        r
    }

    fn host(&self) -> &str {
        self.inner.host()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn groups_whose_channel_is_refused_run_after_the_others() {
    let host = FixtureHost::start(HOST);
    let conn = connect(&format!("root@{}", host.alias), &connect_options(&host))
        .await
        .unwrap_or_else(|e| panic!("connect: {e}"));
    let opts = CollectOptions {
        target: host.alias.clone(),
        ..Default::default()
    };
    let (all, _) = collect_with_stats(&conn, &opts).await.unwrap();
    let one = OneAtATime::new(conn, &[]);
    let (serial, stats) = collect_with_stats(&one, &opts).await.unwrap();
    assert!(
        one.refused.load(Ordering::SeqCst) > 0,
        "no channel was refused"
    );
    let statuses = |s: &Snapshot| {
        let mut v: Vec<_> = s
            .sections
            .iter()
            .map(|r| (r.name.clone(), r.status))
            .collect();
        v.sort_by(|a, b| a.0.cmp(&b.0));
        v
    };
    assert_eq!(statuses(&serial), statuses(&all));
    assert_eq!(stats.channels, 5, "every group ran once");
    assert!(probe_collect::lost_sections(&serial).is_empty());

    // A group refused every time is lost once nothing else runs; the snapshot says so, and
    // every other section is there.
    let refusing = OneAtATime::new(one.inner, &["gpu_query"]);
    let (partial, _) = collect_with_stats(&refusing, &opts).await.unwrap();
    let group = group_of("gpu_query");
    assert!(group.len() >= 3, "{group:?}");
    assert_eq!(probe_collect::lost_sections(&partial), group);
    for (name, status) in statuses(&partial) {
        if !group.contains(&name) {
            let was = statuses(&all).into_iter().find(|(n, _)| *n == name);
            assert_eq!(Some((name.clone(), status)), was, "{name}");
        }
    }

    // Two groups refused every time: once no channel frees any more they give up, rather than
    // wake each other until the deadline; each is refused at most once more than channels
    // freed.
    let twice = OneAtATime::new(refusing.inner, &["gpu_query", "pkg_history"]);
    let (partial, stats) = collect_with_stats(&twice, &opts).await.unwrap();
    let mut both = group_of("pkg_history");
    both.extend(group_of("gpu_query"));
    let lost = probe_collect::lost_sections(&partial);
    for name in &both {
        assert!(lost.contains(name), "{name} not lost: {lost:?}");
    }
    let refused = twice.refused.load(Ordering::SeqCst);
    eprintln!(
        "two groups refused: {refused} refusals, round1 {} ms, round2 {} ms",
        stats.round1_ms, stats.round2_ms
    );
    let bound = 2 * (1 + stats.channels as usize);
    assert!(
        refused <= bound,
        "refused {refused} times, more than {bound}"
    );
    twice.inner.close().await;
}

/// The sections of the round-1 group that runs `section`.
fn group_of(section: &str) -> Vec<String> {
    probe_collect::script::groups(1)
        .into_iter()
        .find(|g| g.probes.iter().any(|p| p.name == section))
        .map(|g| g.probes.iter().map(|p| p.name.clone()).collect())
        .unwrap_or_default()
}
