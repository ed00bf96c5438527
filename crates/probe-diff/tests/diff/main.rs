//! probe-diff's integration tests, one binary (one link of the crate and its dependencies):
//! launch cases per reader, the corpus, comparisons, runs, periods and the timeline.

// First: its `check!` macro is in scope for the modules declared after it.
#[macro_use]
#[path = "support/render.rs"]
mod render;
mod corpus_file;

mod cases_argv;
mod cases_container;
mod cases_options;
mod cases_systemd;
mod catalog_versions;
mod compare_end_to_end;
mod compare_launches;
mod compare_props;
mod compare_runs_across;
mod compare_snapshots;
mod compare_sources;
mod corpus;
mod history_texts;
mod launch_bounds;
mod launch_launchers;
mod launch_mechanisms;
mod launch_props;
mod launch_snapshot;
mod launch_texts;
mod metric_periods;
mod redaction_marker;
mod runs_merge;
mod timeline_order;
