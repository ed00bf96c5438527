//! One module per command. Each takes the [`Ctx`] and its arguments and returns the exit code;
//! errors are [`ExpectedError`]s rendered by `lib.rs`.

pub mod audit;
pub mod completions;
pub mod diff;
pub mod host;
pub mod launch;
pub mod resolve;
pub mod snapshots;
pub mod timeline;
mod unstored;

use std::path::Path;
use std::sync::Arc;

use probe_model::Snapshot;
use probe_store::SnapshotStore;

use serde::Serialize;

use crate::args::{Command, Format};
use crate::collect::{CollectFailure, collect_target, connect_options};
use crate::errors::{ExpectedError, HostFailure, Result};
use crate::output::Printer;
use crate::render::{self, doc::Doc};
use crate::settings::Settings;

/// What every command gets.
#[derive(Debug, Clone)]
pub struct Ctx {
    pub settings: Arc<Settings>,
    pub printer: Printer,
    /// Collected hosts stored at once: one per CPU, and no fewer than a PostgreSQL store's
    /// pooled connections (its round trips overlap). A fleet's finished hosts wait for a turn
    /// holding their snapshot, rather than each taking a blocking thread (and from glibc an
    /// arena) of its own: docs/BENCHMARKS.md, fleet simulator, "Round 4".
    pub store_turns: Arc<tokio::sync::Semaphore>,
}

impl Ctx {
    /// A context for one command.
    pub fn new(settings: Arc<Settings>, printer: Printer) -> Ctx {
        let cpus = std::thread::available_parallelism().map_or(2, std::num::NonZero::get);
        Ctx {
            settings,
            printer,
            store_turns: Arc::new(tokio::sync::Semaphore::new(
                cpus.max(probe_store::POOL_SIZE),
            )),
        }
    }
}

/// An open snapshot store (SQLite file or PostgreSQL).
pub type Store = Arc<dyn SnapshotStore>;

impl Ctx {
    /// Writes a command's output: `value` as JSON under `--format json`, else the document
    /// `doc` builds, rendered for the terminal (human or Markdown). The one place a command's
    /// result becomes text.
    pub fn emit<T: Serialize + ?Sized>(&self, value: &T, doc: impl FnOnce() -> Doc) -> Result<()> {
        self.emit_text(value, || render::text(&doc(), &self.printer))
    }

    /// [`Ctx::emit`] for output that is already text when not JSON (several documents, a
    /// list of lines).
    pub fn emit_text<T: Serialize + ?Sized>(
        &self,
        value: &T,
        text: impl FnOnce() -> String,
    ) -> Result<()> {
        match self.printer.format {
            Format::Json => self.write(&render::json::pretty(value)),
            Format::Human | Format::Markdown => self.write(&text()),
            Format::Html => Err(html_not_here()),
            Format::Sh => Err(sh_not_here()),
        }
    }

    /// A report's output (`host`, `diff`, `timeline`, `audit report`): `value` as JSON, the
    /// page `page` draws from it (`--format html`), or the text `text` renders with the
    /// printer it is given; written to `output` when given (uncoloured), else to stdout.
    pub fn emit_report<T: Serialize + ?Sized>(
        &self,
        value: &T,
        output: Option<&Path>,
        page: impl FnOnce() -> String,
        text: impl FnOnce(&Printer) -> String,
    ) -> Result<()> {
        let rendered = match self.printer.format {
            Format::Json => render::json::pretty(value),
            Format::Html => page(),
            Format::Sh => return Err(sh_not_here()),
            Format::Human | Format::Markdown => match output {
                Some(_) => text(&Printer {
                    color: false,
                    ..self.printer.clone()
                }),
                None => text(&self.printer),
            },
        };
        match output {
            Some(path) => crate::prometheus::write_atomic(path, rendered.as_bytes())
                .map_err(|err| ExpectedError::file(path, err)),
            None => self.write(&rendered),
        }
    }

    /// Writes text to stdout as it is (a closed pipe is not an error).
    pub fn write(&self, text: &str) -> Result<()> {
        self.printer
            .out(text)
            .map_err(|err| ExpectedError::Other(format!("cannot write output: {err}")))
    }

    /// Opens the snapshot store: a SQLite file (checked read-only first) or a PostgreSQL URL,
    /// whose every operation is bounded by the per-host deadline (at most the store's own
    /// bound): a stalled store fails in that time instead of holding the command.
    pub fn open_store(&self) -> Result<Store> {
        let location = self.settings.store_location()?;
        Ok(self.open_at(&location)?)
    }

    /// The store of a command that collects (`probe host`, `probe audit`): one that cannot be
    /// opened (a read-only or full file system, a file the user cannot write, a shared store
    /// that does not answer) does not stop the collection; it stands in as a store whose every
    /// call gives back the opening error, so each host is still reported and its snapshot
    /// spooled. A store location that cannot be worked out at all is still an error.
    pub fn open_store_for_collection(&self) -> Result<Store> {
        let location = self.settings.store_location()?;
        Ok(self
            .open_at(&location)
            .unwrap_or_else(|err| Arc::new(unstored::Unopened::new(&location, err))))
    }

