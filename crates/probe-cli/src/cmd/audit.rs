//! `probe audit --inventory FILE`: collect a fleet (or one shard of it) with bounded concurrency,
//! report drift against each host's previous snapshot, stream JSON Lines, write Prometheus
//! metrics, record every host's outcome in the store; `probe audit report` reads those back for
//! the whole fleet ([`report`]); outliers of each group ([`outliers::group_outliers`]).

mod outliers;
mod report;
use crate::shard;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use probe_model::{
    AuditRecord, AuditStatus, AuditSummary, EngineVersion, FleetView, GroupOutliers, LaunchConfig,
    SCHEMA_VERSION, Snapshot, exit_codes,
};

use super::{Ctx, collect_live};
use crate::args::{AuditArgs, AuditCommand, FailOn, Format, ProgressChoice};
use crate::errors::{ExpectedError, HostFailure, Result};
use crate::inventory::{self, InventoryHost};
use crate::render;
use crate::settings::Settings;

/// Changes named per host in the summary table.
const TOP_CHANGES: usize = 3;

pub async fn run(ctx: &Ctx, args: AuditArgs) -> Result<u8> {
    if let Some(AuditCommand::Report(report_args)) = args.command {
        return report::run(ctx, report_args);
    }
    let Some(inventory_path) = args.inventory.clone() else {
        return Err(ExpectedError::Usage(
            "probe audit needs --inventory FILE (or `probe audit report` to read the store)".into(),
        ));
    };
    let shard = requested_shard(&args)?;
    let started = Instant::now();
    let started_at = jiff::Timestamp::now().as_second();
    let selected = selected_hosts(&inventory_path, &args)?;
    // A shard may be empty (more runners than hosts): it audits nothing and says so.
    let hosts = match shard {
        Some(shard) => shard.select(&selected),
        None => selected.clone(),
    };
    let store = ctx.open_store_for_collection()?;
    let jobs = args.jobs.unwrap_or(ctx.settings.audit_jobs).max(1);
    let deadline = AuditDeadline::of(started, ctx.settings.deadline, hosts.len(), jobs);
    store.set_deadline(deadline.at);
    let run = audit_run(started_at, &inventory_path, shard);
    // Jump hosts need settings the target string cannot carry: a generated client config.
    let generated = generated_ssh_config(&hosts, &ctx.settings)
        .map_err(|err| ExpectedError::Other(format!("cannot write temporary ssh config: {err}")))?;
    let ctx = with_ssh_config(ctx, generated.as_ref().map(|(_, path)| path));
    let collections = Collections::start(&ctx, &args, &store, &hosts, generated.is_some());
    let gathered = gather(
        &ctx,
        &args,
        &store,
        &run,
        &deadline,
        collections,
        hosts.len(),
    )
    .await?;
    let fail_on = if args.fail_on == FailOn::Drift {
        ctx.settings.audit_fail_on.unwrap_or(FailOn::Drift)
    } else {
        args.fail_on
    };
    let summary = summarize(&gathered, &inventory_path, started, started_at, fail_on);
    if let Some(path) = args
        .prometheus
        .as_ref()
        .or(ctx.settings.audit_prometheus.as_ref())
    {
        write_prometheus(path, &gathered.records, &summary, shard)?;
    }
    let by_name = generated.is_some();
    let outliers = fleet_outliers(&ctx, &args, &*store, &selected, by_name, &gathered.fresh);
    let shard_note = shard.map(|shard| {
        format!(
            "shard {shard}: {} of the inventory's {} selected hosts",
            gathered.records.len(),
            selected.len()
        )
    });
    ctx.write(&output(
        &ctx,
        &args,
        &gathered.records,
        &summary,
        &outliers,
        shard_note,
    ))?;
    Ok(summary.exit_code)
}

/// The inventory's hosts in the groups and with the tags asked for; an error where none is.
fn selected_hosts(inventory_path: &Path, args: &AuditArgs) -> Result<Vec<InventoryHost>> {
    let inventory =
        inventory::load(inventory_path).map_err(|err| ExpectedError::Config(err.to_string()))?;
    let selected = inventory::select(&inventory.hosts, &args.groups, &args.tags);
    if selected.is_empty() {
        return Err(ExpectedError::Usage(format!(
            "{}: no host matches the selected groups/tags",
            inventory_path.display()
        )));
    }
    Ok(selected)
}

