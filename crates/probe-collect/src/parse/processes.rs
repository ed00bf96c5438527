//! Processes that are or wrap a model server, from raw /proc reads, classified into
//! launcher / worker / wrapper with the process tree.

use std::collections::BTreeMap;

use probe_model::{ProcessInfo, ProcessRole};

use super::Ctx;
use crate::config;
use crate::frame::records;
use crate::sanitize::{line, sanitize_terminal};

/// At most this many processes are kept.
pub const MAX_PROCESSES: usize = 8192;

/// Extra per-process facts used to plan round 2 (not stored in the snapshot).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProcExtra {
    /// Targets of fd 1 and fd 2 (`/srv/sglang/server.log`).
    pub stdout: Option<String>,
    pub stderr: Option<String>,
}

/// Parses the `processes` section.
pub fn parse(body: &[u8], ctx: &Ctx) -> (Vec<ProcessInfo>, BTreeMap<u32, ProcExtra>) {
    let mut procs: BTreeMap<u32, ProcessInfo> = BTreeMap::new();
    let mut extra: BTreeMap<u32, ProcExtra> = BTreeMap::new();
    let mut self_ns: Option<String> = None;
    let mut mnt_ns: BTreeMap<u32, String> = BTreeMap::new();
    for r in records(body, &ctx.boundary) {
        if r.kind != 'R' {
            continue;
        }
        if r.header == "self mntns" {
            self_ns = non_empty(line(r.data));
            continue;
        }
        if r.header == "links" {
            for (pid, what, target) in links(r.data) {
                let what = match what {
                    "exe" | "cwd" => what,
                    "fd/1" => "fd1",
                    "fd/2" => "fd2",
                    "ns/mnt" => "mntns",
                    _ => continue,
                };
                if let Some(p) = procs.get_mut(&pid) {
                    set_link(p, what, target, &mut extra, &mut mnt_ns);
                }
            }
            continue;
        }
        let mut it = r.header.split(' ');
        if it.next() != Some("p") {
            continue;
        }
        let Some(pid) = it.next().and_then(|p| p.parse::<u32>().ok()) else {
            continue;
        };
        let what = it.next().unwrap_or("");
        if !procs.contains_key(&pid) && procs.len() >= MAX_PROCESSES {
            continue;
        }
        let p = procs.entry(pid).or_insert_with(|| ProcessInfo {
            pid,
            ..Default::default()
        });
        read_proc_file(p, what, r.data, ctx, &mut extra, &mut mnt_ns);
    }
    finish_processes(procs, self_ns.as_deref(), &mnt_ns, ctx, extra)
}

/// One `/proc/PID/...` record of a process.
fn read_proc_file(
    p: &mut ProcessInfo,
    what: &str,
    data: &[u8],
    ctx: &Ctx,
    extra: &mut BTreeMap<u32, ProcExtra>,
    mnt_ns: &mut BTreeMap<u32, String>,
) {
    match what {
        "stat" => parse_stat(p, &String::from_utf8_lossy(data), ctx),
        "status" => read_status(p, &String::from_utf8_lossy(data)),
        "cmdline" => read_cmdline(p, data),
        "environ" => read_environ(p, data),
        "exe" | "cwd" | "fd1" | "fd2" | "mntns" => set_link(p, what, line(data), extra, mnt_ns),
        "cgroup" => p.container_id = container_of(&String::from_utf8_lossy(data)),
        _ => {}
    }
}

/// A link of a process (`exe`, `cwd`, `fd1`, `fd2`, `mntns`) read as `target`.
fn set_link(
    p: &mut ProcessInfo,
    what: &str,
    target: String,
    extra: &mut BTreeMap<u32, ProcExtra>,
    mnt_ns: &mut BTreeMap<u32, String>,
) {
    let target = non_empty(target);
    match what {
        "exe" => p.exe = target,
        "cwd" => p.cwd = target,
        "fd1" => extra.entry(p.pid).or_default().stdout = target,
        "fd2" => extra.entry(p.pid).or_default().stderr = target,
        "mntns" => {
            if let Some(ns) = target {
                mnt_ns.insert(p.pid, ns);
            }
        }
        _ => {}
    }
}

