//! probe-transport's integration tests, one binary, against a real OpenSSH sshd on loopback.
//! `ssh_rss` stays a binary of its own: it measures this process's peak RSS, which other tests
//! would inflate.

mod ssh_auth;
mod ssh_channels;
mod ssh_config_diff;
mod ssh_exec;
mod ssh_hostkeys;
mod ssh_refuse;
mod ssh_support;
