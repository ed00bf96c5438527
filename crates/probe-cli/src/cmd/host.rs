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
                reports.push(crate::report::build_with(
                    &live.snapshot,
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
