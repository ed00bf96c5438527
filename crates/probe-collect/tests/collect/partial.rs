//! Nothing already collected is lost: a round 2 that fails at the transport level (deadline,
//! connection dropped) or has no time left still returns the round-1 snapshot, with every
//! round-2 section marked. Real sshd (fixture hosts) and the real russh session; the wrapper
//! below only shortens the round-2 requests' deadline or closes the connection before them
//! (once every round-1 group has returned: groups run concurrently, one channel each).

#![expect(
    clippy::print_stderr,
    reason = "progress lines on stderr while fixture hosts start and stop"
)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use probe_collect::{CollectOptions, collect, collect_with_stats, script};
use probe_model::{GpuStatus, ProcessRole, SectionStatus, Snapshot};
use probe_testkit::fixture::FixtureHost;
use probe_transport::{
    ConnectOptions, Connection, Exec, ExecOutput, ExecRequest, TransportError, connect,
};

#[derive(Clone, Copy)]
enum Fault {
    /// Round 2 gets a deadline far too short for it: the session's own ExecTimeout.
    ShortDeadline,
    /// The connection is closed before round 2: the session's own error.
    Dropped,
    /// Round 1's `host` group stops answering once its second section (`pkg_history`) has
    /// begun (a wedged remote shell): the transport's own deadline for that channel fires
    /// inside it.
    Wedged,
}

/// The first line of the `pkg_history` section's command; the wedge goes before it.
const PKG_FIRST: &str = "unz() { if has zcat; then zcat; else gzip -dc; fi; }";

/// A round-1 request of the `host` group, wedged at the start of `pkg_history`, with a
/// transport deadline of 4 s.
fn wedged(req: &ExecRequest) -> Option<ExecRequest> {
    let text = String::from_utf8_lossy(req.stdin.as_deref().unwrap_or(&[])).into_owned();
    text.contains(PKG_FIRST).then(|| {
        req.clone()
            .with_stdin(text.replace(PKG_FIRST, &format!("sleep 30\n{PKG_FIRST}")))
            .with_timeout(Duration::from_secs(4))
    })
}

struct Faulty {
    inner: Connection,
    fault: Fault,
    /// Round-2 requests seen.
    calls: AtomicUsize,
    /// Round-1 requests that have returned.
    round1_done: AtomicUsize,
    dropped: tokio::sync::Mutex<bool>,
}

impl Faulty {
    fn new(inner: Connection, fault: Fault) -> Self {
        Faulty {
            inner,
            fault,
            calls: AtomicUsize::new(0),
            round1_done: AtomicUsize::new(0),
            dropped: tokio::sync::Mutex::new(false),
        }
    }
}

/// A request of round 2: its script runs a round-2 section.
fn is_round2(req: &ExecRequest) -> bool {
    let text = String::from_utf8_lossy(req.stdin.as_deref().unwrap_or(&[])).into_owned();
    script::probes(2).any(|p| text.contains(&format!("\nsec {} ", p.name)))
}

impl Exec for Faulty {
    async fn exec(&self, req: &ExecRequest) -> Result<ExecOutput, TransportError> {
        if !is_round2(req) {
            let wedge = matches!(self.fault, Fault::Wedged)
                .then(|| wedged(req))
                .flatten();
            let r = self.inner.exec(wedge.as_ref().unwrap_or(req)).await;
            self.round1_done.fetch_add(1, Ordering::SeqCst);
            return r;
        }
        self.calls.fetch_add(1, Ordering::SeqCst);
        while self.round1_done.load(Ordering::SeqCst) < script::groups(1).len() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        match self.fault {
            Fault::Wedged => self.inner.exec(req).await,
            Fault::ShortDeadline => {
                let req = req.clone().with_timeout(Duration::from_millis(1));
                self.inner.exec(&req).await
            }
            Fault::Dropped => {
                let mut dropped = self.dropped.lock().await;
                if std::mem::replace(&mut *dropped, true) {
                    drop(dropped);
                    return self.inner.exec(req).await;
                }
                // Kill this connection's own sshd process on the fixture host (the first sshd
                // ancestor of the shell; the listener is PID 1 there): a real dropped link.
                let kill = ExecRequest::new(
                    "p=$$; while [ \"$p\" -gt 1 ]; do case $(cat /proc/$p/comm) in sshd*) kill -9 $p; exit 0;; esac; p=$(cut -d' ' -f4 /proc/$p/stat); done; exit 1",
                )
                .with_timeout(Duration::from_secs(5));
                let _ = self.inner.exec(&kill).await;
                drop(dropped);
                self.inner.exec(req).await
            }
        }
    }

