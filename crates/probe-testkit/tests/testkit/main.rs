//! probe-testkit's integration tests, one binary: sshd on loopback and the fixture hosts.

mod fixture_hosts;
mod sshd_smoke;
