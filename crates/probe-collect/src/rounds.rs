//! Running the groups of both rounds concurrently, each on its own exec channel of the one
//! connection, and keeping what each returned.
//!
//! Round-1 groups start together (the transport keeps at most its channel limit open and
//! falls back to fewer when the server refuses one; a group whose channel is refused anyway,
//! all having asked at once, runs when another group's channel ends: `Channels`); a group
//! whose probes depend on a section of another group starts when that section has ended, and
//! is not run (recorded as such) when it timed out or found nothing. Round 2 starts as soon as the sections it is planned from
//! ([`ROUND2_NEEDS`]: round 1's `host` and `scan` groups) are in, while the rest of round 1
//! (the GPU tools) still runs; the round-2 group that also reads GPU sections (the compute
//! processes' owners and maps) starts as a wave of its own once those are in. Inside a group
//! the lanes run at once (`script::Group::lanes`; round 2's folded onto the host's CPUs). A
//! group that fails at the transport level costs only its own sections.

use std::future::Future;
use std::pin::Pin;
use std::task::Poll;
use std::time::{Duration, Instant};

use probe_model::{SectionStatus, Snapshot};
use probe_transport::{Exec, ExecOutput, ExecRequest, TransportError};

use crate::frame::{self, Framed, RawSection};
use crate::script::{self, Group, Round2Inputs};
use crate::{CollectOptions, CollectStats, GroupTiming, parse, plan, sanitize};

mod board;
mod channels;

use board::Board;
use channels::{Channels, refused};

/// Time kept, at the end of the deadline, for the client to give up channels and to parse.
const DEADLINE_MARGIN: Duration = Duration::from_millis(1500);

/// Sections round 2 is planned from (round 1's first channel: they end together).
const ROUND2_NEEDS: &[&str] = &[
    "host",
    "processes",
    "units",
    "containers",
    "history",
    "unit_state",
    "log_places",
];

/// Lanes a round-2 group runs at once when the host's CPU count is not known.
const ROUND2_LANES: usize = 4;

/// How long a round-2 wave waits for the round-1 sections it also reads (at most this, and a
/// tenth of the deadline), so a hung nvidia-smi costs its wave that grace, never its limit.
const ROUND2_WANTS_GRACE: Duration = Duration::from_millis(1500);

/// Round-2 groups that also read round-1 sections beyond [`ROUND2_NEEDS`], planned once those
/// are in, when the early plan says they are needed: `gpu_procs` reads the owners and maps of
/// nvidia-smi's compute processes. (The journal's units, read most recent first by their
/// `systemctl show` state, and the log files, models and Python environments that earlier
/// launches name in the shell histories come with the needs: `unit_state` and `history` run
/// on the same channel as `units`.)
const ROUND2_WAVES: &[Wave] = &[Wave {
    groups: &["gpu_procs"],
    wants: &["gpu_query", "gpu_apps"],
    wait_if: |_| true,
}];

/// Round-2 groups planned apart from the others.
struct Wave {
    groups: &'static [&'static str],
    /// Round-1 sections they also read.
    wants: &'static [&'static str],
    /// Whether, given the early plan, they wait for `wants` (otherwise they start with it).
    wait_if: fn(&Round2Inputs) -> bool,
}

/// What one group's run gave.
#[derive(Debug)]
pub struct GroupOut {
    pub group: Group,
    /// Framed output, `None` when the channel failed or the shell printed nothing framed.
    pub framed: Option<Framed>,
    pub error: Option<TransportError>,
    /// Exit status and stderr of a run that printed nothing framed.
    pub no_output: Option<(u32, String)>,
    /// The group was not run: (status, message) for each of its sections.
    pub skipped: Option<(SectionStatus, String)>,
    pub truncated: bool,
    pub bytes: u64,
    pub ms: u64,
    /// Milliseconds from the collection's start to this group's end.
    pub ended_ms: u64,
}

/// Round 2's outcome.
#[derive(Debug)]
pub enum Round2 {
    NotNeeded,
    NoTime,
    Ran {
        inputs: Box<Round2Inputs>,
        groups: Vec<GroupOut>,
    },
}

/// Both rounds as received.
#[derive(Debug)]
pub struct Rounds {
    pub boundary1: String,
    pub boundary2: String,
    pub round1: Vec<GroupOut>,
    pub round2: Round2,
    pub round2_started_ms: u64,
}