/// `/proc/PID/status`: uid, and parent and name where `stat` gave none.
fn read_status(p: &mut ProcessInfo, text: &str) {
    for l in text.lines() {
        if let Some(v) = l.strip_prefix("Uid:") {
            p.uid = v.split_whitespace().next().and_then(|u| u.parse().ok());
        } else if let Some(v) = l.strip_prefix("PPid:") {
            p.ppid = p.ppid.or_else(|| v.trim().parse().ok());
        } else if let Some(v) = l.strip_prefix("Name:") {
            p.comm = p
                .comm
                .clone()
                .or_else(|| Some(crate::sanitize::sanitize_line(v.trim())));
        }
    }
}

/// `/proc/PID/cmdline`: NUL-separated arguments.
fn read_cmdline(p: &mut ProcessInfo, data: &[u8]) {
    let mut parts: Vec<&[u8]> = data.split(|&c| c == 0).collect();
    if parts.last().is_some_and(|l| l.is_empty()) {
        parts.pop();
    }
    p.argv = parts
        .iter()
        .take(4096)
        .map(|a| sanitize_terminal(&String::from_utf8_lossy(a)))
        .collect();
}

/// `/proc/PID/environ`: NUL-separated `KEY=VALUE` entries.
fn read_environ(p: &mut ProcessInfo, data: &[u8]) {
    for kv in data.split(|&c| c == 0).take(4096) {
        let kv = String::from_utf8_lossy(kv);
        if let Some((k, v)) = kv.split_once('=')
            && !k.is_empty()
        {
            p.env
                .insert(crate::sanitize::sanitize_line(k), sanitize_terminal(v));
        }
    }
}

/// Users and mount roots filled in, processes without a command line dropped, roles given;
/// ancestors that turned out to be neither launcher, worker nor wrapper are not kept.
fn finish_processes(
    mut procs: BTreeMap<u32, ProcessInfo>,
    self_ns: Option<&str>,
    mnt_ns: &BTreeMap<u32, String>,
    ctx: &Ctx,
    extra: BTreeMap<u32, ProcExtra>,
) -> (Vec<ProcessInfo>, BTreeMap<u32, ProcExtra>) {
    for p in procs.values_mut() {
        p.user = p.uid.and_then(|u| ctx.users.get(&u).cloned());
        if other_mount_ns(self_ns, mnt_ns.get(&p.pid).map(String::as_str), p) {
            p.mount_root = Some(format!("/proc/{}/root", p.pid));
        }
    }
    let mut list: Vec<ProcessInfo> = procs
        .into_values()
        .filter(|p| !p.argv.is_empty() || p.comm.is_some())
        .collect();
    classify(&mut list);
    list.retain(|p| p.role != ProcessRole::Other || p.engine.is_some());
    (list, extra)
}

/// The `links` record: `PID/NAME\0TARGET\0` pairs (find's `%p\0%l\0`), so a link target
/// may hold any byte but NUL.
fn links(data: &[u8]) -> impl Iterator<Item = (u32, &str, String)> + '_ {
    let mut parts = data.split(|&c| c == 0);
    std::iter::from_fn(move || {
        loop {
            let path = parts.next()?;
            let target = parts.next()?;
            let Some((pid, what)) = std::str::from_utf8(path)
                .ok()
                .and_then(|p| p.split_once('/'))
            else {
                continue;
            };
            let Ok(pid) = pid.parse::<u32>() else {
                continue;
            };
            return Some((pid, what, line(target)));
        }
    })
}

fn non_empty(s: String) -> Option<String> {
    (!s.is_empty()).then_some(s)
}

/// Whether `p` sees another filesystem than the collector: its mount namespace differs from
/// ours, or, where its namespace cannot be read (not root), its cgroup names a container.
fn other_mount_ns(ours: Option<&str>, theirs: Option<&str>, p: &ProcessInfo) -> bool {
    match (ours, theirs) {
        (Some(a), Some(b)) => a != b,
        _ => p.container_id.is_some(),
    }
}

