//! Nothing already collected is lost: a round 2 that fails at the transport level (deadline,
//! connection dropped) or has no time left still returns the round-1 snapshot, with every
//! round-2 section marked. Real sshd (fixture hosts) and the real russh session; the wrapper
//! below only shortens the second request's deadline or closes the connection before it.

#![allow(clippy::print_stderr)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use probe_collect::{CollectOptions, collect};
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
}

struct Faulty {
    inner: Connection,
    fault: Fault,
    calls: AtomicUsize,
}

impl Exec for Faulty {
    async fn exec(&self, req: &ExecRequest) -> Result<ExecOutput, TransportError> {
        if self.calls.fetch_add(1, Ordering::SeqCst) == 0 {
            return self.inner.exec(req).await;
        }
        match self.fault {
            Fault::ShortDeadline => {
                let req = req.clone().with_timeout(Duration::from_millis(1));
                self.inner.exec(&req).await
            }
            Fault::Dropped => {
                // Kill this connection's own sshd process on the fixture host (the first sshd
                // ancestor of the shell; the listener is PID 1 there): a real dropped link.
                let kill = ExecRequest::new(
                    "p=$$; while [ \"$p\" -gt 1 ]; do case $(cat /proc/$p/comm) in sshd*) kill -9 $p; exit 0;; esac; p=$(cut -d' ' -f4 /proc/$p/stat); done; exit 1",
                )
                .with_timeout(Duration::from_secs(5));
                let _ = self.inner.exec(&kill).await;
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn round2_transport_failures_keep_round1() {
    let host = FixtureHost::start("sglang-hybrid");
    for (fault, want) in [
        (Fault::ShortDeadline, SectionStatus::TimedOut),
        (Fault::Dropped, SectionStatus::Failed),
    ] {
        let exec = Faulty {
            inner: session(&host).await,
            fault,
            calls: AtomicUsize::new(0),
        };
        let opts = CollectOptions {
            target: "fx-sglang-hybrid".into(),
            ..Default::default()
        };
        let s = collect(&exec, &opts)
            .await
            .unwrap_or_else(|e| panic!("round 2 failure must not fail the collection: {e}"));
        assert_eq!(
            exec.calls.load(Ordering::SeqCst),
            2,
            "round 2 was attempted"
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
        assert!(s.python_envs.is_empty() && s.models.is_empty() && s.logs.is_empty());
        // Redaction still ran over what was kept.
        let json = serde_json::to_string(&s).unwrap();
        assert!(!json.contains("hf_"), "secret leaked");
        exec.inner.close().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deadline_too_short_for_round2_keeps_round1() {
    // hostile's nvidia-smi hangs: round 1 uses its whole budget (5 s), which leaves less than
    // round 2 needs out of a 7 s deadline.
    let host = FixtureHost::start("hostile");
    let conn = session(&host).await;
    let opts = CollectOptions {
        target: "fx-hostile".into(),
        deadline: Duration::from_secs(7),
        ..Default::default()
    };
    let t = Instant::now();
    let s = collect(&conn, &opts)
        .await
        .unwrap_or_else(|e| panic!("collect: {e}"));
    let wall = t.elapsed();
    eprintln!("hostile with a 7 s deadline: {wall:?}");
    assert!(wall < Duration::from_secs(7), "{wall:?}");
    assert_eq!(s.host.hostname.as_deref(), Some("fixture-hostile"));
    assert!(
        s.processes
            .iter()
            .any(|p| p.role == ProcessRole::Launcher && p.engine.as_deref() == Some("sglang"))
    );
    assert!(s.units.iter().any(|u| u.name == "llm-bloat.service"));
    assert_eq!(status(&s, "gpu_query"), SectionStatus::TimedOut);
    for n in ["python_envs", "models", "logs", "journal"] {
        assert_eq!(status(&s, n), SectionStatus::TimedOut, "{n}");
    }
    let json = serde_json::to_string(&s).unwrap();
    assert!(!json.contains("sk-proj-") && !json.contains("hunter2"));
    conn.close().await;
}
