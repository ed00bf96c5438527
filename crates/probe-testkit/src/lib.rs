//! Test support shared by the transport, collection and CLI tests and the benchmarks: real
//! OpenSSH `sshd` instances on loopback addresses ([`sshd`]), key pairs made by the real
//! `ssh-keygen` ([`keys`]), and fixture hosts built from directory definitions.
//!
//! Nothing here is a mock: every server is Debian's `/usr/sbin/sshd`, every key comes from
//! `ssh-keygen`. Only loopback addresses (127.0.0.0/8) are ever used.

#![allow(clippy::print_stderr)]

pub mod fixture;
pub mod keys;
pub mod sshd;

pub use keys::KeyPair;
pub use sshd::{Sshd, SshdOptions};

/// Skips nothing: returns an error message when the machine lacks what real-sshd tests need, so
/// that a test can fail with a clear reason instead of a confusing one.
pub fn require_openssh() -> Result<(), String> {
    for bin in [sshd::SSHD, "/usr/bin/ssh-keygen", "/usr/bin/ssh"] {
        if !std::path::Path::new(bin).exists() {
            return Err(format!(
                "{bin} is missing: install openssh-server and openssh-client (.ci/run does)"
            ));
        }
    }
    Ok(())
}
