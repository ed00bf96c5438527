//! Pure reconstruction of launch configurations, timelines, runs and ranked differences.
//!
//! **Architecture invariant.** No I/O: everything comes in as text or [`probe_model`] values and
//! goes out as values. Engine knowledge is data in `configs/engines/*.toml`, embedded at build
//! time. A snapshot is read once into an [`Analysis`] (launches, runs, timeline).

mod analysis;
mod baseline;
mod bench;
mod changepoint;
mod compare;
mod conclusion;
mod consequence;
mod explain;
mod fleet;
mod hardware;
mod impact;
mod label;
mod number;
mod periods;
mod pins;
mod ranking;
mod rollback;
mod rotated;
mod run;
mod self_installed;
mod server;
mod server_rule;
mod timeline;
mod verdict;

pub use analysis::{Analysis, analyze, analyze_with};
pub use baseline::{AGO_SPAN_S, Baseline, When};
pub use bench::attribute as attribute_benchmarks;
pub use compare::{
    CompareOptions, compare_launches, drift, has_drift, is_meaningful, option_at_default,
    performance_moves, rank, unified_diff,
};
pub use conclusion::{
    HostConclusions, compare_analyses, compare_snapshots, compare_snapshots_with, host_conclusions,
    lead, metrics_by_run, period_diff, previous_launch_diff,
};
pub use fleet::{Fingerprinted, Member, ReadViews, outliers, outliers_by_fingerprint};
pub use hardware::report as hardware_report;
pub use impact::is_session_variable;
pub use run::summarize_model;
pub use server::{LIFETIME_SOURCE, views as server_views};
pub use timeline::{CLOCK_SKEW_S, host_clock_offset, timeline, timeline_with};
pub use verdict::{Evidence, judge};

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
        assert!(crate::changepoint::config().min_hours > 0, "periods.toml");
    }
}
