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
    for (_, result) in results {
        match result {
            Ok(live) => {
                if let Some(line) = &live.not_stored {
                    // The report follows on stdout; this line says it was not kept.
                    ctx.printer.warn(line);
                    not_stored += 1;
                }
                reports.push(crate::report::build(
                    &live.snapshot,
                    live.previous.as_ref(),
                    live.stored,
                    live.notices,
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
    Ok(exit_code(&failures, not_stored, args.targets.len()))
}

/// A refused key first, then failed hosts, then reports whose snapshot was not stored.
fn exit_code(failures: &[HostFailure], not_stored: usize, total: usize) -> u8 {
    if failures.contains(&HostFailure::HostKeyRefused) {
        exit_codes::HOST_KEY_REFUSED
    } else if !failures.is_empty() && total == 1 {
        exit_codes::ERROR
    } else if !failures.is_empty() {
        exit_codes::HOSTS_FAILED
    } else if not_stored > 0 {
        exit_codes::NOT_STORED
    } else {
        exit_codes::OK
    }
}
