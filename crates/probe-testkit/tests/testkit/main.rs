//! probe-testkit's integration tests, one binary: sshd on loopback and the fixture hosts.

mod addr_lock;
mod fixture_hosts;
mod sshd_smoke;
