//! `probe host TARGET...`: collect, store, report.

use std::io::IsTerminal;
use std::sync::Arc;

use probe_model::exit_codes;

use super::{Ctx, collect_live};
use crate::args::HostArgs;
use crate::errors::{ExpectedError, HostFailure, Result};
use crate::render;

pub async fn run(ctx: &Ctx, args: HostArgs) -> Result<u8> {
    let store = ctx.open_store_for_collection()?;
    let baseline = super::read_baseline(&store, args.baseline.as_deref())?;
    let interactive = args.targets.len() == 1 && std::io::stdin().is_terminal();
    let semaphore = Arc::new(tokio::sync::Semaphore::new(args.jobs.max(1)));
    let mut tasks = tokio::task::JoinSet::new();
    for (index, target) in args.targets.iter().enumerate() {
        let ctx = ctx.clone();
        let store = Arc::clone(&store);
        let target = target.clone();
        let semaphore = Arc::clone(&semaphore);
        let no_store = args.no_store;
        tasks.spawn(async move {
            let _permit = semaphore.acquire_owned().await;
            let result = collect_live(&ctx, &store, &target, no_store, interactive).await;
            (index, result)
        });
    }
    let mut results = Vec::new();
    while let Some(joined) = tasks.join_next().await {
        let (index, result) =
            joined.map_err(|err| ExpectedError::Other(format!("internal error: {err}")))?;
        if let Err(failure) = &result {
            // Failures are reported as they happen; reports follow in the order given.
            ctx.printer.warn(&failure.message);
            if let Some(hint) = super::failure_error(failure.clone()).hint() {
                ctx.printer.hint(&hint);
            }
        }
        results.push((index, result));
    }
    results.sort_by_key(|(index, _)| *index);

    let mut reports = Vec::new();
    let mut failures: Vec<HostFailure> = Vec::new();
    let mut not_stored = 0usize;
    let mut incomplete = false;
    for (_, result) in results {
        match result {
            Ok(live) => {
                if let Some(line) = &live.not_stored {
                    // The report follows on stdout; this line says it was not kept.
                    ctx.printer.warn(line);
                    not_stored += 1;
                }
                incomplete |= !probe_collect::lost_sections(&live.snapshot).is_empty();
                reports.push(crate::report::build_from(
                    &live.snapshot,
                    live.launches,
                    live.previous.as_ref(),
                    live.stored,
                    live.notices,
                    baseline.as_ref(),
                ));
            }
            Err(failure) => failures.push(failure.class),
        }
    }
    ctx.emit_report(
        &reports,
        args.output.as_deref(),
        || render::html::host_page(&reports),
        |printer| {
            reports
                .iter()
                .map(|report| render::text(&render::host_report_doc(report), printer))
                .collect::<Vec<_>>()
                .join("\n")
        },
    )?;
    Ok(exit_code(
        &failures,
        args.targets.len(),
        not_stored,
        incomplete,
    ))
}

/// A refused host key (4) first, then failed hosts (2 for one target, 3 for several), then
/// reports whose snapshot was not stored (5), then a snapshot that lost sections to the
/// connection (6).
fn exit_code(failures: &[HostFailure], total: usize, not_stored: usize, incomplete: bool) -> u8 {
    if failures.contains(&HostFailure::HostKeyRefused) {
        exit_codes::HOST_KEY_REFUSED
    } else if !failures.is_empty() && total == 1 {
        exit_codes::ERROR
    } else if !failures.is_empty() {
        exit_codes::HOSTS_FAILED
    } else if not_stored > 0 {
        exit_codes::NOT_STORED
    } else if incomplete {
        exit_codes::INCOMPLETE
    } else {
        exit_codes::OK
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The stored snapshots' ids, oldest first.
    fn stored_ids(store: &std::path::Path) -> Vec<String> {
        let store = probe_store::open(&store.display().to_string()).expect("the store opens");
        let metas = store.list(None).expect("the store lists");
        metas.into_iter().map(|meta| meta.id).collect()
    }

    /// `probe host local`, the whole command in this process (collection, servers asked,
    /// store, report), into the store at `store`.
    fn probe_host_local(runtime: &tokio::runtime::Runtime, store: &std::path::Path) -> u8 {
        use clap::Parser;
        let store = store.display().to_string();
        let argv = [
            "probe", "--store", &store, "--format", "json", "host", "local",
        ];
        let cli = crate::args::Cli::try_parse_from(argv).expect("the arguments parse");
        let settings = crate::settings::Settings::resolve(&cli.global).expect("settings resolve");
        let printer = crate::output::Printer::new(settings.format, None);
        let ctx = Ctx::new(Arc::new(settings), printer);
        runtime
            .block_on(super::super::dispatch(cli.command, &ctx))
            .expect("probe host runs")
    }

    /// One `probe host` reads each snapshot's launches once, on whichever thread: the
    /// collection reads the new one to ask its servers and the report takes them on; the
    /// previous snapshot is read once for the comparison.
    #[test]
    fn one_probe_host_reads_each_snapshot_once() {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let store = dir.path().join("store.db");
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .expect("a runtime");
        // Each run's snapshot by what it added to the store: two runs may fall in one second,
        // and ids of one second do not sort by when they were stored.
        let mut ids: Vec<String> = Vec::new();
        for _ in 0..2 {
            let code = probe_host_local(&runtime, &store);
            assert!(
                [exit_codes::OK, exit_codes::INCOMPLETE].contains(&code),
                "exit {code}"
            );
            let new: Vec<String> = stored_ids(&store)
                .into_iter()
                .filter(|id| !ids.contains(id))
                .collect();
            assert_eq!(new.len(), 1, "one snapshot stored per run: {new:?}");
            ids.extend(new);
        }
        let [first, second] = ids.as_slice() else {
            panic!("two snapshots stored: {ids:?}");
        };
        // The first: once when collected, once as the second's previous snapshot.
        assert_eq!(probe_launch::snapshot_readings_of(first), 2, "{first}");
        assert_eq!(probe_launch::snapshot_readings_of(second), 1, "{second}");
    }

    #[test]
    fn exit_code_by_severity_with_incomplete_snapshots_last() {
        use HostFailure::{HostKeyRefused, Unreachable};
        let table: &[(&[HostFailure], usize, usize, bool, u8)] = &[
            (&[], 1, 0, false, exit_codes::OK),
            (&[], 2, 0, true, exit_codes::INCOMPLETE),
            (&[], 2, 1, true, exit_codes::NOT_STORED),
            (&[], 1, 1, false, exit_codes::NOT_STORED),
            (&[Unreachable], 1, 0, true, exit_codes::ERROR),
            (&[Unreachable], 2, 1, true, exit_codes::HOSTS_FAILED),
            (
                &[Unreachable, HostKeyRefused],
                3,
                1,
                true,
                exit_codes::HOST_KEY_REFUSED,
            ),
        ];
        for (failures, total, not_stored, incomplete, want) in table {
            assert_eq!(
                exit_code(failures, *total, *not_stored, *incomplete),
                *want,
                "{failures:?} of {total}, not stored {not_stored}, incomplete {incomplete}"
            );
        }
    }
}