/// The outliers of each group among the `selected` hosts (`by_name`: reached by their
/// inventory names, through a generated ssh config), where `--outliers` asks for them. The
/// collections are done and reported either way: a store that fails here costs only the
/// outliers, and says so.
fn fleet_outliers(
    ctx: &Ctx,
    args: &AuditArgs,
    store: &dyn probe_store::SnapshotStore,
    selected: &[InventoryHost],
    by_name: bool,
    fresh: &BTreeMap<String, FleetView>,
) -> Vec<GroupOutliers> {
    if !args.outliers {
        return Vec::new();
    }
    let members = outliers::members_of(selected, by_name);
    outliers::group_outliers(store, &members, fresh, &args.groups).unwrap_or_else(|err| {
        ctx.printer.warn(&format!("outliers not computed: {err}"));
        Vec::new()
    })
}

/// The audit's overall deadline: each host's `--deadline` for every turn of the `-j` lanes,
/// and one more for the records and the outliers after the last host. The store is waited for
/// no longer than that ([`probe_store::SnapshotStore::set_deadline`]): a stalled shared store
/// costs each host at most its own bound, and the audit as a whole ends.
#[derive(Debug, Clone, Copy)]
struct AuditDeadline {
    at: Instant,
    total: std::time::Duration,
    per_host: std::time::Duration,
    turns: u32,
}

impl AuditDeadline {
    fn of(started: Instant, per_host: std::time::Duration, hosts: usize, jobs: usize) -> Self {
        let turns = u32::try_from(hosts.div_ceil(jobs.max(1))).unwrap_or(u32::MAX);
        let total = per_host.saturating_mul(turns.saturating_add(1));
        AuditDeadline {
            at: started + total,
            total,
            per_host,
            turns,
        }
    }

    /// The one line that says the store is no longer waited for.
    fn passed_line(&self, store: &str) -> String {
        format!(
            "the audit's deadline passed ({}s: --deadline {}s for each of {} turn{} of -j, and              one more): the store {store} is no longer waited for; audit records from here on              are not stored, and snapshots not stored are kept in the spool",
            self.total.as_secs(),
            self.per_host.as_secs(),
            self.turns,
            if self.turns == 1 { "" } else { "s" }
        )
    }
}

/// This run as the store records it.
fn audit_run(
    started_at: i64,
    inventory_path: &Path,
    shard: Option<shard::Shard>,
) -> probe_store::AuditRun {
    probe_store::AuditRun {
        run_id: format!(
            "{started_at}-{}-{}",
            probe_store::runner_name(),
            std::process::id()
        ),
        inventory: inventory_path.display().to_string(),
        shard: shard.map(|shard| shard.to_string()),
        runner: probe_store::runner_name(),
        started_at,
    }
}

/// The node-exporter textfile (`--prometheus FILE`), written atomically.
fn write_prometheus(
    path: &Path,
    records: &[AuditRecord],
    summary: &AuditSummary,
    shard: Option<shard::Shard>,
) -> Result<()> {
    let text = crate::prometheus::render_with(
        records,
        summary,
        shard.map(|shard| shard.to_string()).as_deref(),
    );
    crate::prometheus::write_atomic(path, text.as_bytes())
        .map_err(|err| ExpectedError::file(path, err))
}

/// `ctx` with the generated client configuration in effect, when there is one.
fn with_ssh_config(ctx: &Ctx, generated: Option<&PathBuf>) -> Ctx {
    match generated {
        Some(path) => {
            let mut settings = (*ctx.settings).clone();
            settings.ssh_config = Some(path.clone());
            Ctx {
                settings: Arc::new(settings),
                ..ctx.clone()
            }
        }
        None => ctx.clone(),
    }
}

/// One host's collection: its place in the inventory, its record, its snapshot when kept (as
/// the fleet comparison reads it).
type HostOutcome = (usize, AuditRecord, Option<FleetView>);

