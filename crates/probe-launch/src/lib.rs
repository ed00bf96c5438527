//! Launch reading: from any launch text to a `LaunchConfig`, with the engines' option catalogs.
//!
//! This crate is what the collector (to plan what to read next) and the analysis (to compare and
//! explain) both need to know about launches, and nothing else: it depends on probe-model only.
//!
//! Inputs: a `/proc` argv, a systemd unit, a shell line or script, a `docker run`, a compose
//! service, a Kubernetes container, an engine's start-up log line. Every path ends in the same
//! place: an argv whose wrappers (`nohup`, `bash -c`, `docker run`, `uv run`, ...) are unwrapped
//! until an engine entry point is found, whose options are then read with that engine's catalog
//! (`configs/engines/*.toml`). Nothing here panics on bad input: what cannot be read becomes a
//! warning.
//!
//! **Invariant enforced by lint:** these readers take text from remote hosts and must not panic on
//! it, so `unwrap`, `expect`, `panic!` and indexing/slicing are denied in the whole crate (its unit
//! tests opt out: a failing test is meant to panic).

#![deny(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

pub mod catalog;
pub mod common;
pub mod compose_env;
mod config_files;
mod configuration;
pub mod embedded;
pub mod speculative;
pub mod version;

mod argv;
mod container;
mod container_text;
mod ctx;
mod defining;
mod detect;
mod dockerfile;
mod entry;
mod env_drop_in;
mod evidence;
mod go_map;
mod hints;
mod history_memo;
mod host_change;
mod identity;
mod ini;
mod installed;
mod loaded_models;
mod merge;
mod modelfile;
mod options;
mod pm2;
mod prompt;
mod python_api;
mod python_script;
mod quadlet;
mod reading;
mod rust_debug;
mod serving;
mod serving_formats;
mod shell;
mod skypilot;
mod snapshot;
mod spec;
mod supervisor;
mod systemd;
mod unit_files;
mod values;
mod work;
pub mod wrappers;
mod writes;
mod yaml;

pub use config_files::{apply_config_file, config_files};
pub use configuration::{
    ConfigDifference, ConfigField, OWN_MTP_HEADS, configuration_differences,
    covered_by_speculative, default_of, launch_details, lists_resolved_values, option_at_default,
    same_configuration, speculative_leftover, trim_model,
};

pub use hints::{ParseHints, TextKind};
pub use history_memo::without_memo;

pub use evidence::{from_argv, from_startup_log, from_unit};
pub use installed::{engine_package, serving_env};
pub use python_script::{python_script, python_script_starts_engine};
pub use reading::{reconstruct, reconstruct_measured};
pub use snapshot::{launches_of, snapshot_readings, snapshot_readings_of};

pub use defining::{start_script, unit_defining_files};
pub use host_change::{PackageInstall, host_change, package_install};
pub use identity::{ServerLaunches, port_of, same_server, unit_of};
pub use merge::{evidence_label, merge_runs, run_start};
pub use unit_files::{UnitFile, environment_source, exec_start_file, unit_files, without_drop_ins};
pub use values::{parse_human_int, python_literal};
pub use work::Work;
pub use writes::{WritingCommand, writing_commands};

#[cfg(test)]
mod tests;
