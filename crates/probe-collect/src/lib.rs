//! Read-only collection of one host into a redacted [`Snapshot`]: one POSIX `sh` script over
//! one connection (round 1), a second small one for what depends on it (round 2), sections
//! framed by a per-run random boundary, parsers that never panic, and secret redaction before
//! anything is returned.
//!
//! * [`script`]: builds the scripts from `configs/probes.toml`; [`script::commands`] lists
//!   everything they can run (checked by the read-only test).
//! * [`frame`]: splits the output by boundary only.
//! * [`parse`]: one parser per section.
//! * [`redact`]: secret rules of `configs/redaction.toml`.
//! * [`sanitize_terminal`]: every remote string is made terminal-safe at parse time (escape
//!   sequences and control characters other than `\n`/`\t` removed); renderers may rely on it
//!   but the CLI uses the same function for anything else it prints.
//!
//! Nothing already collected is lost: once round 1 produced framed output, [`collect`] returns
//! a snapshot. A round 2 that fails at the transport level (connection dropped, deadline) marks
//! each round-2 section `failed` / `timed_out` and keeps everything of round 1. Limit: the
//! transport returns only whole outputs, so a round 1 that fails at the transport level (its
//! connection dropped, or the transport's deadline passed before the script ended) leaves
//! nothing to keep; [`CollectError::partial`] is then `None`. The script's own budget (70 % of
//! the deadline, see [`script::round1_budget`]) makes it end, with every section accounted
//! for, well before the transport's deadline, so the second case needs a host that does not
//! honour `timeout`.

pub mod config;
pub mod frame;
pub mod parse;
pub mod plan;
pub mod redact;
pub mod sanitize;
pub mod script;

use std::time::{Duration, Instant};

use probe_model::{GpuStatus, SectionReport, SectionStatus, Snapshot};
use probe_transport::{Exec, ExecRequest, TransportError};

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
}

impl Default for CollectOptions {
    fn default() -> Self {
        CollectOptions {
            target: String::new(),
            sudo: false,
            redact: true,
            extra_units: Vec::new(),
            deadline: Duration::from_secs(120),
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

/// Bytes of stdout the transport may return for a round: the caps of its sections plus framing.
fn stdout_cap(round: u8) -> usize {
    let caps: u64 = script::probes(round).map(|p| p.max_bytes + 4096).sum();
    usize::try_from(caps + (64 << 10)).unwrap_or(usize::MAX)
}

/// Statistics of one collection, for benchmarks and the CLI's `--verbose`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CollectStats {
    pub round1_bytes: u64,
    pub round2_bytes: u64,
    pub round1_ms: u64,
    pub round2_ms: u64,
}

/// Collects one host. See the crate docs.
pub async fn collect<E: Exec>(exec: &E, opts: &CollectOptions) -> Result<Snapshot, CollectError> {
    collect_with_stats(exec, opts).await.map(|(s, _)| s)
}

/// [`collect`], also returning byte and time statistics.
pub async fn collect_with_stats<E: Exec>(
    exec: &E,
    opts: &CollectOptions,
) -> Result<(Snapshot, CollectStats), CollectError> {
    let started = Instant::now();
    let host = exec.host().to_string();
    let mut stats = CollectStats::default();
    let mut snap = Snapshot {
        schema_version: probe_model::SCHEMA_VERSION,
        target: opts.target.clone(),
        collector_version: env!("CARGO_PKG_VERSION").to_string(),
        redacted: opts.redact,
        sudo: opts.sudo,
        ..Default::default()
    };
    // Round 1.
    let boundary = script::new_boundary();
    let text = script::build(opts, &boundary);
    let req = ExecRequest::new("sh -s")
        .with_stdin(text.into_bytes())
        .with_timeout(opts.deadline.saturating_sub(started.elapsed()))
        .with_caps(stdout_cap(1), 64 << 10);
    let out = match exec.exec(&req).await {
        Ok(o) => o,
        Err(e) => {
            let kind = if matches!(e.kind, probe_transport::ErrorKind::ExecTimeout { .. }) {
                CollectErrorKind::Deadline(opts.deadline)
            } else {
                CollectErrorKind::Transport(e)
            };
            return Err(CollectError {
                host,
                kind,
                partial: None,
            });
        }
    };
    stats.round1_bytes = out.stdout.len() as u64;
    stats.round1_ms = u64::try_from(out.elapsed.as_millis()).unwrap_or(u64::MAX);
    let framed = frame::parse(&out.stdout, &boundary);
    if framed.sections.is_empty() {
        let stderr = sanitize::line(out.stderr.get(..out.stderr.len().min(400)).unwrap_or(&[]));
        return Err(CollectError {
            host,
            kind: CollectErrorKind::NoOutput {
                status: out.exit_status,
                stderr,
            },
            partial: None,
        });
    }
    let mut ctx = parse::Ctx {
        boundary: boundary.clone(),
        ..Default::default()
    };
    let extra = plan::apply_round1(&mut snap, &mut ctx, &framed, out.stdout_truncated);
    if !framed.done {
        snap.sections.push(SectionReport {
            name: "round1".into(),
            status: if out.stdout_truncated {
                SectionStatus::Truncated
            } else {
                SectionStatus::Failed
            },
            bytes: out.stdout.len() as u64,
            duration_ms: Some(stats.round1_ms),
            exit_code: i32::try_from(out.exit_status).ok(),
            message: Some(format!(
                "script did not run to its end: {}",
                sanitize::line(out.stderr.get(..out.stderr.len().min(300)).unwrap_or(&[]))
            )),
        });
    }
    // Round 2: only what depends on round 1. Whatever happens here, round 1 is kept.
    let inputs = plan::round2_inputs(&snap, &ctx, &extra);
    let left = opts.deadline.saturating_sub(started.elapsed());
    if !inputs.is_empty() {
        if left < Duration::from_secs(3) {
            plan::round2_not_run(
                &mut snap,
                SectionStatus::TimedOut,
                "not run: no time left before the collection deadline",
            );
        } else {
            let b2 = script::new_boundary();
            let budget = left.saturating_sub(Duration::from_secs(2));
            let text = script::build_round2(opts, &b2, budget, &inputs);
            let req = ExecRequest::new("sh -s")
                .with_stdin(text.into_bytes())
                .with_timeout(left)
                .with_caps(stdout_cap(2), 64 << 10);
            match exec.exec(&req).await {
                Ok(o) => {
                    stats.round2_bytes = o.stdout.len() as u64;
                    stats.round2_ms = u64::try_from(o.elapsed.as_millis()).unwrap_or(u64::MAX);
                    let f = frame::parse(&o.stdout, &b2);
                    ctx.boundary = b2;
                    plan::apply_round2(&mut snap, &ctx, &f, &inputs);
                }
                Err(e) => {
                    let status = if matches!(e.kind, probe_transport::ErrorKind::ExecTimeout { .. })
                    {
                        SectionStatus::TimedOut
                    } else {
                        SectionStatus::Failed
                    };
                    let msg = format!(
                        "not collected: round 2 failed ({})",
                        sanitize::sanitize_line(&e.kind.to_string())
                    );
                    plan::round2_not_run(&mut snap, status, &msg);
                }
            }
        }
    }
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    snap.collected_at = i64::try_from(now).unwrap_or(0);
    snap.remote_clock = ctx.remote_clock;
    snap.duration_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    let hn = snap.host.hostname.clone().unwrap_or_else(|| host.clone());
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
    Ok((snap, stats))
}