    fn host(&self) -> &str {
        self.inner.host()
    }
}

async fn session(host: &FixtureHost) -> Connection {
    let copts = ConnectOptions {
        config_file: Some(host.ssh_config()),
        batch_mode: true,
        ..Default::default()
    };
    connect(&host.alias, &copts)
        .await
        .unwrap_or_else(|e| panic!("connect: {e}"))
}

fn status(s: &Snapshot, name: &str) -> SectionStatus {
    s.sections
        .iter()
        .find(|x| x.name == name)
        .unwrap_or_else(|| panic!("no section {name}: {:?}", s.sections))
        .status
}

/// Round 1 of sglang-hybrid is all there.
fn assert_round1(s: &Snapshot) {
    assert_eq!(s.host.hostname.as_deref(), Some("fixture-sglang-hybrid"));
    let l = s
        .processes
        .iter()
        .find(|p| p.role == ProcessRole::Launcher)
        .expect("launcher kept");
    assert!(l.argv.iter().any(|a| a == "NEXTN"));
    assert!(
        s.histories
            .iter()
            .any(|h| h.path == "/root/.bash_history" && h.entries.len() == 18)
    );
    assert!(s.units.iter().any(|u| u.name == "sglang-qwen.service"));
    assert_eq!(s.gpu.status, GpuStatus::Present);
    assert_eq!(s.gpu.gpus.len(), 2);
    for n in ["host", "history", "units", "processes", "gpu_query"] {
        assert_eq!(status(s, n), SectionStatus::Ok, "{n}");
    }
}

/// The real session, recording when the last of its commands returned (the transport's
/// answer, before the client parses it).
struct Timed {
    inner: Connection,
    started: Instant,
    last_ms: std::sync::atomic::AtomicU64,
}

impl Timed {
    fn new(inner: Connection) -> Self {
        Timed {
            inner,
            started: Instant::now(),
            last_ms: std::sync::atomic::AtomicU64::new(0),
        }
    }

    /// Every command of both rounds had returned by the deadline (plus the half second the
    /// transport gives a channel to close).
    fn assert_returned_by(&self, deadline_s: u64) {
        let last = self.last_ms.load(Ordering::SeqCst);
        assert!(
            last <= deadline_s * 1000 + 500,
            "last command returned at {last} ms"
        );
    }
}

impl Exec for Timed {
    async fn exec(&self, req: &ExecRequest) -> Result<ExecOutput, TransportError> {
        let r = self.inner.exec(req).await;
        let ms = u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.last_ms.fetch_max(ms, Ordering::SeqCst);
        r
    }

