//! `probe diff A B`: exit 0 when nothing meaningful differs, 1 when something does, 2 on error.

use probe_model::exit_codes;

use super::{Ctx, classify_side, side_snapshot};
use crate::args::{DiffArgs, Format};
use crate::errors::{ExpectedError, Result};
use crate::render;

pub async fn run(ctx: &Ctx, args: DiffArgs) -> Result<u8> {
    let store = ctx.open_store()?;
    let before_side = classify_side(ctx, &store, &args.before)?;
    let after_side = classify_side(ctx, &store, &args.after)?;
    let (before, after) = tokio::join!(
        side_snapshot(ctx, &store, before_side),
        side_snapshot(ctx, &store, after_side)
    );
    let (before, after) = (before?, after?);
    let options = probe_diff::CompareOptions {
        include_volatile: args.include_volatile,
    };
    let diff = probe_diff::compare_snapshots(&before, &after, &options);
    let text = match ctx.printer.format {
        Format::Json => render::json::pretty(&diff),
        _ => render::text(&render::snapshot_diff_doc(&diff), &ctx.printer),
    };
    ctx.printer
        .out(&text)
        .map_err(|err| ExpectedError::Other(format!("cannot write output: {err}")))?;
    Ok(if probe_diff::is_meaningful(&diff) {
        exit_codes::DIFFERENCES
    } else {
        exit_codes::OK
    })
}