    /// A migration of an older layout is bounded by the run's deadline too (at most the
    /// store's own migration bound): a stalled store never holds a run longer than it asked for.
    fn open_at(&self, location: &str) -> std::result::Result<Store, probe_store::StoreError> {
        tracing::debug!(store = %probe_store::redact_location(location), "opening store");
        let bound = self.settings.deadline.min(probe_store::OPERATION_TIMEOUT);
        let migration = self.settings.deadline.min(probe_store::MIGRATION_TIMEOUT);
        probe_store::open_bounded(location, bound, migration).map(Arc::from)
    }
}

/// The error for `--format html` on a command that draws no page.
fn html_not_here() -> ExpectedError {
    ExpectedError::Usage(
        "--format html is for probe host, diff, timeline, audit report and snapshots show".into(),
    )
}

fn sh_not_here() -> ExpectedError {
    ExpectedError::Usage("--format sh is for probe diff (its rollback plan as a script)".into())
}

/// Whether a command draws a page under `--format html`.
fn draws_a_page(command: &Command) -> bool {
    match command {
        Command::Host(_) | Command::Diff(_) | Command::Timeline(_) => true,
        Command::Audit(args) => args.command.is_some(),
        Command::Snapshots(command) => {
            matches!(command, crate::args::SnapshotsCommand::Show { .. })
        }
        Command::Launch(_) | Command::Resolve(_) | Command::Completions(_) | Command::Man => false,
    }
}

/// Why `command` cannot be written in `format`, if it cannot.
fn refuses(command: &Command, format: Format) -> Option<ExpectedError> {
    match format {
        Format::Html if !draws_a_page(command) => Some(html_not_here()),
        Format::Sh if !matches!(command, Command::Diff(_)) => Some(sh_not_here()),
        _ => None,
    }
}

/// The format `command` is written in: the one asked for, except that a config file's default
/// the command cannot draw gives way to text for a terminal (`format = "sh"` in the config file
/// is for `probe diff`; `probe host` still runs).
pub fn format_for(command: &Command, format: Format, is_default: bool) -> Format {
    if is_default && refuses(command, format).is_some() {
        Format::Human
    } else {
        format
    }
}

/// Runs a command.
pub async fn dispatch(command: Command, ctx: &Ctx) -> Result<u8> {
    if let Some(refusal) = refuses(&command, ctx.printer.format) {
        return Err(refusal);
    }
    match command {
        Command::Host(args) => host::run(ctx, args).await,
        Command::Diff(args) => diff::run(ctx, args).await,
        Command::Timeline(args) => timeline::run(ctx, args).await,
        Command::Launch(args) => launch::run(ctx, args),
        Command::Audit(args) => audit::run(ctx, args).await,
        Command::Snapshots(command) => snapshots::run(ctx, command),
        Command::Resolve(args) => resolve::run(ctx, args),
        Command::Completions(args) => completions::completions(ctx, args.shell),
        Command::Man => completions::man(ctx),
    }
}

/// A freshly collected snapshot with the stored one before it.
#[derive(Debug)]
pub struct LiveSnapshot {
    pub snapshot: Snapshot,
    /// Every launch of `snapshot`, read once by the collection.
    pub launches: Vec<probe_model::LaunchConfig>,
    pub previous: Option<Snapshot>,
    pub stored: bool,
    pub notices: Vec<String>,
    /// The one line saying the snapshot was to be stored and was not, why, and where it was
    /// kept instead (`--spool`).
    pub not_stored: Option<String>,
}

/// Collects `target`, looks up its previous snapshot, and stores the new one (unless `no_store`).
pub async fn collect_live(
    ctx: &Ctx,
    store: &Store,
    target: &str,
    no_store: bool,
    interactive: bool,
) -> std::result::Result<LiveSnapshot, CollectFailure> {
    let options = connect_options(&ctx.settings, interactive);
    let collected = collect_target(target, &ctx.settings, &options).await?;
    // Reading the previous snapshot and writing this one (JSON, zstd, SQL) is CPU and disk
    // work: off the runtime's threads, so the other hosts' connections keep moving meanwhile.
    let store = Arc::clone(store);
    let owned_target = target.to_string();
    let spool = ctx.settings.spool.clone();
    // Never closed: a turn always comes.
    let turn = Arc::clone(&ctx.store_turns).acquire_owned().await.ok();
    tokio::task::spawn_blocking(move || {
        let _turn = turn;
        store_live(
            &*store,
            &owned_target,
            collected,
            no_store,
            spool.as_deref(),
        )
    })
    .await
    .unwrap_or_else(|err| {
        Err(CollectFailure {
            target: target.to_string(),
            class: HostFailure::Error,
            message: format!("{target}: internal error storing the snapshot: {err}"),
        })
    })
}

