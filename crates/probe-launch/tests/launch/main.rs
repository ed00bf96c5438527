//! probe-launch's integration tests, one binary: launch cases per reader (tables rendered by
//! `support/render.rs`), the corpus of real launch texts, properties and bounds of the readers.

// First: its `check!` macro is in scope for the modules declared after it.
#[macro_use]
#[path = "support/render.rs"]
mod render;
mod corpus_file;

mod cases_argv;
mod cases_container;
mod cases_options;
mod cases_python_api;
mod cases_shapes;
mod cases_systemd;
mod corpus;
mod launch_launchers;
mod launch_mechanisms;
mod launch_props;
mod launch_snapshot;
mod launch_texts;
mod redaction_marker;
