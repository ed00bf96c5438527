//! probe-diff's integration tests, one binary (one link of the crate and its dependencies):
//! comparisons, runs, periods and the timeline. Launch reading is tested in probe-launch.

mod catalog_versions;
mod compare_end_to_end;
mod compare_launches;
mod compare_props;
mod compare_runs_across;
mod compare_snapshots;
mod compare_sources;
mod consequences;
mod history_texts;
mod identity_props;
mod launch_bounds;
mod metric_periods;
mod runs_merge;
mod timeline_order;