/// The audit's collections: at most `--jobs` running, the next host started as one ends, so a
/// host waiting for its turn is its inventory entry only (spawned all at once with their
/// state inline, 1,000 waiting hosts held 14 MB in heaptrack).
struct Collections<'h> {
    running: tokio::task::JoinSet<HostOutcome>,
    waiting: std::iter::Enumerate<std::slice::Iter<'h, InventoryHost>>,
    ctx: Ctx,
    store: super::Store,
    /// Analyses at once: one per CPU, so hundreds of finished hosts do not each hold an
    /// analysis in memory while they share the same cores.
    analyses: Arc<tokio::sync::Semaphore>,
    no_store: bool,
    keep_views: bool,
    generated_config: bool,
}

impl<'h> Collections<'h> {
    /// Starts the first `--jobs` hosts.
    fn start(
        ctx: &Ctx,
        args: &AuditArgs,
        store: &super::Store,
        hosts: &'h [InventoryHost],
        generated_config: bool,
    ) -> Collections<'h> {
        let cpus = std::thread::available_parallelism().map_or(2, std::num::NonZero::get);
        let mut collections = Collections {
            running: tokio::task::JoinSet::new(),
            waiting: hosts.iter().enumerate(),
            ctx: ctx.clone(),
            store: Arc::clone(store),
            analyses: Arc::new(tokio::sync::Semaphore::new(cpus)),
            no_store: args.no_store,
            keep_views: args.outliers,
            generated_config,
        };
        let jobs = args.jobs.unwrap_or(ctx.settings.audit_jobs).max(1);
        // (The audit's deadline counts turns of these lanes: `AuditDeadline::of`.)
        for _ in 0..jobs {
            collections.start_next();
        }
        collections
    }

    /// The next host that ends (any order), with the host after the last started in its place.
    async fn next(&mut self) -> Option<Result<HostOutcome, tokio::task::JoinError>> {
        let joined = self.running.join_next().await?;
        self.start_next();
        Some(joined)
    }

    fn start_next(&mut self) {
        let Some((index, host)) = self.waiting.next() else {
            return;
        };
        let target = if self.generated_config {
            host.name.clone()
        } else {
            host.target()
        };
        let one = collect_one(
            self.ctx.clone(),
            Arc::clone(&self.store),
            host.clone(),
            target,
            self.no_store,
            self.keep_views,
            Arc::clone(&self.analyses),
        );
        self.running.spawn(async move {
            let (record, view) = one.await;
            (index, record, view)
        });
    }
}

/// One host: collected, stored, and its drift analysed (at most one analysis per CPU); its
/// snapshot as the fleet comparison reads it.
async fn collect_one(
    ctx: Ctx,
    store: super::Store,
    host: InventoryHost,
    target: String,
    no_store: bool,
    keep_view: bool,
    analyses: Arc<tokio::sync::Semaphore>,
) -> (AuditRecord, Option<FleetView>) {
    let host_started = Instant::now();
    let result = collect_live(&ctx, &store, &target, no_store, false).await;
    let view = result
        .as_ref()
        .ok()
        .filter(|_| keep_view)
        .map(|live| FleetView::of(live.snapshot.clone()));
    // The drift analysis is CPU work: on a blocking thread, as the store's is.
    let name = host.name.clone();
    let _analysis = analyses.acquire_owned().await;
    let record =
        tokio::task::spawn_blocking(move || record_for(&host, &target, result, host_started))
            .await
            .unwrap_or_else(|err| AuditRecord {
                schema_version: SCHEMA_VERSION,
                record_type: probe_model::RecordType::Host,
                host: name,
                status: AuditStatus::Error,
                error: Some(format!("internal error in the drift analysis: {err}")),
                ..AuditRecord::default()
            });
    (record, view)
}

/// What the audit's collections gave, in inventory order.
struct Gathered {
    records: Vec<AuditRecord>,
    /// Fresh snapshots by host, as the fleet comparison reads them (kept for `--outliers`).
    fresh: BTreeMap<String, FleetView>,
    failed: usize,
    /// Hosts collected whose snapshot the store did not take.
    not_stored: usize,
}