/// `pid (comm) S ppid ... starttime(22) ...`; comm may hold spaces and parentheses.
fn parse_stat(p: &mut ProcessInfo, stat: &str, ctx: &Ctx) {
    let (Some(open), Some(close)) = (stat.find('('), stat.rfind(')')) else {
        return;
    };
    if close > open {
        p.comm = stat
            .get(open + 1..close)
            .map(crate::sanitize::sanitize_line);
    }
    let rest: Vec<&str> = stat
        .get(close + 1..)
        .unwrap_or("")
        .split_whitespace()
        .collect();
    p.ppid = rest.get(1).and_then(|v| v.parse().ok());
    if let (Some(ticks), Some(hz), Some(btime)) = (
        rest.get(19).and_then(|v| v.parse::<u64>().ok()),
        ctx.clk_tck,
        ctx.boot_time,
    ) {
        p.start_time = Some(btime + i64::try_from(ticks / hz).unwrap_or(0));
    }
}

/// A 64-hex container id in a cgroup path (docker, containerd, podman/libpod).
pub fn container_of(cgroup: &str) -> Option<String> {
    for part in cgroup.split(['/', ':', '\n', '-', '.']) {
        if part.len() == 64
            && part
                .bytes()
                .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase())
        {
            return Some(part.to_string());
        }
    }
    None
}

fn basename(s: &str) -> &str {
    s.rsplit('/').next().unwrap_or(s)
}

/// Engine whose launcher/worker pattern matches the argv (joined with spaces).
pub fn engine_of(argv: &[String]) -> Option<(String, bool)> {
    let joined = argv.join(" ");
    let first = argv.first().map(String::as_str).unwrap_or("");
    for e in &config::servers().engines {
        if e.worker.as_str() != "^$" && e.worker.is_match(first) {
            return Some((e.name.clone(), true));
        }
    }
    for e in &config::servers().engines {
        if e.matches.is_match(&joined) {
            return Some((e.name.clone(), false));
        }
    }
    None
}

fn is_wrapper_name(argv: &[String]) -> bool {
    let w = &config::servers().wrappers;
    argv.first().is_some_and(|a| {
        let b = basename(a);
        w.iter()
            .any(|x| x == b || (b.starts_with("python") && x == "python"))
    })
}

/// (engine match: (engine, is re-titled worker), ppid) per process.
type Info = (Option<(String, bool)>, Option<u32>);

/// Sets role, engine and launcher_pid on every process.
pub fn classify(list: &mut [ProcessInfo]) {
    let by_pid: BTreeMap<u32, usize> = list.iter().enumerate().map(|(i, p)| (p.pid, i)).collect();
    let info: Vec<Info> = list.iter().map(|p| (engine_of(&p.argv), p.ppid)).collect();
    let (mut roles, mut engines) = first_roles(list, &info, &by_pid);
    mark_wrappers(list, &info, &by_pid, &mut roles, &mut engines);
    // Wrapper demotions may have left workers under them: recompute launcher_pid.
    let pids: Vec<u32> = list.iter().map(|p| p.pid).collect();
    for i in 0..list.len() {
        let role = roles.get(i).copied().unwrap_or_default();
        let launcher = match role {
            ProcessRole::Worker => ancestors(i, &info, &by_pid)
                .into_iter()
                .find(|&j| roles.get(j) == Some(&ProcessRole::Launcher)),
            ProcessRole::Wrapper => descendants_launcher(i, &info, &by_pid, &roles, list.len()),
            _ => None,
        };
        if let Some(p) = list.get_mut(i) {
            p.role = role;
            p.engine = engines
                .get(i)
                .cloned()
                .flatten()
                .as_deref()
                .and_then(probe_model::Engine::parse);
            p.launcher_pid = launcher.and_then(|j| pids.get(j).copied());
        }
    }
}

/// Indices of a process's ancestors in the list, nearest first (at most 65, no cycles).
fn ancestors(i: usize, info: &[Info], by_pid: &BTreeMap<u32, usize>) -> Vec<usize> {
    let mut out = Vec::new();
    let mut cur = info.get(i).and_then(|x| x.1);
    while let Some(pp) = cur {
        let Some(&j) = by_pid.get(&pp) else { break };
        if out.contains(&j) || out.len() > 64 {
            break;
        }
        out.push(j);
        cur = info.get(j).and_then(|x| x.1);
    }
    out
}

