//! `probe timeline TARGET`: every launch, oldest first.

use probe_model::exit_codes;

use super::{Ctx, classify_side, side_snapshot};
use crate::args::{Format, TimelineArgs};
use crate::errors::{ExpectedError, Result};
use crate::render;

pub async fn run(ctx: &Ctx, args: TimelineArgs) -> Result<u8> {
    let store = ctx.open_store()?;
    let side = classify_side(ctx, &store, &args.target)?;
    let snapshot = side_snapshot(ctx, &store, side).await?;
    let timeline = probe_diff::analyze(&snapshot).timeline;
    let text = match ctx.printer.format {
        Format::Json => render::json::pretty(&timeline),
        _ => render::text(&render::timeline_doc(&timeline), &ctx.printer),
    };
    ctx.printer
        .out(&text)
        .map_err(|err| ExpectedError::Other(format!("cannot write output: {err}")))?;
    Ok(exit_codes::OK)
}
