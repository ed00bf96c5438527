//! Pure reconstruction of launch configurations, timelines, runs and ranked differences.
//!
//! **Architecture invariant.** No I/O: everything comes in as text or [`probe_model`] values and
//! goes out as values. Engine knowledge is data in `configs/engines/*.toml`, embedded at build
//! time. A snapshot is read once into an [`Analysis`] (launches, runs, timeline).

pub mod analysis;
pub mod bench;
pub mod compare;
mod explain;
pub mod fleet;
pub mod hardware;
pub mod impact;
pub mod periods;
mod pins;
mod previous;
mod rotated;
pub mod run;
pub mod server;
pub mod timeline;
pub mod verdict;

pub use analysis::{Analysis, analyze};
pub use compare::{
    CompareOptions, compare_analyses, compare_launches, compare_snapshots, compare_snapshots_with,
    drift, has_drift, is_meaningful, option_at_default, performance_moves, rank, unified_diff,
};
pub use periods::metrics_by_run;
pub use previous::previous_launch_diff;
pub use timeline::{timeline, timeline_with};

#[cfg(test)]
mod tests {
    /// The analysis's own embedded configs (probe-launch checks the catalogs and wrappers,
    /// probe-collect the GPU catalogues): each parses, through `probe_launch::embedded::load`, and
    /// holds what the analysis reads (verdict.toml also has its own table test).
    #[test]
    fn every_embedded_config_parses() {
        assert!(!crate::impact::rules().rule.is_empty(), "impact.toml");
        assert!(
            !crate::server::effective::server_keys().engines.is_empty(),
            "server_keys.toml"
        );
        assert!(crate::verdict::config().tolerance > 0.0, "verdict.toml");
    }
}