/// Waits for every collection: records stored and streamed (`--jsonl`) as they finish,
/// progress shown.
async fn gather(
    ctx: &Ctx,
    args: &AuditArgs,
    store: &super::Store,
    run: &probe_store::AuditRun,
    deadline: &AuditDeadline,
    mut collections: Collections<'_>,
    total: usize,
) -> Result<Gathered> {
    let progress = progress_bar(ctx, args, total);
    let mut records: Vec<(usize, AuditRecord)> = Vec::new();
    let mut fresh: BTreeMap<String, FleetView> = BTreeMap::new();
    let mut failed = 0usize;
    let mut not_stored = 0usize;
    let mut deadline_said = false;
    while let Some(joined) = collections.next().await {
        let (index, record, snapshot) =
            joined.map_err(|err| ExpectedError::Other(format!("internal error: {err}")))?;
        if let Some(snapshot) = snapshot {
            fresh.insert(record.host.clone(), snapshot);
        }
        if !args.no_store
            && let Err(err) = store.record_audit(run, &record, jiff::Timestamp::now().as_second())
        {
            if !err.is_deadline() {
                ctx.printer
                    .warn(&format!("{}: audit record not stored: {err}", record.host));
            } else if !deadline_said {
                // Said once: every later wait for the store ends the same way.
                ctx.printer.warn(&deadline.passed_line(&store.location()));
                deadline_said = true;
            }
        }
        if !record.status.collected() {
            failed += 1;
        } else if let Some(line) = &record.error {
            // A collected host carries an error only when its snapshot was not stored.
            ctx.printer.warn(line);
            not_stored += 1;
        }
        if args.jsonl {
            ctx.write(&render::json::line(&record))?;
        }
        if let Some(bar) = &progress {
            bar.set_message(format!("{failed} failed,"));
            bar.inc(1);
        }
        records.push((index, record));
    }
    if let Some(bar) = &progress {
        bar.finish_and_clear();
    }
    records.sort_by_key(|(index, _)| *index);
    Ok(Gathered {
        records: records.into_iter().map(|(_, record)| record).collect(),
        fresh,
        failed,
        not_stored,
    })
}

/// The progress bar on stderr (`--progress`; never with `--jsonl`).
fn progress_bar(ctx: &Ctx, args: &AuditArgs, total: usize) -> Option<ProgressBar> {
    let show = match args.progress {
        ProgressChoice::Always => true,
        ProgressChoice::Never => false,
        ProgressChoice::Auto => ctx.printer.stderr_tty,
    } && !args.jsonl;
    if !show {
        return None;
    }
    let bar = ProgressBar::with_draw_target(Some(total as u64), ProgressDrawTarget::stderr());
    if let Ok(style) =
        ProgressStyle::with_template("{spinner} [{bar:30}] {pos}/{len} hosts, {msg} ETA {eta}")
    {
        bar.set_style(style.progress_chars("=> "));
    }
    bar.set_message("0 failed,");
    bar.enable_steady_tick(std::time::Duration::from_millis(200));
    Some(bar)
}

/// The run's summary, with the exit code `--fail-on` asks for.
fn summarize(
    gathered: &Gathered,
    inventory_path: &Path,
    started: Instant,
    started_at: i64,
    fail_on: FailOn,
) -> AuditSummary {
    let records = &gathered.records;
    let failed = gathered.failed;
    let count = |status: AuditStatus| records.iter().filter(|r| r.status == status).count();
    let changed = count(AuditStatus::Changed);
    let partial = count(AuditStatus::Partial);
    let exit_code = exit_code(
        fail_on,
        Outcomes {
            key_refused: count(AuditStatus::HostKeyRefused),
            failed,
            not_stored: gathered.not_stored,
            partial,
            changed,
        },
    );
    AuditSummary {
        schema_version: SCHEMA_VERSION,
        record_type: probe_model::RecordType::Summary,
        inventory: inventory_path.display().to_string(),
        hosts: records.len(),
        ok: count(AuditStatus::Ok),
        changed,
        partial,
        failed,
        started_at,
        finished_at: jiff::Timestamp::now().as_second(),
        duration_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
        exit_code,
    }
}

