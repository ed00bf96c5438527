//! Read-only collection of one host into a redacted [`Snapshot`]: the probes of
//! `configs/probes.toml` as framed sections of POSIX `sh` scripts, run in groups, each group on
//! its own exec channel of the one connection ([`run`]: concurrent, round 2 as soon as its
//! inputs are parsed), sections framed by a per-run random boundary that no process's argument
//! vector ever shows, parsers that never panic, and secret redaction before anything is
//! returned.
//!
//! * [`script`]: builds the scripts from `configs/probes.toml`; [`script::commands`] lists
//!   everything they can run (checked by the read-only test).
//! * [`frame`]: splits the output by boundary only, and marks a section whose framing was
//!   broken (`tampered`) without losing the others.
//! * [`parse`]: one parser per section.
//! * [`redact`]: secret rules of `configs/redaction.toml`.
//! * [`collect_host`]: collection as one call, the snapshot finished (servers asked,
//!   address and target filled) with its launches read once.
//! * [`sanitize_terminal`]: every remote string is made terminal-safe at parse time (escape
//!   sequences and control characters other than `\n`/`\t` removed); renderers may rely on it
//!   but the CLI uses the same function for anything else it prints.
//!
//! Nothing already collected is lost: every section and every program in it has its own time
//! and byte cap, enforced so that a process left behind holding a pipe cannot defeat it; a
//! group that fails at the transport level (its channel refused, the connection dropped, the
//! deadline) costs only its own sections, which are marked; once any group produced framed
//! output, [`collect`] returns a snapshot. The snapshot is assembled in one place
//! (`assemble`), from both rounds' sections. A group whose channel hits the transport's
//! deadline keeps what that channel had received so far: the transport's timeout carries the
//! partial stdout, whose complete sections are parsed and whose cut one is marked; the
//! scripts' own budget ends every group before that deadline in the first place.

// Remote output is the only input of the parsers, and they are total: no unwrap, expect,
// panic or unchecked index outside tests. Built-in data (embedded configs, source patterns)
// goes through `config::built_in` (`probe_launch::embedded::load`, whose `panic` is the one waiver).
#![deny(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

pub mod config;
mod finish;
pub mod found;
pub mod frame;
pub mod parse;
pub mod plan;
pub mod redact;
mod sanitize;
pub mod script;
pub mod server;
pub mod thin;

use std::time::{Duration, Instant};

use probe_model::{GpuStatus, SectionStatus, Snapshot};
use probe_transport::{Exec, TransportError};

pub use config::ConfigError;
pub use finish::{Collected, collect_host};
pub use sanitize::sanitize_terminal;

/// What to collect and how.
#[derive(Debug, Clone)]
pub struct CollectOptions {
    /// The target as the operator typed it (stored in the snapshot).
    pub target: String,
    /// Run the same read-only commands under `sudo -n`.
    pub sudo: bool,
    /// Redact secrets (false only with `--no-redact`).
    pub redact: bool,
    /// Extra unit names (`--unit NAME`) collected even when they do not look like servers.
    pub extra_units: Vec<String>,
    /// Deadline for the whole collection (both rounds).
    pub deadline: Duration,
    /// Ask the running model servers ([`server`]) and how, in [`collect_host`]; `None`: not
    /// asked (`--no-ask-server`).
    pub ask_server: Option<server::AskOptions>,
}

impl Default for CollectOptions {
    fn default() -> Self {
        CollectOptions {
            target: String::new(),
            sudo: false,
            redact: true,
            extra_units: Vec::new(),
            deadline: Duration::from_secs(120),
            ask_server: None,
        }
    }
}

/// Collection failed; `partial` keeps whatever was collected (`None` only when nothing was:
/// round 1 failed at the transport level or produced no framed output).
#[derive(Debug, thiserror::Error)]
#[error("{host}: {kind}")]
pub struct CollectError {
    pub host: String,
    pub kind: CollectErrorKind,
    pub partial: Option<Box<Snapshot>>,
}

