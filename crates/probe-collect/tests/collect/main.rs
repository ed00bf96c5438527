//! probe-collect's integration tests, one binary: fixture hosts collected over real SSH, the
//! hostile and partial hosts, busybox, the local collector, the read-only audit of the script and
//! property tests of the parsers.

mod attacks;
mod busybox;
mod fixtures;
mod found;
mod found_scripts;
mod local;
mod names;
mod partial;
mod prop;
mod prop_hardware;
mod read_only;
mod self_installed;
mod server_redaction;
mod sessions;
mod thinning;
mod util;
