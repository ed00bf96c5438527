//! Test support shared by the transport, collection and CLI tests and the benchmarks: real
//! OpenSSH `sshd` instances on loopback addresses ([`sshd`]), key pairs made by the real
//! `ssh-keygen` ([`keys`]), fixture hosts built from directory definitions, and a loopback TCP
//! proxy that stops forwarding on cue ([`stall`]).
//!
//! Nothing here is a mock: every server is Debian's `/usr/sbin/sshd`, every key comes from
//! `ssh-keygen`. Only loopback addresses (127.0.0.0/8) are ever used.

pub mod addr_lock;
pub mod bench;
pub mod fixture;
pub mod keys;
pub mod postgres;
pub mod sim;
pub mod sshd;
pub mod stall;

pub use keys::KeyPair;
pub use sshd::{Sshd, SshdOptions};

/// What this machine lacks for a kind of test (real sshd, namespaces, PostgreSQL), and how to
/// get it: a test fails with this reason instead of a confusing one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct MachineLacks(pub String);

/// Skips nothing: says what the machine lacks when it cannot run real-sshd tests.
pub fn require_openssh() -> Result<(), MachineLacks> {
    for bin in [sshd::SSHD, "/usr/bin/ssh-keygen", "/usr/bin/ssh"] {
        if !std::path::Path::new(bin).exists() {
            return Err(MachineLacks(format!(
                "{bin} is missing: install openssh-server and openssh-client (.ci/run does)"
            )));
        }
    }
    Ok(())
}

/// Prefixes of the temporary directories this crate makes.
const TEMP_PREFIXES: [&str; 6] = [
    "probe-sshd-",
    "probe-sim-",
    "probe-fx-",
    "probe-fxkey-",
    "probe-fleet-",
    "probe-pg-",
];

/// A temporary directory owned by this process: its `.owner` file holds our PID. Fleets shared
/// by a test binary live in statics that are never dropped, and a killed test never drops
/// anything, so directories whose owner is gone are removed here first.
pub(crate) fn owned_tempdir(prefix: &str) -> tempfile::TempDir {
    sweep_stale_tempdirs();
    let dir = tempfile::Builder::new()
        .prefix(prefix)
        .tempdir()
        .expect("tempdir");
    std::fs::write(dir.path().join(".owner"), std::process::id().to_string()).expect("write owner");
    dir
}

/// Removes our temporary directories whose owning process is gone.
fn sweep_stale_tempdirs() {
    let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if !TEMP_PREFIXES.iter().any(|p| name.starts_with(p)) {
            continue;
        }
        let owner = std::fs::read_to_string(entry.path().join(".owner"))
            .ok()
            .and_then(|s| s.trim().parse::<u32>().ok());
        if let Some(pid) = owner
            && !std::path::Path::new(&format!("/proc/{pid}")).exists()
        {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}