#[derive(Debug, thiserror::Error)]
pub enum CollectErrorKind {
    /// The transport failed before round 1 produced anything usable.
    #[error("{0}")]
    Transport(#[source] TransportError),
    /// The remote shell produced no framed output (no POSIX sh, or a login shell that broke it).
    #[error("the collection script produced no output (exit status {status}): {stderr}")]
    NoOutput { status: u32, stderr: String },
    /// The deadline passed before round 1 finished.
    #[error("collection deadline of {}s exceeded", .0.as_secs())]
    Deadline(Duration),
}

impl CollectErrorKind {
    /// The transport error, for fleet classification.
    pub fn transport(&self) -> Option<&TransportError> {
        match self {
            CollectErrorKind::Transport(t) => Some(t),
            _ => None,
        }
    }
}

mod rounds;

/// Statistics of one collection, for benchmarks and the CLI's `--verbose`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CollectStats {
    pub round1_bytes: u64,
    pub round2_bytes: u64,
    /// Wall time from the start to the end of the last round-1 group.
    pub round1_ms: u64,
    /// Wall time from the start of round 2 to the end of its last group.
    pub round2_ms: u64,
    /// When round 2 started (its inputs were parsed), from the start.
    pub round2_started_ms: u64,
    /// Exec channels used (one per group).
    pub channels: u32,
    /// Sum of the groups' own times (above the wall time: the groups ran concurrently).
    pub group_ms_sum: u64,
    /// Each group that ran, in the order of its round's definition.
    pub groups: Vec<GroupTiming>,
}

/// When one group ran, in milliseconds from the collection's start (its start includes any
/// wait for a free channel).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GroupTiming {
    pub name: String,
    pub round: u8,
    pub start_ms: u64,
    pub end_ms: u64,
}

/// Collects one host. See the crate docs.
///
/// This machine, read through the local executor (the same scripts and parsers as over SSH):
///
/// ```
/// use std::time::Duration;
///
/// use probe_collect::{CollectOptions, collect};
/// use probe_transport::LocalExec;
///
/// let runtime = tokio::runtime::Runtime::new().unwrap();
/// let options = CollectOptions {
///     target: "local".into(),
///     deadline: Duration::from_secs(60),
///     ..CollectOptions::default()
/// };
/// let snapshot = runtime.block_on(collect(&LocalExec::new(), &options)).unwrap();
/// assert_eq!(snapshot.target, "local");
/// // Every section reports how it went, the ones that found nothing included.
/// assert!(snapshot.sections.iter().any(|s| s.name == "host"));
/// ```
pub async fn collect<E: Exec>(exec: &E, opts: &CollectOptions) -> Result<Snapshot, CollectError> {
    collect_with_stats(exec, opts).await.map(|(s, _)| s)
}

/// [`collect`], also returning byte and time statistics.
pub async fn collect_with_stats<E: Exec>(
    exec: &E,
    opts: &CollectOptions,
) -> Result<(Snapshot, CollectStats), CollectError> {
    collect_with(exec, opts, |_| async {})
        .await
        .map(|(s, stats, _)| (s, stats))
}

/// [`collect_with_stats`], with `hook` run while the collection runs, given the snapshot of
/// what round 1 says runs on the host as soon as that is in (the servers' first scrape:
/// `server::scrape_histograms`); its output is `None` where it was not run.
pub async fn collect_with<E, H, F, T>(
    exec: &E,
    opts: &CollectOptions,
    hook: H,
) -> Result<(Snapshot, CollectStats, Option<T>), CollectError>
where
    E: Exec,
    H: FnOnce(Snapshot) -> F,
    F: std::future::Future<Output = T>,
{
    let started = Instant::now();
    let host = exec.host().to_string();
    let (rounds, early) = rounds::both_rounds(exec, opts, started, hook).await;
    let stats = rounds.stats();
    if rounds.round1.iter().all(|g| g.framed.is_none()) {
        return Err(no_output(host, opts, rounds.round1));
    }
    let snap = assemble(opts, &host, started, &rounds);
    Ok((snap, stats, early))
}