/// How many hosts ended each way that can fail an audit.
#[derive(Debug, Clone, Copy)]
struct Outcomes {
    /// Hosts whose key was refused (a possible impostor); also counted in `failed`.
    key_refused: usize,
    /// Hosts not collected, for any reason.
    failed: usize,
    /// Hosts collected and reported whose snapshot was not stored.
    not_stored: usize,
    /// Hosts collected whose snapshot lost sections to the connection.
    partial: usize,
    /// Hosts that drifted.
    changed: usize,
}

/// The exit status by severity: a refused host key (4) is never masked by a failed host (3),
/// a failed host not by an unstored snapshot (5), an unstored snapshot not by one that lost
/// sections (6, as `probe host`), and none of them by drift (1), in every `--fail-on` mode that
/// reports them.
fn exit_code(fail_on: FailOn, outcomes: Outcomes) -> u8 {
    let reports_drift = fail_on == FailOn::Drift;
    let reports_failures = matches!(fail_on, FailOn::Drift | FailOn::Error);
    if reports_failures && outcomes.key_refused > 0 {
        exit_codes::HOST_KEY_REFUSED
    } else if reports_failures && outcomes.failed > 0 {
        exit_codes::HOSTS_FAILED
    } else if reports_failures && outcomes.not_stored > 0 {
        exit_codes::NOT_STORED
    } else if reports_failures && outcomes.partial > 0 {
        exit_codes::INCOMPLETE
    } else if reports_drift && outcomes.changed > 0 {
        exit_codes::DIFFERENCES
    } else {
        exit_codes::OK
    }
}

/// The audit's output: JSON lines (outliers, then the summary; the records went out as they
/// came), one JSON document, or the summary table.
fn output(
    ctx: &Ctx,
    args: &AuditArgs,
    records: &[AuditRecord],
    summary: &AuditSummary,
    outliers: &[GroupOutliers],
    shard_note: Option<String>,
) -> String {
    if args.jsonl {
        let mut text = String::new();
        for group in outliers {
            text.push_str(&render::json::line(&outliers::outliers_line(group)));
        }
        text.push_str(&render::json::line(summary));
        return text;
    }
    if ctx.printer.format == Format::Json {
        let mut value = serde_json::json!({ "hosts": records, "summary": summary });
        if args.outliers {
            value["outliers"] = serde_json::to_value(outliers).unwrap_or_default();
        }
        return render::json::pretty(&value);
    }
    let mut doc = render::audit_doc(records, summary);
    if let Some(note) = shard_note {
        doc.line(render::doc::Tone::Dim, note);
    }
    if args.outliers {
        doc.append(outliers::outliers_doc(outliers));
    }
    render::text(&doc, &ctx.printer)
}

/// `--shard I/N`, or `--shard-index-env VAR --shards N`.
fn requested_shard(args: &AuditArgs) -> Result<Option<shard::Shard>> {
    if let Some(shard) = args.shard {
        return Ok(Some(shard));
    }
    let (Some(variable), Some(count)) = (&args.shard_index_env, args.shards) else {
        return Ok(None);
    };
    let value = std::env::var(variable).map_err(|_| {
        ExpectedError::Usage(format!(
            "--shard-index-env {variable}: the variable is not set (in a Kubernetes Indexed Job \
             it is JOB_COMPLETION_INDEX)"
        ))
    })?;
    let index: u32 = value.trim().parse().map_err(|_| {
        ExpectedError::Usage(format!(
            "--shard-index-env {variable}: {value:?} is not a shard index"
        ))
    })?;
    shard::Shard::new(index, count)
        .map(Some)
        .map_err(|err| ExpectedError::Usage(format!("--shard-index-env {variable}: {err}")))
}

