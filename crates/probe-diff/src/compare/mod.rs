//! Comparing launches and snapshots; impact ranking.
//!
//! [`compare_launches`] compares two reconstructed launches, [`compare_areas`] the areas of two
//! snapshots (one host over time, or two hosts; the verdict drawn from them is
//! [`crate::conclusion`]'s), [`unified_diff`] two texts. Every change carries a
//! category, an impact and an explanation from the rules in `configs/impact.toml`
//! ([`crate::impact`]), and every list of changes is ranked so that the first lines answer "why is
//! it slower".

mod hardware;
mod in_effect;
pub(crate) mod launch;
mod launch_env;
mod launch_options;
mod launch_sides;
mod limits;
mod options;
mod server;
mod shared_runs;
mod snapshot;
mod text;

pub use crate::ranking::rank;
pub use in_effect::compare_runs;
pub use launch::compare_launches;
pub(crate) use limits::{effective_numbers, fold_limits};
pub use options::CompareOptions;
pub use probe_launch::option_at_default;
pub(crate) use server::is_server_metric;
pub(crate) use snapshot::compare_areas;
pub use snapshot::{drift, has_drift, is_meaningful, performance_moves};
pub use text::unified_diff;
