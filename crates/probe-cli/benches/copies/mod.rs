//! Copies of one serving fixture host for the `peers` bench (issue 35 item 4): each a
//! `probe_testkit::fixture::FixtureHost::start_copy` of the definition (its real sshd, files and
//! engine process in its own namespaces) on its own 127.0.2.N, with its own machine-id, so the
//! audit sees N distinct hosts that each serve, log and keep history as the definition does.

use std::net::Ipv4Addr;
use std::path::Path;

use super::light::Named;
use probe_testkit::KeyPair;
use probe_testkit::fixture::{CopyAt, FixtureHost};

/// The third octet of the copies' loopback addresses (127.0.2.1 ..): off the fixture hosts'
/// fixed 127.0.0.N, the light hosts' 127.0.0.150.. and the other helpers' ranges.
const OCTET: u8 = 2;

/// A running copy: its alias, its `Host` block and the host itself (dropped: stopped).
pub struct Copied {
    pub alias: String,
    pub sshd_block: String,
    pub host: FixtureHost,
}

impl Named for Copied {
    fn alias(&self) -> &str {
        &self.alias
    }
    fn block(&self) -> &str {
        &self.sshd_block
    }
}

fn start_one(
    definition: &str,
    index: usize,
    key: &KeyPair,
    dir: &Path,
    extra: &str,
    alias: String,
) -> Copied {
    let last = u8::try_from(index + 1).expect("at most 254 copies");
    let at = CopyAt::new(Ipv4Addr::new(127, 0, OCTET, last), index);
    let host = FixtureHost::start_copy(definition, key.clone(), dir, &at, extra);
    let block = host
        .ssh_config_block(&key.private, &dir.join("known_hosts"))
        .replacen(
            &format!("Host {}\n", host.alias),
            &format!("Host {alias}\n"),
            1,
        );
    Copied {
        alias,
        sshd_block: block,
        host,
    }
}

/// Appends the copies' host keys to `DIR/known_hosts`.
fn trust(copies: &[Copied], dir: &Path) {
    use std::io::Write;
    let lines: String = copies.iter().map(|c| c.host.known_hosts_lines()).collect();
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir.join("known_hosts"))
        .and_then(|mut file| file.write_all(lines.as_bytes()))
        .unwrap();
}

/// Starts `count` copies of `definition` on 127.0.2.1.., a few at a time (each waits for its
/// engine's first log lines), and trusts their host keys in `DIR/known_hosts`.
pub fn start_copies(definition: &str, count: usize, key: &KeyPair, dir: &Path) -> Vec<Copied> {
    let started = std::time::Instant::now();
    let mut copies: Vec<Copied> = Vec::new();
    for chunk in (0..count).collect::<Vec<_>>().chunks(16) {
        let batch: Vec<Copied> = std::thread::scope(|s| {
            let handles: Vec<_> = chunk
                .iter()
                .map(|&i| {
                    s.spawn(move || start_one(definition, i, key, dir, "", format!("copy-{i:03}")))
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("copy start panicked"))
                .collect()
        });
        copies.extend(batch);
    }
    trust(&copies, dir);
    println!(
        "{} copies of `{definition}` (sshd in namespaces on 127.0.{OCTET}.1..) started in {:.1} s",
        copies.len(),
        started.elapsed().as_secs_f64()
    );
    copies
}

/// One more copy (index 250, 127.0.2.251) whose sshd runs `force` (a `ForceCommand` line) for
/// every channel, as alias `light-capture`; trusted in `DIR/known_hosts`.
pub fn start_capture_copy(definition: &str, key: &KeyPair, dir: &Path, force: &str) -> Copied {
    let copy = start_one(definition, 250, key, dir, force, "light-capture".into());
    trust(std::slice::from_ref(&copy), dir);
    copy
}

/// One process from `/proc/PID/stat`: its parent, command name, start time, and CPU ticks of
/// its own (`utime + stime`) and of its waited-for children (`cutime + cstime`).
#[derive(Debug, Clone)]
pub struct Proc {
    pub pid: u32,
    pub ppid: u32,
    pub comm: String,
    pub start: u64,
    pub own: u64,
    pub children: u64,
}

/// Every process on the machine.
pub fn scan() -> Vec<Proc> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| {
            let pid: u32 = e.file_name().to_str()?.parse().ok()?;
            let stat = std::fs::read_to_string(e.path().join("stat")).ok()?;
            let (head, rest) = stat.rsplit_once(')')?;
            let comm = head.split_once('(')?.1.to_string();
            let f: Vec<&str> = rest.split_whitespace().collect();
            let num = |i: usize| f.get(i).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
            // After the command: state(0) ppid(1) ... utime(11) stime(12) cutime(13)
            // cstime(14) ... starttime(19).
            Some(Proc {
                pid,
                ppid: u32::try_from(num(1)).unwrap_or(0),
                comm,
                start: num(19),
                own: num(11) + num(12),
                children: num(13) + num(14),
            })
        })
        .collect()
}

/// The processes of `procs` under `roots` (the roots included).
pub fn under(procs: &[Proc], roots: &[u32]) -> Vec<Proc> {
    let mut keep: std::collections::BTreeSet<u32> = roots.iter().copied().collect();
    loop {
        let before = keep.len();
        for p in procs {
            if keep.contains(&p.ppid) {
                keep.insert(p.pid);
            }
        }
        if keep.len() == before {
            break;
        }
    }
    procs
        .iter()
        .filter(|p| keep.contains(&p.pid))
        .cloned()
        .collect()
}