fn record_for(
    host: &InventoryHost,
    target: &str,
    result: std::result::Result<super::LiveSnapshot, crate::collect::CollectFailure>,
    started: Instant,
) -> AuditRecord {
    let mut record = AuditRecord {
        schema_version: SCHEMA_VERSION,
        record_type: probe_model::RecordType::Host,
        host: host.name.clone(),
        target: target.to_string(),
        groups: host.groups.clone(),
        tags: host.tags.clone(),
        duration_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
        ..AuditRecord::default()
    };
    match result {
        Err(failure) => {
            record.status = match failure.class {
                HostFailure::Unreachable => AuditStatus::Unreachable,
                HostFailure::AuthFailed => AuditStatus::AuthFailed,
                HostFailure::HostKeyRefused => AuditStatus::HostKeyRefused,
                HostFailure::TimedOut => AuditStatus::TimedOut,
                HostFailure::Config | HostFailure::Error => AuditStatus::Error,
            };
            record.error = Some(crate::output::one_line(&failure.message));
        }
        Ok(mut live) => {
            // The collection read the launches once; `probe host` takes them the same way.
            let analysis =
                probe_diff::analyze_with(&live.snapshot, std::mem::take(&mut live.launches));
            record.snapshot_id = Some(live.snapshot.id.clone());
            // Collected and reported, not stored: the record says why and where it was kept.
            record.error = live.not_stored.clone();
            record.engines = engines_of(&live.snapshot, &analysis.launches);
            record.gpu_count = live.snapshot.gpu.gpus.len();
            record.status = AuditStatus::Ok;
            if let Some(previous) = &live.previous {
                record.previous_snapshot_id = Some(previous.id.clone());
                let diff = probe_diff::compare_analyses(
                    previous,
                    &probe_diff::analyze(previous),
                    &live.snapshot,
                    &analysis,
                    &probe_diff::CompareOptions::default(),
                );
                let drift: Vec<_> = probe_diff::drift(&diff).collect();
                record.changes = drift.len();
                record.top_changes = summaries(&drift);
                record.performance = performance(&diff);
                if probe_diff::has_drift(&diff) {
                    record.status = AuditStatus::Changed;
                }
            }
            // Drift against a snapshot that lost sections may be the loss itself: partial wins.
            record.lost_sections = probe_collect::lost_sections(&live.snapshot);
            if !record.lost_sections.is_empty() {
                record.status = AuditStatus::Partial;
            }
        }
    }
    record
}

/// The performance numbers that moved, after the verdict's like-for-like test: its headline
/// first where it concludes something, then the moves themselves.
fn performance(diff: &probe_model::SnapshotDiff) -> Vec<String> {
    let mut lines: Vec<String> = diff
        .verdict
        .iter()
        .filter(|v| {
            matches!(
                v.conclusion,
                probe_model::Conclusion::Cause
                    | probe_model::Conclusion::LoadChanged
                    | probe_model::Conclusion::Unexplained
            )
        })
        .map(|v| crate::output::one_line(&format!("verdict: {}", v.headline)))
        .collect();
    lines.extend(summaries(
        &probe_diff::performance_moves(diff).collect::<Vec<_>>(),
    ));
    lines
}

/// The first few changes, one line each.
fn summaries(changes: &[&probe_model::Change]) -> Vec<String> {
    changes
        .iter()
        .take(TOP_CHANGES)
        .map(|change| crate::output::one_line(&render::change_summary(change)))
        .collect()
}

/// Engines running now, with versions; falls back to what the process patterns matched.
fn engines_of(snapshot: &Snapshot, launches: &[LaunchConfig]) -> Vec<EngineVersion> {
    let mut seen = BTreeSet::new();
    let mut engines = Vec::new();
    for launch in launches {
        if launch.source.running && seen.insert(launch.engine) {
            engines.push(EngineVersion {
                engine: launch.engine,
                version: launch.engine_version.clone(),
            });
        }
    }
    for process in &snapshot.processes {
        if let Some(engine) = process.engine
            && seen.insert(engine)
        {
            let version = snapshot
                .python_envs
                .iter()
                .flat_map(|env| env.packages.iter())
                .find(|package| package.name == engine.as_str())
                .map(|package| package.version.clone());
            engines.push(EngineVersion { engine, version });
        }
    }
    engines
}

