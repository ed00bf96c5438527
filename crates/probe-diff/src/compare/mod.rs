//! Comparing launches and snapshots; impact ranking.
//!
//! [`compare_launches`] compares two reconstructed launches, [`compare_snapshots`] two snapshots
//! (one host over time, or two hosts), [`unified_diff`] two texts. Every change carries a
//! category, an impact and an explanation from the rules in `configs/impact.toml`
//! ([`crate::impact`]), and every list of changes is ranked so that the first lines answer "why is
//! it slower".

mod hardware;
pub(crate) mod launch;
mod options;
mod run;
mod runs;
mod server;
mod snapshot;
mod speculative;
mod text;
pub(crate) mod values;

pub use crate::impact::rank;
pub use launch::{compare_launches, option_at_default};
pub(crate) use launch::{launch_label, same_configuration};
pub use options::CompareOptions;
pub use run::compare_runs;
pub use snapshot::{
    compare_analyses, compare_snapshots, compare_snapshots_with, drift, has_drift, is_meaningful,
    performance_moves,
};
pub use text::unified_diff;
pub(crate) use values::display as display_value;