impl Rounds {
    pub fn stats(&self) -> CollectStats {
        let r2: &[GroupOut] = match &self.round2 {
            Round2::Ran { groups, .. } => groups,
            _ => &[],
        };
        let ran = |g: &&GroupOut| g.skipped.is_none();
        CollectStats {
            round1_bytes: self.round1.iter().map(|g| g.bytes).sum(),
            round2_bytes: r2.iter().map(|g| g.bytes).sum(),
            round1_ms: self.round1.iter().map(|g| g.ended_ms).max().unwrap_or(0),
            round2_ms: r2
                .iter()
                .map(|g| g.ended_ms.saturating_sub(self.round2_started_ms))
                .max()
                .unwrap_or(0),
            round2_started_ms: self.round2_started_ms,
            channels: u32::try_from(self.round1.iter().chain(r2).filter(ran).count())
                .unwrap_or(u32::MAX),
            group_ms_sum: self.round1.iter().chain(r2).map(|g| g.ms).sum(),
            groups: timings(&self.round1, 1).chain(timings(r2, 2)).collect(),
        }
    }
}

fn timings(groups: &[GroupOut], round: u8) -> impl Iterator<Item = GroupTiming> + '_ {
    groups
        .iter()
        .filter(|g| g.skipped.is_none())
        .map(move |g| GroupTiming {
            name: g.group.name.clone(),
            round,
            start_ms: g.ended_ms.saturating_sub(g.ms),
            end_ms: g.ended_ms,
        })
}

/// Polls every future until all are ready (the futures borrow the executor, so they cannot be
/// spawned as tasks).
pub async fn join_all<F: Future>(futs: Vec<F>) -> Vec<F::Output> {
    let mut futs: Vec<Pin<Box<F>>> = futs.into_iter().map(Box::pin).collect();
    let mut out: Vec<Option<F::Output>> = futs.iter().map(|_| None).collect();
    std::future::poll_fn(|cx| {
        let mut pending = false;
        for (f, slot) in futs.iter_mut().zip(out.iter_mut()) {
            if slot.is_none() {
                match f.as_mut().poll(cx) {
                    Poll::Ready(v) => *slot = Some(v),
                    Poll::Pending => pending = true,
                }
            }
        }
        if pending {
            Poll::Pending
        } else {
            Poll::Ready(())
        }
    })
    .await;
    out.into_iter().flatten().collect()
}

fn ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

struct RoundCtx<'a, E: Exec> {
    exec: &'a E,
    channels: &'a Channels,
    opts: &'a CollectOptions,
    started: Instant,
    boundary: &'a str,
    inputs: &'a Round2Inputs,
    /// The script's own budget ends this long before the transport's deadline.
    budget_until: Duration,
    /// The transport's deadline for every group of the round.
    deadline: Duration,
}

async fn run_group<E: Exec>(rc: &RoundCtx<'_, E>, board: &Board, group: Group) -> GroupOut {
    let mut out = GroupOut {
        group,
        framed: None,
        error: None,
        no_output: None,
        skipped: None,
        truncated: false,
        bytes: 0,
        ms: 0,
        ended_ms: 0,
    };
    if blocked_by_dependencies(rc, board, &mut out).await {
        return out;
    }
    let Some((result, t)) = exec_on_a_channel(rc, &mut out).await else {
        board.add(out.framed.as_ref(), &out.group);
        return out;
    };
    read_output(rc, &mut out, result);
    out.ms = ms(t.elapsed());
    out.ended_ms = ms(rc.started.elapsed());
    tracing::debug!(
        group = %out.group.name,
        ms = out.ms,
        ended_ms = out.ended_ms,
        bytes = out.bytes,
        sections = out.framed.as_ref().map_or(0, |f| f.sections.len()),
        error = ?out.error.as_ref().map(ToString::to_string),
        "collection group finished"
    );
    board.add(out.framed.as_ref(), &out.group);
    out
}

/// Waits for the sections the group reads; true when one of them blocks it (the group is then
/// reported not run, with why, and on the board).
async fn blocked_by_dependencies<E: Exec>(
    rc: &RoundCtx<'_, E>,
    board: &Board,
    out: &mut GroupOut,
) -> bool {
    let after: Vec<&str> = out.group.after.iter().map(String::as_str).collect();
    if after.is_empty() {
        return false;
    }
    let deps = board.wait(&after).await;
    let Some((rc_code, why)) = deps.iter().find_map(dependency_blocks) else {
        return false;
    };
    out.framed = Some(not_run(&out.group, rc_code));
    out.skipped = Some(why);
    board.add(out.framed.as_ref(), &out.group);
    out.ended_ms = ms(rc.started.elapsed());
    true
}

