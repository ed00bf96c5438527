//! `probe snapshots list|show|export|import|prune`.

use std::path::PathBuf;

use probe_model::exit_codes;
use probe_store::{PrunePolicy, Selector, SnapshotStore};

use super::Ctx;
use crate::args::{Format, SnapshotsCommand};
use crate::errors::{ExpectedError, Result};
use crate::render;

pub fn run(ctx: &Ctx, command: SnapshotsCommand) -> Result<u8> {
    let store = ctx.open_store()?;
    match command {
        SnapshotsCommand::List { host } => {
            let metas = store.list(host.as_deref())?;
            ctx.emit(&metas, || render::snapshots_doc(&metas))?;
        }
        SnapshotsCommand::Show { reference } => show(ctx, &*store, &reference)?,
        SnapshotsCommand::Export {
            to_store: Some(destination),
            ..
        } => {
            let destination = probe_store::open(&destination)?;
            copy_history(ctx, &*store, &*destination)?;
        }
        SnapshotsCommand::Export {
            reference, output, ..
        } => export(ctx, &*store, &reference.unwrap_or_default(), output)?,
        SnapshotsCommand::Import {
            from_store: Some(source),
            ..
        } => {
            let source = probe_store::open(&source)?;
            copy_history(ctx, &*source, &*store)?;
        }
        SnapshotsCommand::Import { files, .. } => import(ctx, &*store, &files)?,
        SnapshotsCommand::Prune {
            keep,
            older_than,
            host,
            dry_run,
        } => {
            let now = jiff::Timestamp::now().as_second();
            let policy = PrunePolicy {
                keep_last: keep,
                older_than: older_than
                    .map(|days| now - i64::try_from(days).unwrap_or(i64::MAX / 86_400) * 86_400),
                host,
                dry_run,
            };
            prune(ctx, &*store, &policy)?;
        }
    }
    Ok(exit_codes::OK)
}

/// `probe snapshots show`: the snapshot as JSON, or its host report (against the host's
/// previous snapshot) as a page or text.
fn show(ctx: &Ctx, store: &dyn SnapshotStore, reference: &str) -> Result<()> {
    let snapshot = resolve(store, reference)?;
    match ctx.printer.format {
        Format::Json => ctx.write(&probe_store::to_json(&snapshot)),
        Format::Html => {
            let previous = store.previous(&snapshot)?;
            let report = crate::report::build(&snapshot, previous.as_ref(), true, Vec::new());
            ctx.write(&render::html::host_page(std::slice::from_ref(&report)))
        }
        Format::Sh => Err(ExpectedError::Usage(
            "--format sh is for probe diff (its rollback plan as a script)".into(),
        )),
        Format::Human | Format::Markdown => {
            let previous = store.previous(&snapshot)?;
            let report = crate::report::build(&snapshot, previous.as_ref(), true, Vec::new());
            ctx.write(&render::text(
                &render::host_report_doc(&report),
                &ctx.printer,
            ))
        }
    }
}

/// `probe snapshots export`: the snapshot's stored bytes, to `output` or standard output.
fn export(
    ctx: &Ctx,
    store: &dyn SnapshotStore,
    reference: &str,
    output: Option<PathBuf>,
) -> Result<()> {
    let snapshot = resolve(store, reference)?;
    // The stored bytes, not a re-serialisation: byte-identical to what was stored.
    let mut text = store.export(&snapshot.id)?;
    text.push('\n');
    match output {
        Some(path) => crate::prometheus::write_atomic(&path, text.as_bytes())
            .map_err(|err| ExpectedError::file(&path, err)),
        None => ctx.write(&text),
    }
}

/// `probe snapshots import FILE...`: each file stored, and named as it is.
fn import(ctx: &Ctx, store: &dyn SnapshotStore, files: &[PathBuf]) -> Result<()> {
    for path in files {
        let snapshot = super::read_snapshot_file(ctx, path)?;
        let meta = store.put(&snapshot)?;
        ctx.printer.warn(&format!(
            "imported {} ({}, {})",
            meta.id,
            meta.hostname.as_deref().unwrap_or(&meta.target),
            render::format_time(meta.collected_at)
        ));
    }
    Ok(())
}

/// `probe snapshots prune`: what was (or would be) deleted.
fn prune(ctx: &Ctx, store: &dyn SnapshotStore, policy: &PrunePolicy) -> Result<()> {
    let pruned = store.prune(policy)?;
    let verb = if policy.dry_run {
        "would delete"
    } else {
        "deleted"
    };
    ctx.emit_text(&pruned, || {
        let mut text = format!("{verb} {} snapshot(s)\n", pruned.len());
        for meta in &pruned {
            text.push_str(&format!(
                "  {} {}\n",
                meta.id,
                render::format_time(meta.collected_at)
            ));
        }
        crate::output::sanitize_terminal(&text)
    })
}

fn resolve(store: &dyn SnapshotStore, reference: &str) -> Result<probe_model::Snapshot> {
    match probe_store::parse_host_reference(reference)? {
        Some(selector) => Ok(store.resolve(&selector)?),
        None => match store.get(reference)? {
            Some(snapshot) => Ok(snapshot),
            // A bare host name means its latest snapshot.
            None => Ok(store.resolve(&Selector::Host {
                host: reference.to_string(),
                point: probe_store::HostPoint::Latest,
            })?),
        },
    }
}

/// Copies every snapshot of `source` into `destination`, oldest first (host identities are
/// rebuilt in the order they grew). A snapshot that cannot be copied (an unredacted one into a
/// shared store) is named and skipped; the others are still copied.
fn copy_history(
    ctx: &Ctx,
    source: &dyn SnapshotStore,
    destination: &dyn SnapshotStore,
) -> Result<()> {
    let mut metas = source.list(None)?;
    metas.reverse();
    let mut failed = 0usize;
    for meta in &metas {
        let outcome = source.get(&meta.id).and_then(|snapshot| match snapshot {
            Some(snapshot) => destination.put(&snapshot).map(|_| ()),
            None => Err(probe_store::StoreError::NotFound(format!("id {}", meta.id))),
        });
        if let Err(err) = outcome {
            failed += 1;
            ctx.printer.warn(&crate::output::one_line(&err.to_string()));
        }
    }
    ctx.printer.warn(&format!(
        "copied {} of {} snapshot(s) from {} to {}",
        metas.len() - failed,
        metas.len(),
        source.location(),
        destination.location()
    ));
    if failed > 0 {
        return Err(ExpectedError::Other(format!(
            "{failed} snapshot(s) were not copied (named above)"
        )));
    }
    Ok(())
}
