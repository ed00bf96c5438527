//! Comparing launches and snapshots; impact ranking.
//!
//! [`compare_launches`] compares two reconstructed launches, [`compare_snapshots`] two snapshots
//! (one host over time, or two hosts), [`unified_diff`] two texts. Every change carries a
//! category, an impact and an explanation from the rules in `configs/impact.toml`
//! ([`crate::impact`]), and every list of changes is ranked so that the first lines answer "why is
//! it slower".

pub(crate) mod launch;
mod run;
mod snapshot;
mod speculative;
mod text;
mod values;

pub use crate::impact::rank;
pub(crate) use crate::launch::same_server;
pub use launch::{compare_launches, option_at_default};
pub(crate) use launch::{launch_label, same_configuration};
pub use run::compare_runs;
pub use snapshot::{compare_snapshots, compare_snapshots_with, is_meaningful};
pub use text::unified_diff;
pub(crate) use values::display as display_value;

/// How two snapshots are compared.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CompareOptions {
    /// Also count volatile differences (PIDs, uptime, utilisation, temperatures) as changes.
    pub include_volatile: bool,
}
