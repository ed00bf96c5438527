//! Turning framed sections into the snapshot and planning round 2 from round 1 (the final
//! redaction pass is [`crate::redact::redact_snapshot`]).
//!
//! Rooms: [`common`] (section reports, notes, rooted paths), `round1` (round 1 applied),
//! `inputs` (round 2 planned; `scripts`: the Python scripts running servers run), `round2`
//! (round 2 applied).

mod common;
mod inputs;
mod round1;
mod round2;
mod scripts;
mod self_installed;

pub use common::{report, split_root};
pub use inputs::round2_inputs;
pub use round1::apply_round1;
pub use round2::{apply_round2, round2_not_run};

#[cfg(test)]
use inputs::*;

#[cfg(test)]
mod tests;
