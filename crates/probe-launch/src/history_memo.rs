//! Shell history files read once per thread. A fleet's hosts often hold the same history (one
//! image, one deploy script typed on each), and reading its entries' launches is most of what
//! [`crate::launches_of`] costs on such a host (`probe audit --outliers` reads every member:
//! docs/BENCHMARKS.md, store section, rounds 7 and 8).
//!
//! The launches of one history file depend on that file alone (its path, modification time
//! and entries: the hints, the carried variables and the work budget are all made from them),
//! and, once each is completed, on the engine version each takes from its snapshot. So the
//! file is the key of its raw launches, and the file with those versions the key of the
//! completed ones: a snapshot whose file and versions are another's gets that other's
//! launches, equal to reading them again. Keys are compared whole (a hash only finds the
//! candidates). At most [`MEMO_FILES`] files are kept per thread, all dropped when it fills.
//! [`without_memo`] turns it off for tests that hold the memo to a fresh reading.

use std::cell::RefCell;
use std::collections::HashMap;
use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::rc::Rc;
use std::sync::atomic::{AtomicUsize, Ordering};

use probe_model::{HistoryEntry, HistoryFile, LaunchConfig};

use crate::hints::ParseHints;

/// History files kept per thread.
const MEMO_FILES: usize = 64;
/// Sets of engine versions kept per file.
const MEMO_VERSIONS: usize = 8;

/// Callers of [`without_memo`] still inside it: the memo is used only when none is.
static TURNED_OFF: AtomicUsize = AtomicUsize::new(0);

/// The raw launches of one history file, each with the hints it was read with.
pub(crate) type Raw = Vec<(LaunchConfig, ParseHints)>;

/// The completed launches of a file for one set of engine versions (one per raw launch).
type Finished = (Vec<Option<String>>, Rc<Vec<LaunchConfig>>);

/// One history file remembered: what makes its key, its raw launches, and its completed
/// launches for each set of engine versions met.
struct Remembered {
    path: String,
    mtime: Option<i64>,
    entries: Vec<HistoryEntry>,
    raw: Rc<Raw>,
    finished: Vec<Finished>,
}

impl Remembered {
    fn is(&self, file: &HistoryFile) -> bool {
        self.path == file.path && self.mtime == file.mtime && self.entries == file.entries
    }
}

thread_local! {
    static MEMO: RefCell<HashMap<u64, Vec<Remembered>>> = RefCell::new(HashMap::new());
}

/// Runs `f` with the memo off (on every thread, while `f` runs): what `f` reads, it reads
/// afresh. Other threads' readings only get slower meanwhile, never different.
pub fn without_memo<T>(f: impl FnOnce() -> T) -> T {
    struct On;
    impl Drop for On {
        fn drop(&mut self) {
            TURNED_OFF.fetch_sub(1, Ordering::SeqCst);
        }
    }
    TURNED_OFF.fetch_add(1, Ordering::SeqCst);
    let _on = On;
    f()
}

fn key_of(file: &HistoryFile) -> u64 {
    let mut hasher = DefaultHasher::new();
    file.path.hash(&mut hasher);
    file.mtime.hash(&mut hasher);
    for entry in &file.entries {
        entry.index.hash(&mut hasher);
        entry.time.hash(&mut hasher);
        entry.command.hash(&mut hasher);
    }
    hasher.finish()
}