/// Runs the group's script on a channel: the result and when it started, or `None` when no
/// time was left (the group then reported not run). A group whose channel the server refused
/// runs again once another group's channel has ended, with what is left of the deadline; a
/// refusal with nothing else running is final.
async fn exec_on_a_channel<E: Exec>(
    rc: &RoundCtx<'_, E>,
    out: &mut GroupOut,
) -> Option<(Result<ExecOutput, TransportError>, Instant)> {
    loop {
        // The transport may take a moment to give up on a channel at its deadline, and parsing
        // everything takes the client a moment too (more on a loaded machine): ask it to stop
        // a little before ours.
        let left = rc
            .deadline
            .saturating_sub(rc.started.elapsed())
            .saturating_sub(DEADLINE_MARGIN);
        let budget = rc.budget_until.saturating_sub(rc.started.elapsed());
        if left < Duration::from_secs(1) || budget.is_zero() {
            out.framed = Some(not_run(&out.group, 201));
            out.skipped = Some((
                SectionStatus::TimedOut,
                "not run: collection deadline reached".into(),
            ));
            return None;
        }
        let text = script::build_group(
            rc.opts,
            rc.boundary,
            budget,
            &out.group,
            rc.inputs,
            lane_width(&out.group, rc.inputs),
        );
        let req = ExecRequest::new("sh -s")
            .with_stdin(text.into_bytes())
            .with_timeout(left)
            .with_caps(out.group.stdout_cap(), 64 << 10);
        let t = Instant::now();
        let seen = rc.channels.freed();
        match rc.channels.exec(rc.exec, &req).await {
            Err(e) if refused(&e) && rc.channels.wait_for_one(seen).await => {
                tracing::debug!(
                    group = %out.group.name,
                    "channel refused; running after another group's channel ended"
                );
            }
            result => return Some((result, t)),
        }
    }
}

/// The group's output framed into sections (or what it said when it framed none), or what a
/// channel given up at the deadline had sent.
fn read_output<E: Exec>(
    rc: &RoundCtx<'_, E>,
    out: &mut GroupOut,
    result: Result<ExecOutput, TransportError>,
) {
    match result {
        Ok(o) => {
            out.bytes = o.stdout.len() as u64;
            out.truncated = o.stdout_truncated;
            let f = frame::parse(&o.stdout, rc.boundary);
            if f.sections.is_empty() {
                let stderr = sanitize::line(o.stderr.get(..o.stderr.len().min(400)).unwrap_or(&[]));
                out.no_output = Some((o.exit_status, stderr));
            } else {
                out.framed = Some(f);
            }
        }
        Err(e) => {
            // Given up at the transport's deadline: the sections received before it are kept
            // (the one it was in is incomplete and marked so by `mark_groups`).
            out.bytes = e.partial_stdout.len() as u64;
            let f = frame::parse(&e.partial_stdout, rc.boundary);
            out.framed = (!f.sections.is_empty()).then_some(f);
            out.error = Some(e);
        }
    }
}

/// How many lanes of `g` run at once: round 1 as `configs/probes.toml` gives them (the host's
/// CPUs are not known yet; its lanes mostly wait on slow tools), round 2 at most one a CPU of
/// the host (what round 1's `host` section said, else [`ROUND2_LANES`]).
fn lane_width(g: &Group, inputs: &Round2Inputs) -> usize {
    if g.probes.first().is_none_or(|p| p.round < 2) {
        return usize::MAX;
    }
    inputs
        .cpus
        .and_then(|c| usize::try_from(c).ok())
        .unwrap_or(ROUND2_LANES)
        .clamp(1, 16)
}

/// The sections of a group that was not run, with the exit code the script itself gives a
/// section it does not run (200: its dependency timed out, 201: no time left, 3: nothing
/// there).
fn not_run(g: &Group, rc: i32) -> Framed {
    Framed {
        sections: g
            .probes
            .iter()
            .map(|p| RawSection {
                name: p.name.clone(),
                rc: Some(rc),
                complete: true,
                ..Default::default()
            })
            .collect(),
        done: true,
    }
}

