//! `probe diff A B`: exit 0 when nothing meaningful differs, 1 when something does, 2 on error.
//! `--rollback` prints what rolling B back to A would change instead (as JSON, the typed
//! `RollbackPlan`); `--format sh` prints that
//! plan as a script to review (probe runs none of it).

use probe_model::exit_codes;

use super::{Ctx, classify_side, side_snapshot};
use crate::args::{DiffArgs, Format};
use crate::errors::Result;
use crate::render;

pub async fn run(ctx: &Ctx, args: DiffArgs) -> Result<u8> {
    let store = ctx.open_store()?;
    let baseline = super::read_baseline(&store, args.baseline.as_deref())?;
    let before_side = classify_side(ctx, &store, &args.before)?;
    let after_side = classify_side(ctx, &store, &args.after)?;
    let (before, after) = tokio::join!(
        side_snapshot(ctx, &store, before_side),
        side_snapshot(ctx, &store, after_side)
    );
    let (before, after) = (before?, after?);
    let options = probe_diff::CompareOptions {
        include_volatile: args.include_volatile,
        baseline,
    };
    let diff = probe_diff::compare_snapshots(&before, &after, &options);
    if ctx.printer.format == Format::Sh {
        // The rollback plan as a script to review; with or without --rollback.
        let script = render::sh::rollback_script(&diff);
        match args.output.as_deref() {
            Some(path) => crate::prometheus::write_atomic(path, script.as_bytes())
                .map_err(|err| crate::errors::ExpectedError::file(path, err))?,
            None => ctx.write(&script)?,
        }
    } else if args.rollback {
        // JSON: the typed plan (launcher, steps, placeholders); text: its checklist.
        ctx.emit(&diff.rollback_plan, || render::rollback_doc(&diff))?;
    } else {
        ctx.emit_report(
            &diff,
            args.output.as_deref(),
            || render::html::diff_page(&diff),
            |printer| render::text(&render::snapshot_diff_doc(&diff), printer),
        )?;
    }
    Ok(if probe_diff::is_meaningful(&diff) {
        exit_codes::DIFFERENCES
    } else {
        exit_codes::OK
    })
}
