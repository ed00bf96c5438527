//! A fixture address is held by one test process at a time: another process holding it (here
//! `flock(1)`, the same lock) is waited for, and this process's own holds share it.

use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use probe_testkit::addr_lock::{hold, lock_path};
use probe_testkit::fixture::FixtureHost;

/// Another process that holds `key`'s lock until it has written `released` into `marker`
/// (a second after it took the lock); returns once it holds it.
fn other_process_holding(key: &str, dir: &Path, marker: &Path) -> Holder {
    let taken = dir.join(format!("{key}.taken"));
    let release = dir.join(format!("{key}.release"));
    // It holds the lock until told to let go (at most 5 minutes), never for a fixed time: a
    // loaded machine must not turn "the other process still holds it" into a race.
    let child = Command::new("/usr/bin/flock")
        .arg("-x")
        .arg(lock_path(key))
        .args([
            "/bin/sh",
            "-c",
            "echo >\"$1\"; i=0; while [ ! -e \"$3\" ]; do i=$((i+1)); [ $i -lt 6000 ] || exit 1; sleep 0.05; done; echo released >\"$2\"",
            "sh",
        ])
        .arg(&taken)
        .arg(marker)
        .arg(&release)
        .spawn()
        .expect("run flock");
    // Another test of this binary (or another process) may hold it a while.
    let deadline = Instant::now() + Duration::from_secs(600);
    while !taken.exists() {
        assert!(Instant::now() < deadline, "flock never took {key}");
        std::thread::sleep(Duration::from_millis(10));
    }
    Holder { child, release }
}

/// The other process, and the file that tells it to let go.
struct Holder {
    child: Child,
    release: PathBuf,
}

impl Holder {
    /// Tells it to let go now.
    fn release(&self) {
        std::fs::write(&self.release, b"").unwrap();
    }

    /// Tells it to let go after `after`, from another thread (this one is about to wait for it).
    fn release_after(&self, after: Duration) {
        let release = self.release.clone();
        std::thread::spawn(move || {
            std::thread::sleep(after);
            std::fs::write(release, b"").unwrap();
        });
    }

    fn wait(mut self) -> bool {
        self.child.wait().unwrap().success()
    }
}

/// Whether another process could take `key`'s lock now.
fn free_for_others(key: &str) -> bool {
    Command::new("/usr/bin/flock")
        .args(["-n", "-x"])
        .arg(lock_path(key))
        .arg("/bin/true")
        .status()
        .expect("run flock")
        .success()
}

#[test]
fn an_address_another_process_holds_is_waited_for() {
    let tmp = tempfile::tempdir().unwrap();
    let key = format!("testkit-{}-waited", std::process::id());
    let marker = tmp.path().join("released");
    let other = other_process_holding(&key, tmp.path(), &marker);
    let refused = hold(&key, Duration::ZERO).expect_err("held by another process");
    assert!(
        refused.contains("in use by another test process"),
        "{refused}"
    );
    other.release_after(Duration::from_millis(300));
    let first = hold(&key, Duration::from_secs(120)).expect("free once the other lets go");
    assert!(
        marker.exists(),
        "taken before the other process released it"
    );
    assert!(!free_for_others(&key), "held by this process");
    // This process's second hold does not wait for its first.
    let second = hold(&key, Duration::ZERO).expect("this process's own");
    drop(first);
    assert!(!free_for_others(&key), "still held by the second hold");
    drop(second);
    assert!(free_for_others(&key), "released with the last hold");
    assert!(other.wait());
    let _ = std::fs::remove_file(lock_path(&key));
}

/// A fixture host whose address another process holds starts only after that process lets go:
/// two copies would share its servers' fixed ports, and the second's server would exit.
#[test]
fn a_fixture_host_waits_for_another_process_on_its_address() {
    let tmp = tempfile::tempdir().unwrap();
    let marker = tmp.path().join("released");
    // `bare` is 127.0.0.14.
    let other = other_process_holding("127.0.0.14", tmp.path(), &marker);
    other.release_after(Duration::from_millis(300));
    let host = FixtureHost::start("bare");
    assert!(
        marker.exists(),
        "bare started while another process held 127.0.0.14"
    );
    assert!(!free_for_others("127.0.0.14"), "held while bare runs");
    drop(host);
    assert!(other.wait());
}

/// Two processes that each hold an address the other waits for: the one with the larger PID
/// gives way at once with one line, instead of both waiting out their bound. Here the other
/// process is pid 1 (older than this one, always alive): it holds `held-there` (the lock taken
/// by flock(1), its lock file naming pid 1) and waits for `held-here`, which this process holds.
#[test]
fn a_wait_cycle_between_two_processes_is_broken_by_the_younger() {
    let tmp = tempfile::tempdir().unwrap();
    let here = format!("testkit-{}-here", std::process::id());
    let there = format!("testkit-{}-there", std::process::id());
    let marker = tmp.path().join("released");
    let held_here = hold(&here, Duration::ZERO).expect("free");
    let other = other_process_holding(&there, tmp.path(), &marker);
    std::fs::write(lock_path(&there), "1").unwrap();
    let waits = std::env::temp_dir().join(format!("probe-fixture-wait-1-{here}"));
    std::fs::write(&waits, b"").unwrap();
    let refused = hold(&there, Duration::from_secs(120));
    let _ = std::fs::remove_file(&waits);
    let refused = refused.expect_err("a cycle");
    assert!(
        refused.contains("held by pid 1, which waits") && refused.contains("gives way"),
        "{refused}"
    );
    assert!(!marker.exists(), "it waited for the other process instead");
    other.release();
    drop(held_here);
    assert!(other.wait());
    for key in [here, there] {
        let _ = std::fs::remove_file(lock_path(&key));
    }
}
