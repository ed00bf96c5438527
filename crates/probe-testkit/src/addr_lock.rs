//! One test process at a time on a fixture address.
//!
//! A fixture host's address and its servers' ports are fixed (`ollama-offload` serves on
//! 127.0.0.53:11434), and every namespace shares the machine's loopback. When two test
//! processes (two worktrees, or a helper's run beside the full suite) start the same definition
//! at once, the second copy's server cannot bind its port and exits, its client talks to the
//! first copy's server, and the second report describes a host whose server is gone: the
//! running launch flips from `pid:N` to `unit:ollama.service`, with no error anywhere. So a
//! process takes an exclusive `flock(2)` on a file named after the address before it starts a
//! copy, and keeps it while any copy it started runs; another process waits for it. Within one
//! process nothing changes (it already shares its hosts through the fixture registry, and the
//! few tests that start a private copy are its own business). The kernel drops the lock when the
//! process ends, however it ends.

use std::collections::BTreeMap;
use std::fs::{File, TryLockError};
use std::path::PathBuf;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

/// The locks this process holds: key -> (copies started, the open lock file).
static HELD: Mutex<BTreeMap<String, (usize, File)>> = Mutex::new(BTreeMap::new());

/// How often a waiting process tries again.
const POLL: Duration = Duration::from_millis(50);

/// The lock file of `key` (a fixture address), shared by every test process of the machine.
pub fn lock_path(key: &str) -> PathBuf {
    std::env::temp_dir().join(format!("probe-fixture-addr-{key}.lock"))
}

/// This process's hold on `key`: released when the last hold of the process is dropped.
#[derive(Debug)]
pub struct AddrLock {
    key: String,
}

/// Takes `key` for this process, waiting up to `wait` while another process holds it. A
/// process that already holds it takes it again at once.
pub fn hold(key: &str, wait: Duration) -> Result<AddrLock, String> {
    let path = lock_path(key);
    let deadline = Instant::now() + wait;
    loop {
        {
            let mut held = HELD.lock().unwrap_or_else(PoisonError::into_inner);
            if let Some((count, _)) = held.get_mut(key) {
                *count += 1;
                return Ok(AddrLock {
                    key: key.to_string(),
                });
            }
            let file = File::options()
                .create(true)
                .append(true)
                .open(&path)
                .map_err(|e| format!("open {}: {e}", path.display()))?;
            // `flock(2)` on Linux: the same lock `flock(1)` takes.
            match file.try_lock() {
                Ok(()) => {
                    held.insert(key.to_string(), (1, file));
                    return Ok(AddrLock {
                        key: key.to_string(),
                    });
                }
                Err(TryLockError::WouldBlock) => {}
                Err(TryLockError::Error(e)) => {
                    return Err(format!("lock {}: {e}", path.display()));
                }
            }
        }
        if Instant::now() >= deadline {
            return Err(format!(
                "{key} stayed in use by another test process for {} s ({} is locked): two \
                 copies of one fixture host share its servers' fixed ports, so one waits for \
                 the other; is a stuck test process holding it?",
                wait.as_secs(),
                path.display()
            ));
        }
        std::thread::sleep(POLL);
    }
}

impl Drop for AddrLock {
    fn drop(&mut self) {
        let mut held = HELD.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((count, _)) = held.get_mut(&self.key) {
            *count -= 1;
            if *count == 0 {
                // Closing the file releases the lock.
                held.remove(&self.key);
            }
        }
    }
}