/// Roles before wrappers are known, and each process's engine.
///
/// A matched, non-worker process is a launcher unless a matched non-worker ancestor of the
/// same engine exists (then it is a spawned worker) or it is a known wrapper with a matched
/// descendant (then it wraps).
fn first_roles(
    list: &[ProcessInfo],
    info: &[Info],
    by_pid: &BTreeMap<u32, usize>,
) -> (Vec<ProcessRole>, Vec<Option<String>>) {
    let mut roles = vec![ProcessRole::Other; list.len()];
    let mut engines: Vec<Option<String>> = vec![None; list.len()];
    for (i, (role, engine)) in roles.iter_mut().zip(engines.iter_mut()).enumerate() {
        let Some(Some((eng, worker))) = info.get(i).map(|x| x.0.clone()) else {
            continue;
        };
        *engine = Some(eng.clone());
        if worker {
            *role = ProcessRole::Worker;
            continue;
        }
        let anc = ancestors(i, info, by_pid);
        let under_launcher = anc.iter().any(|&j| {
            matches!(info.get(j).and_then(|x| x.0.as_ref()), Some((e, false)) if *e == eng)
                && !list
                    .get(j)
                    .is_some_and(|p| is_wrapper_name(&p.argv) && !is_python_launcher(&p.argv))
        });
        *role = if under_launcher {
            ProcessRole::Worker
        } else {
            ProcessRole::Launcher
        };
    }
    (roles, engines)
}

/// Wrappers: matched launchers with a launcher descendant, and unmatched known wrappers that
/// are ancestors of a launcher; a wrapper without an engine takes its launcher's.
fn mark_wrappers(
    list: &[ProcessInfo],
    info: &[Info],
    by_pid: &BTreeMap<u32, usize>,
    roles: &mut [ProcessRole],
    engines: &mut [Option<String>],
) {
    for i in 0..list.len() {
        if roles.get(i) != Some(&ProcessRole::Launcher) {
            continue;
        }
        for j in ancestors(i, info, by_pid) {
            let Some(p) = list.get(j) else { continue };
            let r = roles.get(j).copied().unwrap_or_default();
            if r == ProcessRole::Launcher || (r == ProcessRole::Other && is_wrapper_name(&p.argv)) {
                if let Some(x) = roles.get_mut(j) {
                    *x = ProcessRole::Wrapper;
                }
                if let (Some(e), Some(slot)) =
                    (engines.get(i).cloned().flatten(), engines.get_mut(j))
                    && slot.is_none()
                {
                    *slot = Some(e);
                }
            }
        }
    }
}

fn is_python_launcher(argv: &[String]) -> bool {
    argv.first()
        .is_some_and(|a| basename(a).starts_with("python"))
        && argv.iter().any(|a| a == "-m" || a.ends_with(".py"))
}