/// Why a section that others depend on keeps them from running: it timed out (the program
/// hangs) or found nothing to ask. (exit code for the skipped sections, status and message)
fn dependency_blocks(dep: &RawSection) -> Option<(i32, (SectionStatus, String))> {
    let timed_out = (
        SectionStatus::TimedOut,
        format!("not run: {} timed out", dep.name),
    );
    match dep.rc {
        Some(124 | 137 | 200 | 201) => Some((200, timed_out)),
        Some(3 | 127) => Some((3, (SectionStatus::NotPresent, String::new()))),
        None => Some((
            200,
            (
                SectionStatus::Failed,
                format!("{NOT_RUN}{}{DID_NOT_FINISH}", dep.name),
            ),
        )),
        _ => None,
    }
}

/// Runs round 1 and, as soon as its inputs are known, round 2; `hook` is given round 1's view
/// that round 2 is planned from (the snapshot of [`ROUND2_NEEDS`], parsed once for both) and runs
/// while the rest of the collection runs (the servers' first scrape).
pub async fn both_rounds<E, H, F, T>(
    exec: &E,
    opts: &CollectOptions,
    started: Instant,
    hook: H,
) -> (Rounds, Option<T>)
where
    E: Exec,
    H: FnOnce(Snapshot) -> F,
    F: Future<Output = T>,
{
    let boundary1 = script::new_boundary();
    let boundary2 = script::new_boundary();
    let none = Round2Inputs::default();
    let channels = Channels::default();
    let r1 = RoundCtx {
        exec,
        channels: &channels,
        opts,
        started,
        boundary: &boundary1,
        inputs: &none,
        budget_until: script::round1_budget(opts.deadline)
            .min(opts.deadline.saturating_sub(Duration::from_secs(1))),
        deadline: opts.deadline,
    };
    let board = Board::default();
    let round1 = join_all(
        script::groups(1)
            .into_iter()
            .map(|g| run_group(&r1, &board, g))
            .collect(),
    );
    let round2 = round_two(
        exec, &channels, opts, started, &board, &boundary1, &boundary2,
    );
    let early = async { Some(hook(board.view().await).await) };
    let (round1, (round2, round2_started_ms), early) = tokio::join!(round1, round2, early);
    let rounds = Rounds {
        boundary1,
        boundary2,
        round1,
        round2,
        round2_started_ms,
    };
    (rounds, early)
}

/// Round 2: planned as soon as [`ROUND2_NEEDS`] are in, its groups started at once, except
/// those of [`ROUND2_WAVES`], each planned again once the round-1 sections it also reads are
/// in (or their grace has passed). A wave whose plan finds nothing to read runs only when the
/// early plan found something; the round is not needed when no plan finds anything.
async fn round_two<E: Exec>(
    exec: &E,
    channels: &Channels,
    opts: &CollectOptions,
    started: Instant,
    board: &Board,
    boundary1: &str,
    boundary2: &str,
) -> (Round2, u64) {
    let needed = board.wait(ROUND2_NEEDS).await;
    let round2_started_ms = ms(started.elapsed());
    let (scratch, ctx, extra) = scratch_of(opts, boundary1, needed.clone());
    let early = plan::round2_inputs(&scratch, &ctx, &extra);
    board.set_view(scratch);
    tracing::debug!(
        started_ms = round2_started_ms,
        empty = early.is_empty(),
        "round 2 planned"
    );
    let early_empty = early.is_empty();
    if !early_empty && opts.deadline.saturating_sub(started.elapsed()) < Duration::from_secs(3) {
        return (Round2::NoTime, round2_started_ms);
    }
    // The waves of ROUND2_WAVES first, the rest last: a wave that starts at once asks for its
    // channels before the others (the journal, the slowest, before the file reads).
    let mut waves: Vec<(&[&str], Vec<Group>)> = ROUND2_WAVES
        .iter()
        .map(|w| {
            let wants: &[&str] = if (w.wait_if)(&early) { w.wants } else { &[] };
            (wants, Vec::new())
        })
        .collect();
    waves.push((&[], Vec::new()));
    for g in script::groups(2) {
        let w = ROUND2_WAVES
            .iter()
            .position(|w| w.groups.contains(&g.name.as_str()))
            .unwrap_or(ROUND2_WAVES.len());
        if let Some((_, gs)) = waves.get_mut(w) {
            gs.push(g);
        }
    }
    let grace = ROUND2_WANTS_GRACE.min(opts.deadline / 10);
    let runs = waves.into_iter().map(|(wants, groups)| {
        let (early, needed) = (&early, &needed);
        async move {
            let inputs = if wants.is_empty() {
                early.clone()
            } else {
                let _ = tokio::time::timeout(grace, board.wait(wants)).await;
                let mut all = needed.clone();
                all.extend(board.present(wants));
                plan_round2(opts, boundary1, all)
            };
            if early_empty && inputs.is_empty() {
                return (inputs, Vec::new());
            }
            let rc = round2_ctx(exec, channels, opts, started, boundary2, &inputs);
            let outs = run_wave(&rc, groups).await;
            (inputs, outs)
        }
    });
    let mut inputs = Round2Inputs::default();
    let mut groups = Vec::new();
    for (i, outs) in join_all(runs.collect()).await {
        inputs.absorb(i);
        groups.extend(outs);
    }
    if groups.is_empty() {
        return (Round2::NotNeeded, round2_started_ms);
    }
    (
        Round2::Ran {
            inputs: Box::new(inputs),
            groups,
        },
        round2_started_ms,
    )
}