/// CPU ticks (1/100 s) spent so far by the trees under `roots`: every live process's own and
/// its reaped children's (a process that ended is in its parent's `children`), the fixtures'
/// engines (which log on their own, whoever collects) left out.
pub fn tree_ticks(roots: &[u32]) -> u64 {
    under(&scan(), roots)
        .iter()
        .filter(|p| !p.comm.starts_with("python"))
        .map(|p| p.own + p.children)
        .sum()
}

/// The kind a process's CPU is reported under.
pub fn kind(comm: &str) -> &'static str {
    match comm {
        "sshd" => "sshd (listener and sessions)",
        "sh" | "dash" | "bash" | "busybox" => "shells (sh: channels, lanes, subshells)",
        "python3" | "python" => "the fixture's engine (not collection)",
        "awk" | "mawk" | "gawk" => "awk",
        "timeout" => "timeout",
        "cat" | "head" | "tail" | "stat" | "ls" | "find" | "readlink" | "od" | "tr" | "wc"
        | "sed" | "grep" | "cut" | "sort" | "date" | "env" | "id" | "uname" | "ps" | "tee" => {
            "coreutils-like programs (sampled)"
        }
        _ => "other programs (sampled)",
    }
}

/// Samples the trees under `roots` every 20 ms until `stop` is set: for each process seen, its
/// command and its own CPU ticks when first and last seen (0 at first sight for one born after
/// the start). Returns `(kind -> own ticks, processes seen born in the run, every pid seen)`.
pub fn sample(
    roots: &[u32],
    stop: &std::sync::atomic::AtomicBool,
) -> (
    std::collections::BTreeMap<&'static str, u64>,
    usize,
    std::collections::BTreeSet<u32>,
) {
    use std::collections::BTreeMap;
    use std::sync::atomic::Ordering;
    let mut seen: BTreeMap<(u32, u64), (String, u64, u64)> = BTreeMap::new();
    for p in under(&scan(), roots) {
        seen.insert((p.pid, p.start), (p.comm, p.own, p.own));
    }
    let existing: std::collections::BTreeSet<(u32, u64)> = seen.keys().copied().collect();
    loop {
        let last = stop.load(Ordering::Relaxed);
        for p in under(&scan(), roots) {
            let e = seen
                .entry((p.pid, p.start))
                .or_insert_with(|| (p.comm.clone(), 0, 0));
            e.0 = p.comm;
            e.2 = e.2.max(p.own);
        }
        if last {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let mut by_kind: BTreeMap<&'static str, u64> = BTreeMap::new();
    for (comm, first, last) in seen.values() {
        *by_kind.entry(kind(comm)).or_default() += last.saturating_sub(*first);
    }
    let pids = seen.keys().map(|(pid, _)| *pid).collect();
    (by_kind, seen.len() - existing.len(), pids)
}

/// Turns the kernel's process accounting (`acct(2)`, through Python's `ctypes`: the bench's
/// crate forbids `unsafe`) on into `file`, or off with `None`. While on, every process that ends
/// on the machine appends a 64-byte `acct_v3` record; used only by the split runs, to count the
/// programs the hosts start.
pub fn accounting(file: Option<&Path>) -> bool {
    let arg = file.map_or("None".to_string(), |f| format!("b'{}'", f.display()));
    std::process::Command::new("python3")
        .arg("-c")
        .arg(format!(
            "import ctypes,sys; sys.exit(ctypes.CDLL(None, use_errno=True).acct({arg}) != 0)"
        ))
        .status()
        .is_ok_and(|s| s.success())
}

/// `(pid, ppid, command)` of each `acct_v3` record in `bytes`.
pub fn acct_records(bytes: &[u8]) -> Vec<(u32, u32, String)> {
    bytes
        .chunks_exact(64)
        .filter(|r| r.get(1) == Some(&3))
        .map(|r| {
            let word = |at: usize| {
                r.get(at..at + 4)
                    .and_then(|b| <[u8; 4]>::try_from(b).ok())
                    .map_or(0, u32::from_le_bytes)
            };
            let comm = r.get(48..64).unwrap_or_default();
            let end = comm.iter().position(|b| *b == 0).unwrap_or(comm.len());
            (
                word(16),
                word(20),
                String::from_utf8_lossy(comm.get(..end).unwrap_or_default()).into_owned(),
            )
        })
        .collect()
}

/// How many processes that ended under `known` (pids seen in the copies' trees) each command
/// name accounts for: a record belongs when its parent is known or belongs (to a fixed point).
pub fn starts_by_command(
    records: &[(u32, u32, String)],
    known: &std::collections::BTreeSet<u32>,
) -> std::collections::BTreeMap<String, usize> {
    let mut ours: std::collections::BTreeSet<u32> = known.clone();
    loop {
        let before = ours.len();
        for (pid, ppid, _) in records {
            if ours.contains(ppid) {
                ours.insert(*pid);
            }
        }
        if ours.len() == before {
            break;
        }
    }
    let mut by: std::collections::BTreeMap<String, usize> = std::collections::BTreeMap::new();
    for (pid, ppid, comm) in records {
        if ours.contains(pid) && ours.contains(ppid) {
            *by.entry(comm.clone()).or_default() += 1;
        }
    }
    by
}