    fn host(&self) -> &str {
        self.inner.host()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn round2_transport_failures_keep_round1() {
    let host = FixtureHost::start("sglang-hybrid");
    for (fault, want) in [
        (Fault::ShortDeadline, SectionStatus::TimedOut),
        (Fault::Dropped, SectionStatus::Failed),
    ] {
        let exec = Faulty::new(session(&host).await, fault);
        let opts = CollectOptions {
            target: "fx-sglang-hybrid".into(),
            ..Default::default()
        };
        let s = collect(&exec, &opts)
            .await
            .unwrap_or_else(|e| panic!("round 2 failure must not fail the collection: {e}"));
        assert_eq!(
            exec.calls.load(Ordering::SeqCst),
            script::groups(2).len(),
            "round 2 was attempted, one request per group"
        );
        assert_round1(&s);
        for n in ["round2", "python_envs", "models", "logs", "journal"] {
            assert_eq!(status(&s, n), want, "{n}");
        }
        let msg = s
            .sections
            .iter()
            .find(|x| x.name == "models")
            .and_then(|x| x.message.clone())
            .unwrap_or_default();
        assert!(msg.starts_with("not collected: round 2 failed"), "{msg}");
        // Sections lost with a dropped link make the snapshot incomplete; sections stopped at
        // the deadline are reported as timed out, not lost.
        let lost = probe_collect::lost_sections(&s);
        match fault {
            Fault::ShortDeadline => assert!(lost.is_empty(), "{lost:?}"),
            Fault::Dropped => assert!(
                ["models", "logs", "journal"]
                    .iter()
                    .all(|n| lost.iter().any(|l| l == n)),
                "{lost:?}"
            ),
            Fault::Wedged => unreachable!(),
        }
        assert!(s.python_envs.is_empty() && s.models.is_empty() && s.logs.is_empty());
        // Redaction still ran over what was kept.
        let json = serde_json::to_string(&s).unwrap();
        assert!(!json.contains("hf_"), "secret leaked");
        exec.inner.close().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transport_deadline_keeps_what_was_received() {
    // The `host` group's channel is given up at its transport deadline in the middle of its
    // second section: the `host` section received before it is kept and parsed, the section
    // it was in is marked as cut off, and every other group is whole. (Output still in a pipe
    // on the host when the channel is given up is not received: the last few KiB of the
    // section that was running.)
    let host = FixtureHost::start("sglang-hybrid");
    let exec = Faulty::new(session(&host).await, Fault::Wedged);
    let opts = CollectOptions {
        target: "fx-sglang-hybrid".into(),
        ..Default::default()
    };
    let s = collect(&exec, &opts)
        .await
        .unwrap_or_else(|e| panic!("a wedged channel must not fail the collection: {e}"));
    let sec = |n: &str| {
        s.sections
            .iter()
            .find(|x| x.name == n)
            .map(|x| (x.status, x.message.clone().unwrap_or_default()))
            .unwrap_or_else(|| panic!("no section {n}: {:?}", s.sections))
    };
    let (st, msg) = sec("pkg_history");
    assert_eq!(st, SectionStatus::TimedOut, "{msg}");
    assert!(msg.contains("cut off while it ran"), "{msg}");
    assert!(msg.contains("what it printed before is kept"), "{msg}");
    assert_eq!(s.host.hostname.as_deref(), Some("fixture-sglang-hybrid"));
    assert!(
        s.host.kernel.is_some() && s.host.mem_total_kib.is_some(),
        "{:?}",
        s.host
    );
    for n in [
        "host",
        "history",
        "units",
        "processes",
        "gpu_query",
        "gpu_apps",
    ] {
        assert_eq!(sec(n).0, SectionStatus::Ok, "{n}: {:?}", sec(n).1);
    }
    assert!(s.gpu.compute_apps.iter().any(|a| a.pid.is_some()));
    // Round 2 ran from what round 1 kept: the server's log was read.
    assert!(!s.logs.is_empty(), "round 2 ran");
    exec.inner.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hung_program_holds_only_its_own_group() {
    // hostile's nvidia-smi hangs: its group uses its whole time, while every other section of
    // round 1 and all of round 2 (which no longer waits for it) finish within a 7 s deadline.
    let host = FixtureHost::start("hostile");
    let conn = session(&host).await;
    let opts = CollectOptions {
        target: "fx-hostile".into(),
        deadline: Duration::from_secs(7),
        ..Default::default()
    };
    let t = Instant::now();
    let timed = Timed::new(conn);
    let (s, stats) = collect_with_stats(&timed, &opts)
        .await
        .unwrap_or_else(|e| panic!("collect: {e}"));
    let wall = t.elapsed();
    eprintln!("hostile with a 7 s deadline: {wall:?}, {stats:?}");
    for x in &s.sections {
        eprintln!(
            "  {:14} {:?} {:?}ms {:?}",
            x.name, x.status, x.duration_ms, x.message
        );
    }
    // Every channel ends before the deadline (parsing what came, 4 MiB of the server's log
    // among it, comes after and is the client's CPU time, not a wait).
    timed.assert_returned_by(7);
    assert_eq!(s.host.hostname.as_deref(), Some("fixture-hostile"));
    assert!(
        s.processes
            .iter()
            .any(|p| p.role == ProcessRole::Launcher
                && p.engine == Some(probe_model::Engine::Sglang))
    );
    assert!(s.units.iter().any(|u| u.name == "llm-bloat.service"));
    assert_eq!(status(&s, "gpu_query"), SectionStatus::TimedOut);
    for n in ["gpu_apps", "gpu_topo"] {
        assert_eq!(status(&s, n), SectionStatus::TimedOut, "{n}");
    }
    for n in ["host", "history", "units", "processes", "python_envs"] {
        assert_ne!(status(&s, n), SectionStatus::TimedOut, "{n}");
        assert_ne!(status(&s, n), SectionStatus::Failed, "{n}");
    }
    // Round 2 did not wait for the hung group: it started long before that group ended. Its
    // `logs` reads the 200 MB server log whole through the thinning, which the deadline may cut
    // on a loaded two-core machine (what it read is kept), never the hang.
    let gpu_end = stats
        .groups
        .iter()
        .find(|g| g.name == "gpu")
        .map(|g| g.end_ms)
        .expect("the gpu group");
    assert!(
        stats.round2_started_ms + 1_000 < gpu_end,
        "round 2 at {} ms, the hung group ended at {gpu_end} ms",
        stats.round2_started_ms
    );
    assert_ne!(status(&s, "logs"), SectionStatus::Failed, "logs");
    assert!(
        s.logs
            .iter()
            .any(|l| l.location == "/var/log/sglang/server.log"),
        "round 2 read the server's log"
    );
    let json = serde_json::to_string(&s).unwrap();
    assert!(!json.contains("sk-proj-") && !json.contains("hunter2"));
    timed.inner.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deadline_too_short_for_round2_keeps_round1() {
    // A 3 s deadline leaves less than round 2 needs once its inputs are known; hostile's hung
    // nvidia-smi is cut by the deadline. Round 1 is kept, round 2 is marked, nothing waits
    // past the deadline.
    let host = FixtureHost::start("hostile");
    let conn = session(&host).await;
    let opts = CollectOptions {
        target: "fx-hostile".into(),
        deadline: Duration::from_secs(3),
        ..Default::default()
    };
    let t = Instant::now();
    let timed = Timed::new(conn);
    let (s, stats) = collect_with_stats(&timed, &opts)
        .await
        .unwrap_or_else(|e| panic!("collect: {e}"));
    let wall = t.elapsed();
    eprintln!("hostile with a 3 s deadline: {wall:?}, {stats:?}");
    timed.assert_returned_by(3);
    assert_eq!(s.host.hostname.as_deref(), Some("fixture-hostile"));
    assert!(
        s.processes
            .iter()
            .any(|p| p.role == ProcessRole::Launcher
                && p.engine == Some(probe_model::Engine::Sglang))
    );
    assert_eq!(status(&s, "gpu_query"), SectionStatus::TimedOut);
    for n in ["python_envs", "models", "logs", "journal"] {
        assert_eq!(status(&s, n), SectionStatus::TimedOut, "{n}");
    }
    let json = serde_json::to_string(&s).unwrap();
    assert!(!json.contains("sk-proj-") && !json.contains("hunter2"));
    timed.inner.close().await;
}