/// The previous snapshot looked up, and this one stored (unless `no_store`). A store that
/// fails loses nothing collected: the host is still reported (without its comparison when the
/// previous snapshot cannot be read), and a snapshot the store did not take is kept in the
/// spool directory, [`LiveSnapshot::not_stored`] saying so.
fn store_live(
    store: &dyn probe_store::SnapshotStore,
    target: &str,
    collected: crate::collect::Collected,
    no_store: bool,
    spool: Option<&Path>,
) -> std::result::Result<LiveSnapshot, CollectFailure> {
    let mut notices = collected.notices;
    let previous = store.previous(&collected.snapshot).unwrap_or_else(|err| {
        notices.push(crate::output::one_line(&format!(
            "not compared with the previous snapshot: {err}"
        )));
        None
    });
    let (stored, not_stored) = if no_store {
        (false, None)
    } else {
        match store.put(&collected.snapshot) {
            Ok(_) => (true, None),
            Err(err) => (
                false,
                Some(unstored::not_stored_line(
                    target,
                    &collected.snapshot,
                    &err,
                    spool,
                )),
            ),
        }
    };
    Ok(LiveSnapshot {
        snapshot: collected.snapshot,
        launches: collected.launches,
        previous,
        stored,
        notices,
        not_stored,
    })
}

/// Where a `diff`/`timeline` side comes from.
#[derive(Debug)]
pub enum Side {
    Stored(Box<Snapshot>),
    Live(String),
}

/// Reads a side: a snapshot file, a stored reference or id, else a live target.
pub fn classify_side(ctx: &Ctx, store: &Store, text: &str) -> Result<Side> {
    let path = Path::new(text);
    // Anything that exists and is not a directory is read as a file (a FIFO or device is then
    // refused, never read or taken for a host name).
    if std::fs::metadata(path).is_ok_and(|m| !m.is_dir()) {
        return Ok(Side::Stored(Box::new(read_snapshot_file(ctx, path)?)));
    }
    if let Some(selector) = probe_store::parse_host_reference(text)? {
        return Ok(Side::Stored(Box::new(store.resolve(&selector)?)));
    }
    if let Some(snapshot) = store.get(text)? {
        return Ok(Side::Stored(Box::new(snapshot)));
    }
    if text.ends_with(".json") {
        return Err(ExpectedError::file(text, "no such snapshot file"));
    }
    Ok(Side::Live(text.to_string()))
}

/// A snapshot document from a local file: bounded (`max-snapshot-mib`), and, being untrusted,
/// put through the same redaction pass as a collected snapshot (unless `--no-redact`) and the
/// one text sanitiser before it is stored or shown.
pub fn read_snapshot_file(ctx: &Ctx, path: &Path) -> Result<Snapshot> {
    let body = crate::settings::read_local(path, ctx.settings.max_snapshot_bytes)?;
    let mut snapshot = probe_store::from_json(&body, &path.display().to_string())?;
    if ctx.settings.redact {
        probe_collect::redact::redact_snapshot(
            &mut snapshot,
            probe_collect::redact::Redactor::builtin(),
        );
    }
    probe_model::text::sanitize_serde(&mut snapshot);
    Ok(snapshot)
}

/// Resolves a side to a snapshot, collecting a live target.
pub async fn side_snapshot(ctx: &Ctx, store: &Store, side: Side) -> Result<Snapshot> {
    match side {
        Side::Stored(snapshot) => Ok(*snapshot),
        Side::Live(target) => {
            let live = collect_live(ctx, store, &target, false, false)
                .await
                .map_err(failure_error)?;
            for notice in &live.notices {
                ctx.printer.warn(&format!("{target}: {notice}"));
            }
            if let Some(line) = &live.not_stored {
                ctx.printer.warn(line);
            }
            Ok(live.snapshot)
        }
    }
}

/// `--baseline WHEN` read, a snapshot it names looked up in the store; a bad WHEN is one usage
/// line.
pub fn read_baseline(store: &Store, text: Option<&str>) -> Result<Option<probe_diff::Baseline>> {
    let Some(text) = text else {
        return Ok(None);
    };
    let usage =
        |why: &dyn std::fmt::Display| ExpectedError::Usage(format!("--baseline {text:?}: {why}"));
    match crate::baseline::parse(text).map_err(|why| usage(&why))? {
        crate::baseline::Parsed::Ready(baseline) => Ok(Some(baseline)),
        crate::baseline::Parsed::Snapshot(reference) => {
            let snapshot = match probe_store::parse_host_reference(&reference) {
                Ok(Some(selector)) => store.resolve(&selector).ok(),
                _ => store.get(&reference).ok().flatten(),
            };
            let Some(snapshot) = snapshot else {
                return Err(usage(&format_args!(
                    "no stored snapshot by that name, and not {}",
                    crate::baseline::FORMS
                )));
            };
            Ok(Some(probe_diff::Baseline {
                text: reference,
                when: probe_diff::When::Snapshot(snapshot.collected_at),
            }))
        }
    }
}

/// A collection failure as the command's error.
pub fn failure_error(failure: CollectFailure) -> ExpectedError {
    ExpectedError::Host {
        host: failure.target.clone(),
        cause: failure
            .message
            .strip_prefix(&format!("{}: ", failure.target))
            .unwrap_or(&failure.message)
            .to_string(),
        class: failure.class,
    }
}
