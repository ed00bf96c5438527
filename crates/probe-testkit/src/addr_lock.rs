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
//!
//! Two processes can each hold an address the other waits for (the e2e binary starts its hosts
//! in parallel threads and keeps them to its end). A waiting process writes what it waits for
//! to `probe-fixture-wait-<pid>-<key>` and each holder its PID into the lock file; a waiter that
//! finds itself in a cycle of holders and waiters gives way (fails at once, with one line) if its
//! PID is the largest of the cycle, so exactly one of them does and the others go on.

use std::collections::BTreeMap;
use std::fs::{File, TryLockError};
use std::io::Write as _;
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

/// The file that says process `pid` waits for `key`.
fn wait_path(pid: u32, key: &str) -> PathBuf {
    std::env::temp_dir().join(format!("probe-fixture-wait-{pid}-{key}"))
}

/// Removes this process's wait file when the wait ends, however it ends.
struct Waiting(PathBuf);

impl Drop for Waiting {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

fn alive(pid: u32) -> bool {
    std::path::Path::new(&format!("/proc/{pid}")).exists()
}

/// The process that holds `key`, as its lock file says.
fn holder(key: &str) -> Option<u32> {
    let text = std::fs::read_to_string(lock_path(key)).ok()?;
    text.trim().parse().ok().filter(|pid| alive(*pid))
}

/// The keys process `pid` waits for.
fn waits_of(pid: u32) -> Vec<String> {
    let prefix = format!("probe-fixture-wait-{pid}-");
    let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| {
            let name = e.file_name();
            name.to_str()
                .and_then(|n| n.strip_prefix(&prefix))
                .map(str::to_string)
        })
        .collect()
}

/// The other processes of a wait cycle through `key` back to this one: `key`'s holder waits for
/// a key whose holder ... holds a key this process waits for. Depth-first, bounded.
fn cycle_through(key: &str) -> Option<Vec<u32>> {
    let me = std::process::id();
    let mut stack: Vec<(String, Vec<u32>)> = vec![(key.to_string(), Vec::new())];
    let mut steps = 0;
    while let Some((key, path)) = stack.pop() {
        steps += 1;
        if steps > 256 {
            return None;
        }
        let Some(pid) = holder(&key) else { continue };
        if pid == me {
            return Some(path);
        }
        if path.contains(&pid) {
            continue;
        }
        let mut next = path.clone();
        next.push(pid);
        for waited in waits_of(pid) {
            stack.push((waited, next.clone()));
        }
    }
    None
}

/// How many polls apart a waiter looks for a cycle (it must be seen twice in a row).
const CYCLE_EVERY: u32 = 10;

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
    let me = std::process::id();
    let mut waiting: Option<Waiting> = None;
    let mut polls: u32 = 0;
    let mut cycles_seen = 0;
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
                    // Who holds it, for a waiter's cycle check.
                    let _ = file.set_len(0);
                    let _ = (&file).write_all(me.to_string().as_bytes());
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
        if waiting.is_none() {
            let file = wait_path(me, key);
            let _ = std::fs::write(&file, b"");
            waiting = Some(Waiting(file));
        }
        polls += 1;
        if polls.is_multiple_of(CYCLE_EVERY) {
            match cycle_through(key) {
                Some(others) if others.iter().all(|p| *p < me) => {
                    cycles_seen += 1;
                    if cycles_seen >= 2 {
                        return Err(format!(
                            "{key} is held by pid {}, which waits (through {others:?}) for a fixture \
                             address this process (pid {me}) holds: the process with the largest \
                             PID of the cycle gives way; run the two test binaries one after the \
                             other",
                            others.first().copied().unwrap_or_default()
                        ));
                    }
                }
                _ => cycles_seen = 0,
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