fn round2_ctx<'a, E: Exec>(
    exec: &'a E,
    channels: &'a Channels,
    opts: &'a CollectOptions,
    started: Instant,
    boundary: &'a str,
    inputs: &'a Round2Inputs,
) -> RoundCtx<'a, E> {
    RoundCtx {
        exec,
        channels,
        opts,
        started,
        boundary,
        inputs,
        budget_until: opts.deadline.saturating_sub(Duration::from_secs(3)),
        deadline: opts.deadline,
    }
}

/// Runs groups of one round concurrently (a group waits only for sections of its own wave).
async fn run_wave<E: Exec>(rc: &RoundCtx<'_, E>, groups: Vec<Group>) -> Vec<GroupOut> {
    let board = Board::default();
    join_all(
        groups
            .into_iter()
            .map(|g| run_group(rc, &board, g))
            .collect(),
    )
    .await
}

/// Round-2 inputs from the sections they depend on, parsed on their own (the whole snapshot
/// is assembled once, later, from everything).
fn plan_round2(opts: &CollectOptions, boundary: &str, needed: Vec<RawSection>) -> Round2Inputs {
    let (scratch, ctx, extra) = scratch_of(opts, boundary, needed);
    plan::round2_inputs(&scratch, &ctx, &extra)
}

/// A snapshot of `needed` alone, with what parsing it left for planning.
fn scratch_of(
    opts: &CollectOptions,
    boundary: &str,
    needed: Vec<RawSection>,
) -> (
    Snapshot,
    parse::Ctx,
    std::collections::BTreeMap<u32, parse::processes::ProcExtra>,
) {
    let mut scratch = Snapshot {
        sudo: opts.sudo,
        ..Default::default()
    };
    let mut ctx = parse::Ctx {
        boundary: boundary.to_string(),
        ..Default::default()
    };
    let framed = Framed {
        sections: needed,
        done: true,
    };
    let extra = plan::apply_round1(&mut scratch, &mut ctx, &framed, false);
    (scratch, ctx, extra)
}

/// How the messages of sections lost with their channel begin (status `Failed`; at the
/// deadline they are `TimedOut`), and of those not run because a section they depend on was.
const NOT_COLLECTED: &str = "not collected: ";
const CUT_OFF: &str = "cut off while it ran (";
const NOT_RUN: &str = "not run: ";
const DID_NOT_FINISH: &str = " did not finish";

/// Whether a section was lost to the connection (a refused or dropped channel, a lost link)
/// rather than reported by the host: `Failed` with one of the messages above.
pub fn lost(r: &probe_model::SectionReport) -> bool {
    let msg = r.message.as_deref().unwrap_or("");
    r.status == SectionStatus::Failed
        && (msg.starts_with(NOT_COLLECTED)
            || msg.starts_with(CUT_OFF)
            || (msg.starts_with(NOT_RUN) && msg.ends_with(DID_NOT_FINISH)))
}

