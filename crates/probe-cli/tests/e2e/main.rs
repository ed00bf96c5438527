//! probe-cli's integration tests, one binary (as ripgrep's `tests/`): the built `probe` against
//! fixture hosts over real SSH, simulated fleets, PostgreSQL, a pseudo-terminal and headless
//! Chromium, hostile local files, and the redaction property. One module per area; `util` holds
//! the one way to run probe, the schema check every JSON output passes, and the process's
//! fixture hosts, which every module shares (each host starts once, on first use).

#![allow(clippy::print_stderr)]

mod apply_plan;
mod clock_dead;
mod clock_names;
mod compose_nodes;
mod fleet;
mod hand_nodes;
mod hardware;
mod journald;
mod latency;
mod llamacpp;
mod lmdeploy;
mod lmdeploy_script;
mod local_input;
mod ollama;
mod periods;
mod redaction_props;
mod retention;
mod runs;
mod secrets;
mod selfinst;
mod server;
mod shard;
mod sim;
mod tgi;
mod tp_nodes;
mod tp_nodes_apply;
mod trtllm;
mod tty;
mod unstored;
mod util;
