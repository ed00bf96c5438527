//! `probe timeline TARGET`: every launch, oldest first.

use probe_model::exit_codes;

use super::{Ctx, classify_side, side_snapshot};
use crate::args::TimelineArgs;
use crate::errors::Result;
use crate::render;

pub async fn run(ctx: &Ctx, args: TimelineArgs) -> Result<u8> {
    let store = ctx.open_store()?;
    let side = classify_side(ctx, &store, &args.target)?;
    let snapshot = side_snapshot(ctx, &store, side).await?;
    let timeline = probe_diff::analyze(&snapshot).timeline;
    ctx.emit_report(
        &timeline,
        args.output.as_deref(),
        || render::html::timeline_page(&timeline),
        |printer| render::text(&render::timeline_doc(&timeline), printer),
    )?;
    Ok(exit_codes::OK)
}