/// When any host has a jump host, writes a client config that gives each inventory host its
/// HostName/User/Port/ProxyJump and then includes the operator's own config.
fn generated_ssh_config(
    hosts: &[InventoryHost],
    settings: &Settings,
) -> std::io::Result<Option<(tempfile::TempDir, PathBuf)>> {
    if !hosts.iter().any(|host| host.jump.is_some()) {
        return Ok(None);
    }
    let directory = tempfile::Builder::new().prefix("probe-audit-").tempdir()?;
    let path = directory.path().join("ssh_config");
    let mut text = String::from("# Generated by probe audit from the inventory.\n");
    for host in hosts {
        text.push_str(&format!("Host {}\n", host.name));
        if host.address != host.name {
            text.push_str(&format!("  HostName {}\n", host.address));
        }
        if let Some(user) = &host.user {
            text.push_str(&format!("  User {user}\n"));
        }
        if let Some(port) = host.port {
            text.push_str(&format!("  Port {port}\n"));
        }
        if let Some(jump) = &host.jump {
            text.push_str(&format!("  ProxyJump {jump}\n"));
        }
    }
    text.push_str("Host *\n");
    let mut includes: Vec<PathBuf> = Vec::new();
    match &settings.ssh_config {
        Some(file) => includes.push(std::path::absolute(file)?),
        None => {
            if let Some(home) = std::env::var_os("HOME") {
                includes.push(Path::new(&home).join(".ssh").join("config"));
            }
            includes.push(PathBuf::from("/etc/ssh/ssh_config"));
        }
    }
    for include in includes.into_iter().filter(|p| p.exists()) {
        text.push_str(&format!("Include {}\n", include.display()));
    }
    std::fs::write(&path, text)?;
    Ok(Some((directory, path)))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `(fail-on, refused, failed, not stored, partial, changed) -> exit status`: the more
    /// severe outcome wins.
    #[test]
    fn exit_status_by_severity() {
        // (--fail-on, key refused, failed, not stored, partial, changed, exit status)
        let table = [
            (FailOn::Drift, 0, 0, 0, 0, 0, 0),
            (FailOn::Drift, 0, 0, 0, 0, 1, 1),
            (FailOn::Drift, 0, 10, 0, 0, 1, 3),
            (FailOn::Drift, 1, 10, 0, 0, 1, 4),
            (FailOn::Drift, 1, 1, 0, 0, 0, 4),
            (FailOn::Drift, 0, 1, 0, 0, 0, 3),
            (FailOn::Drift, 0, 0, 2, 0, 1, 5),
            (FailOn::Drift, 0, 1, 2, 0, 1, 3),
            (FailOn::Drift, 1, 1, 2, 0, 1, 4),
            (FailOn::Drift, 0, 0, 0, 1, 0, 6),
            (FailOn::Drift, 0, 0, 0, 1, 3, 6),
            (FailOn::Drift, 0, 0, 1, 1, 3, 5),
            (FailOn::Drift, 0, 1, 0, 1, 3, 3),
            (FailOn::Drift, 1, 1, 0, 1, 3, 4),
            (FailOn::Error, 0, 0, 0, 0, 5, 0),
            (FailOn::Error, 0, 0, 1, 0, 5, 5),
            (FailOn::Error, 0, 0, 0, 2, 5, 6),
            (FailOn::Error, 0, 2, 0, 2, 5, 3),
            (FailOn::Error, 1, 2, 0, 0, 5, 4),
            (FailOn::Error, 1, 1, 0, 0, 0, 4),
            (FailOn::Never, 1, 10, 1, 1, 1, 0),
            (FailOn::Never, 0, 0, 1, 1, 1, 0),
            (FailOn::Never, 0, 0, 0, 1, 0, 0),
        ];
        for (fail_on, key_refused, failed, not_stored, partial, changed, expected) in table {
            let outcomes = Outcomes {
                key_refused,
                failed,
                not_stored,
                partial,
                changed,
            };
            assert_eq!(
                exit_code(fail_on, outcomes),
                expected,
                "--fail-on {fail_on:?} with {outcomes:?}"
            );
        }
    }
}