fn descendants_launcher(
    i: usize,
    info: &[Info],
    by_pid: &BTreeMap<u32, usize>,
    roles: &[ProcessRole],
    n: usize,
) -> Option<usize> {
    let my_pid = by_pid.iter().find(|(_, v)| **v == i).map(|(k, _)| *k)?;
    (0..n).find(|&j| {
        if roles.get(j) != Some(&ProcessRole::Launcher) {
            return false;
        }
        let mut cur = info.get(j).and_then(|x| x.1);
        let mut steps = 0;
        while let Some(pp) = cur {
            if pp == my_pid {
                return true;
            }
            steps += 1;
            if steps > 64 {
                break;
            }
            cur = by_pid.get(&pp).and_then(|&k| info.get(k)).and_then(|x| x.1);
        }
        false
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(b: &str, pid: u32, what: &str, data: &[u8]) -> Vec<u8> {
        let mut v = format!("\n{b} R p {pid} {what}\n").into_bytes();
        v.extend_from_slice(data);
        v
    }

    #[test]
    fn tree_roles() {
        let b = "BB";
        let ctx = Ctx {
            boundary: b.into(),
            clk_tck: Some(100),
            boot_time: Some(1_761_800_000),
            users: [(0, "root".to_string())].into(),
            ..Default::default()
        };
        let mut body = Vec::new();
        // nohup'd bash -c wrapper → python launcher → sglang::scheduler worker.
        body.extend(rec(
            b,
            100,
            "stat",
            b"100 (bash) S 1 100 100 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 5000 0 0",
        ));
        body.extend(rec(
            b,
            100,
            "cmdline",
            b"bash\0-c\0python3 -m sglang.launch_server --model-path /m\0",
        ));
        body.extend(rec(
            b,
            101,
            "stat",
            b"101 (python3) S 100 100 100 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 6000 0 0",
        ));
        body.extend(rec(
            b,
            101,
            "status",
            b"Name:\tpython3\nPPid:\t100\nUid:\t0\t0\t0\t0\n",
        ));
        body.extend(rec(
            b,
            101,
            "cmdline",
            b"/opt/venv/bin/python3\0-m\0sglang.launch_server\0--model-path\0/m\0--api-key\0x\0",
        ));
        body.extend(rec(b, 101, "environ", b"HF_TOKEN=hf_abc\0PATH=/usr/bin\0"));
        body.extend(rec(b, 101, "exe", b"/usr/bin/python3.11\n"));
        body.extend(rec(b, 101, "cwd", b"/srv/sglang\n"));
        body.extend(rec(b, 101, "fd1", b"/srv/sglang/server.log\n"));
        body.extend(rec(
            b,
            102,
            "stat",
            b"102 (sglang::sched) S 101 100 100 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 7000 0 0",
        ));
        body.extend(rec(b, 102, "cmdline", b"sglang::scheduler_TP0\0"));
        body.extend(rec(
            b,
            103,
            "stat",
            b"103 (python3) S 101 100 100 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 7000 0 0",
        ));
        body.extend(rec(
            b,
            103,
            "cmdline",
            b"/opt/venv/bin/python3\0-c\0from multiprocessing.spawn import spawn_main; sglang\0",
        ));
        body.extend(rec(b, 104, "cgroup", b"0::/system.slice/docker-0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef.scope\n"));
        body.extend(rec(b, 104, "cmdline", b"vllm\0serve\0m\0"));
        body.extend(format!("\n{b} R self mntns\nmnt:[4026531841]\n").into_bytes());
        body.extend(rec(b, 101, "mntns", b"mnt:[4026531841]\n"));
        // 105: another mount namespace without a container cgroup (PrivateTmp unit).
        body.extend(rec(b, 105, "cmdline", b"vllm\0serve\0/m2\0"));
        body.extend(rec(b, 105, "mntns", b"mnt:[4026532999]\n"));
        let (list, extra) = parse(&body, &ctx);
        let get = |pid| list.iter().find(|p| p.pid == pid).unwrap();
        assert_eq!(get(101).mount_root, None);
        // 104: namespace unreadable, docker cgroup: read through its root.
        assert_eq!(get(104).mount_root.as_deref(), Some("/proc/104/root"));
        assert_eq!(get(105).mount_root.as_deref(), Some("/proc/105/root"));
        assert_eq!(get(105).container_id, None);
        assert_eq!(get(100).role, ProcessRole::Wrapper);
        assert_eq!(get(100).launcher_pid, Some(101));
        assert_eq!(get(101).role, ProcessRole::Launcher);
        assert_eq!(get(101).engine, Some(probe_model::Engine::Sglang));
        assert_eq!(get(101).start_time, Some(1_761_800_060));
        assert_eq!(get(101).user.as_deref(), Some("root"));
        assert_eq!(get(101).argv.len(), 7);
        assert_eq!(
            get(101).env.get("PATH").map(String::as_str),
            Some("/usr/bin")
        );
        assert_eq!(get(102).role, ProcessRole::Worker);
        assert_eq!(get(102).launcher_pid, Some(101));
        assert_eq!(get(103).role, ProcessRole::Worker);
        assert_eq!(
            get(104).container_id.as_deref(),
            Some("0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef")
        );
        assert_eq!(get(104).role, ProcessRole::Launcher);
        assert_eq!(
            extra[&101].stdout.as_deref(),
            Some("/srv/sglang/server.log")
        );
    }
}
