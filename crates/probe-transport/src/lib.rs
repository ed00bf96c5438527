//! SSH transport (russh) that resolves targets like OpenSSH, and a local executor with the same
//! interface.
//!
//! * [`target`] and [`config`]: `user@host:port` parsing and `ssh_config` resolution, matching
//!   `ssh -G`.
//! * the rest (session, known_hosts, auth, exec, local): see module docs.

pub mod config;
pub mod target;