/// Status and message of sections lost with their channel.
fn transport_failure(e: &TransportError, g: &Group) -> (SectionStatus, String) {
    let status = if matches!(e.kind, probe_transport::ErrorKind::ExecTimeout { .. }) {
        SectionStatus::TimedOut
    } else {
        SectionStatus::Failed
    };
    let round = g.probes.first().map_or(1, |p| p.round);
    (
        status,
        format!(
            "{NOT_COLLECTED}round {round} failed ({})",
            sanitize::sanitize_line(&e.kind.to_string())
        ),
    )
}

/// Message of a section its channel's failure cut off in the middle.
fn cut_off(g: &GroupOut) -> String {
    let why = g.error.as_ref().map_or_else(String::new, |e| {
        sanitize::sanitize_line(&e.kind.to_string())
    });
    format!("{CUT_OFF}{why}); what it printed before is kept")
}

/// Every group of the round failed at the transport level: the first failure.
pub fn all_failed(groups: &[GroupOut]) -> Option<(SectionStatus, String)> {
    if groups
        .iter()
        .any(|g| g.error.is_none() || g.framed.is_some())
    {
        return None;
    }
    groups
        .iter()
        .find_map(|g| g.error.as_ref().map(|e| transport_failure(e, &g.group)))
}

/// One framed output of all groups of a round.
pub fn merged(groups: &[GroupOut]) -> Framed {
    let mut f = Framed {
        sections: Vec::new(),
        done: true,
    };
    for g in groups {
        match &g.framed {
            Some(x) => {
                f.sections.extend(x.sections.iter().cloned());
                f.done &= x.done;
            }
            None => f.done &= g.skipped.is_some(),
        }
    }
    f
}

/// Sections whose group did not run, failed, or whose framing was broken, get a status and a
/// message that say so (they are otherwise reported as never reached).
pub fn mark_groups(snap: &mut Snapshot, groups: &[GroupOut], framed: &Framed) {
    for g in groups {
        let why: Option<(SectionStatus, String)> = if let Some(s) = &g.skipped {
            (!s.1.is_empty()).then(|| s.clone())
        } else if let Some(e) = &g.error {
            Some(transport_failure(e, &g.group))
        } else {
            g.no_output.as_ref().map(|(status, stderr)| {
                (
                    SectionStatus::Failed,
                    format!("the script printed nothing framed (exit status {status}): {stderr}"),
                )
            })
        };
        for p in &g.group.probes {
            let got = framed.sections.iter().find(|s| s.name == p.name);
            let why = match (&why, got) {
                (Some(w), None) => Some(w.clone()),
                (Some(w), Some(_)) if g.skipped.is_some() => Some(w.clone()),
                (Some((status, _)), Some(s)) if !s.complete => Some((*status, cut_off(g))),
                (_, Some(s)) => s.tampered.clone().map(|t| {
                    (
                        SectionStatus::Failed,
                        format!("tampered: {t}; what it said is not trusted"),
                    )
                }),
                (None, None) => None,
            };
            let Some((status, msg)) = why else { continue };
            if let Some(r) = snap.sections.iter_mut().find(|r| r.name == p.name) {
                r.status = status;
                r.message = (!msg.is_empty()).then_some(msg);
            } else {
                snap.sections.push(probe_model::SectionReport {
                    name: p.name.clone(),
                    status,
                    message: (!msg.is_empty()).then_some(msg),
                    ..Default::default()
                });
            }
        }
    }
}

/// The names in the round-2 schedule (`needs`, each wave's groups and wants) that are not
/// round-1 sections or round-2 groups of `configs/probes.toml`.
#[cfg(test)]
fn unknown_schedule_names(needs: &[&str], waves: &[Wave]) -> Vec<String> {
    let round1: Vec<String> = (crate::config::probes().probes.iter())
        .filter(|p| p.round == 1)
        .map(|p| p.name.clone())
        .collect();
    let groups2: Vec<String> = script::groups(2).into_iter().map(|g| g.name).collect();
    let sections = needs
        .iter()
        .chain(waves.iter().flat_map(|w| w.wants.iter()));
    let not_sections = sections.filter(|s| !round1.iter().any(|r| r == *s));
    let groups = waves.iter().flat_map(|w| w.groups.iter());
    let not_groups = groups.filter(|g| !groups2.iter().any(|r| r == *g));
    not_sections
        .map(|s| format!("section {s}"))
        .chain(not_groups.map(|g| format!("group {g}")))
        .collect()
}

#[cfg(test)]
mod tests;