/// The sections of a snapshot that were lost to the connection (a channel the server refused
/// even after waiting for the others, a dropped channel or link), not reported by the host:
/// a snapshot with any is incomplete, however it was otherwise collected.
pub fn lost_sections(snap: &Snapshot) -> Vec<String> {
    snap.sections
        .iter()
        .filter(|r| rounds::lost(r))
        .map(|r| r.name.clone())
        .collect()
}

/// Round 1 gave nothing usable: the first group's failure says why.
fn no_output(host: String, opts: &CollectOptions, groups: Vec<rounds::GroupOut>) -> CollectError {
    let first = groups
        .into_iter()
        .find(|g| g.error.is_some() || g.no_output.is_some());
    let kind = match first {
        Some(rounds::GroupOut { error: Some(e), .. }) => {
            if matches!(e.kind, probe_transport::ErrorKind::ExecTimeout { .. }) {
                CollectErrorKind::Deadline(opts.deadline)
            } else {
                CollectErrorKind::Transport(e)
            }
        }
        Some(rounds::GroupOut {
            no_output: Some((status, stderr)),
            ..
        }) => CollectErrorKind::NoOutput { status, stderr },
        _ => CollectErrorKind::NoOutput {
            status: 0,
            stderr: String::new(),
        },
    };
    CollectError {
        host,
        kind,
        partial: None,
    }
}

/// The one place where the snapshot is assembled from both rounds' sections.
fn assemble(
    opts: &CollectOptions,
    host: &str,
    started: Instant,
    rounds: &rounds::Rounds,
) -> Snapshot {
    let mut snap = Snapshot {
        schema_version: probe_model::SCHEMA_VERSION,
        target: opts.target.clone(),
        collector_version: env!("CARGO_PKG_VERSION").to_string(),
        redacted: opts.redact,
        sudo: opts.sudo,
        ..Default::default()
    };
    let mut ctx = parse::Ctx {
        boundary: rounds.boundary1.clone(),
        ..Default::default()
    };
    let framed1 = rounds::merged(&rounds.round1);
    let truncated1 = rounds.round1.iter().any(|g| g.truncated);
    plan::apply_round1(&mut snap, &mut ctx, &framed1, truncated1);
    rounds::mark_groups(&mut snap, &rounds.round1, &framed1);
    match &rounds.round2 {
        rounds::Round2::NotNeeded => {}
        rounds::Round2::NoTime => plan::round2_not_run(
            &mut snap,
            SectionStatus::TimedOut,
            "not run: no time left before the collection deadline",
        ),
        rounds::Round2::Ran { inputs, groups } => match rounds::all_failed(groups) {
            Some((status, msg)) => plan::round2_not_run(&mut snap, status, &msg),
            None => {
                let framed2 = rounds::merged(groups);
                ctx.boundary = rounds.boundary2.clone();
                plan::apply_round2(&mut snap, &ctx, &framed2, inputs);
                rounds::mark_groups(&mut snap, groups, &framed2);
            }
        },
    }
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    snap.collected_at = i64::try_from(now).unwrap_or(0);
    snap.remote_clock = ctx.remote_clock;
    snap.duration_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    let hn = snap
        .host
        .hostname
        .clone()
        .unwrap_or_else(|| host.to_string());
    let rnd: [u8; 4] = rand::random();
    snap.id = format!(
        "{}-{}-{}",
        sanitize::sanitize_line(&hn).replace(' ', "_"),
        snap.collected_at,
        rnd.iter().map(|b| format!("{b:02x}")).collect::<String>()
    );
    if opts.redact {
        redact::redact_snapshot(&mut snap, redact::Redactor::builtin());
    }
    if snap.gpu.status == GpuStatus::NoNvidiaSmi
        && snap
            .sections
            .iter()
            .any(|s| s.name == "gpu_query" && s.status == SectionStatus::TimedOut)
    {
        snap.gpu.status = GpuStatus::DriverError;
        snap.gpu.message = Some("nvidia-smi timed out".into());
    }
    snap
}