/// The completed launches of `file`: `read` gives its raw launches, `complete` completes one
/// (with the snapshot's engine version) and `finish` re-reads a completed one with that
/// version; remembered when the memo is on, read afresh when it is off.
pub(crate) fn launches(
    file: &HistoryFile,
    read: impl FnOnce() -> Raw,
    complete: impl Fn(&mut LaunchConfig),
    finish: impl Fn(LaunchConfig, &ParseHints) -> LaunchConfig,
) -> Vec<LaunchConfig> {
    let complete_all = |raw: &Raw| -> Vec<LaunchConfig> {
        (raw.iter())
            .map(|(l, _)| {
                let mut l = l.clone();
                complete(&mut l);
                l
            })
            .collect()
    };
    let finish_all = |raw: &Raw, completed: Vec<LaunchConfig>| -> Vec<LaunchConfig> {
        (completed.into_iter().zip(raw))
            .map(|(l, (_, hints))| finish(l, hints))
            .collect()
    };
    if TURNED_OFF.load(Ordering::SeqCst) > 0 {
        let raw = read();
        let completed = complete_all(&raw);
        return finish_all(&raw, completed);
    }
    let key = key_of(file);
    let known = MEMO.with(|memo| {
        (memo.borrow().get(&key))
            .and_then(|candidates| candidates.iter().find(|r| r.is(file)))
            .map(|r| r.raw.clone())
    });
    let raw = match known {
        Some(raw) => raw,
        None => {
            let raw = Rc::new(read());
            MEMO.with(|memo| {
                let mut memo = memo.borrow_mut();
                if memo.values().map(Vec::len).sum::<usize>() >= MEMO_FILES {
                    memo.clear();
                }
                memo.entry(key).or_default().push(Remembered {
                    path: file.path.clone(),
                    mtime: file.mtime,
                    entries: file.entries.clone(),
                    raw: raw.clone(),
                    finished: Vec::new(),
                });
            });
            raw
        }
    };
    let completed = complete_all(&raw);
    let versions: Vec<Option<String>> =
        completed.iter().map(|l| l.engine_version.clone()).collect();
    let finished = MEMO.with(|memo| {
        (memo.borrow().get(&key))
            .and_then(|candidates| candidates.iter().find(|r| r.is(file)))
            .and_then(|r| r.finished.iter().find(|(v, _)| *v == versions))
            .map(|(_, finished)| finished.clone())
    });
    if let Some(finished) = finished {
        return finished.as_ref().clone();
    }
    let finished = finish_all(&raw, completed);
    MEMO.with(|memo| {
        let mut memo = memo.borrow_mut();
        if let Some(r) = (memo.get_mut(&key)).and_then(|c| c.iter_mut().find(|r| r.is(file))) {
            if r.finished.len() >= MEMO_VERSIONS {
                r.finished.clear();
            }
            r.finished.push((versions, Rc::new(finished.clone())));
        }
    });
    finished
}

#[cfg(test)]
mod tests {
    use probe_model::{HistoryEntry, HistoryFile, PythonEnv, PythonPackage, Snapshot};

    /// A host whose history holds `commands` (ten minutes apart) and whose one environment
    /// has vLLM `version`, installed before them.
    fn host(commands: &[&str], version: &str, mtime: i64) -> Snapshot {
        Snapshot {
            histories: vec![HistoryFile {
                path: "/root/.bash_history".into(),
                mtime: Some(mtime),
                entries: (commands.iter().enumerate())
                    .map(|(index, command)| HistoryEntry {
                        index: index as u32,
                        time: (index % 2 == 0).then_some(1_795_000_000 + index as i64 * 600),
                        command: command.to_string(),
                    })
                    .collect(),
                ..HistoryFile::default()
            }],
            python_envs: vec![PythonEnv {
                interpreter: "/opt/vllm/bin/python".into(),
                packages: vec![PythonPackage {
                    name: "vllm".into(),
                    version: version.into(),
                    installed_at: Some(1_790_000_000),
                    ..PythonPackage::default()
                }],
                ..PythonEnv::default()
            }],
            ..Snapshot::default()
        }
    }

    /// Each snapshot's launches with the memo warm (read right after snapshots that share its
    /// history file, or its engine version, or neither) are those read afresh: the memo tells
    /// apart the files' paths, times and entries, and the versions that complete them.
    #[test]
    fn remembered_histories_give_the_launches_read_afresh() {
        let typed = [
            "vllm serve Qwen/Qwen2-7B --tensor-parallel-size 2 --port 8001",
            "CMD='vllm serve Qwen/Qwen2-7B --max-num-seqs 64'",
            "eval \"$CMD\"",
            "python -m vllm.entrypoints.openai.api_server --model Qwen/Qwen2-7B --enforce-eager",
        ];
        let mut other = typed;
        other[3] = "python -m vllm.entrypoints.openai.api_server --model Qwen/Qwen2-7B";
        let hosts = [
            host(&typed, "0.11.0", 1_795_100_000),
            host(&typed, "0.11.0", 1_795_100_000),
            host(&typed, "0.10.2", 1_795_100_000),
            host(&typed, "0.11.0", 1_795_200_000),
            host(&other, "0.11.0", 1_795_100_000),
            host(&typed, "0.10.2", 1_795_100_000),
        ];
        let afresh: Vec<_> = (hosts.iter())
            .map(|h| super::without_memo(|| crate::launches_of(h)))
            .collect();
        assert!(
            afresh[0]
                .iter()
                .any(|l| l.engine_version.as_deref() == Some("0.11.0"))
        );
        assert!(
            afresh[2]
                .iter()
                .any(|l| l.engine_version.as_deref() == Some("0.10.2"))
        );
        assert_ne!(afresh[0], afresh[4]);
        for round in 0..2 {
            for (h, expected) in hosts.iter().zip(&afresh) {
                assert_eq!(&crate::launches_of(h), expected, "round {round}");
            }
        }
    }
}
