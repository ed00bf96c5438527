//! systemd unit files with drop-ins applied in systemd's order, and `systemctl show` state.

use std::collections::BTreeMap;

use probe_model::{
    EnvironmentFile, FileText, SectionStatus, SystemdUnit, UnitScope, UnitState, UnixTime,
};

use crate::frame::{FileHeader, file_header, records};
use crate::sanitize::{sanitize_line, text};

/// Priority of a unit directory (lower wins), as systemd orders them.
fn dir_priority(path: &str) -> u8 {
    if path.contains("/.config/systemd/") {
        0
    } else if path.starts_with("/etc/") {
        1
    } else if path.starts_with("/run/systemd/transient") {
        2
    } else if path.starts_with("/run/") {
        3
    } else if path.starts_with("/usr/local/") {
        4
    } else {
        5
    }
}

fn file_text(h: &FileHeader, data: &[u8]) -> FileText {
    FileText {
        path: h.path.clone(),
        mtime: h.mtime,
        content: text(data),
        truncated: h.size.is_some_and(|s| s > data.len() as u64),
    }
}

/// Parses the `units` section.
pub fn parse(body: &[u8], boundary: &str) -> Vec<SystemdUnit> {
    let mut units: Vec<SystemdUnit> = Vec::new();
    let mut dropins: DropIns = BTreeMap::new();
    let mut envfiles: Vec<(String, FileHeader, Vec<u8>)> = Vec::new();
    for r in records(body, boundary) {
        if r.kind != 'F' {
            continue;
        }
        let h = file_header(&r.header);
        let mut tag = h.tag.splitn(4, ':');
        match tag.next() {
            Some("frag") if h.is_ok() => read_fragment(&mut units, &h, &mut tag, r.data),
            Some("dropin") if h.is_ok() => {
                read_dropin(&units, &mut dropins, &h, &mut tag, r.data);
            }
            Some("envfile") => {
                let unit = sanitize_line(tag.next().unwrap_or(""));
                envfiles.push((unit, h.clone(), r.data.to_vec()));
            }
            _ => {}
        }
    }
    finish_units(&mut units, dropins, &envfiles);
    units
}

/// (unit index) → drop-ins by file name → (priority, specificity, FileText)
type DropIns = BTreeMap<usize, BTreeMap<String, (u8, u8, FileText)>>;

/// The `user`/`system` scope and the owner (`-` for none) of a tag.
fn scope_owner(tag: &mut std::str::SplitN<'_, char>) -> (UnitScope, Option<String>) {
    let scope = if tag.next() == Some("user") {
        UnitScope::User
    } else {
        UnitScope::System
    };
    let owner = tag.next().filter(|o| *o != "-").map(sanitize_line);
    (scope, owner)
}

/// A unit's fragment file, unless a higher-priority directory already gave this unit.
fn read_fragment(
    units: &mut Vec<SystemdUnit>,
    h: &FileHeader,
    tag: &mut std::str::SplitN<'_, char>,
    data: &[u8],
) {
    let (scope, owner) = scope_owner(tag);
    let name = sanitize_line(h.path.rsplit('/').next().unwrap_or(""));
    if units
        .iter()
        .any(|u| u.name == name && u.scope == scope && u.owner == owner)
    {
        return;
    }
    units.push(SystemdUnit {
        name,
        scope,
        owner,
        fragment: file_text(h, data),
        ..Default::default()
    });
}

/// A drop-in of a unit read before; of drop-ins with the same file name, `name.d` beats
/// `name@.service.d` beats `service.d`, then the higher-priority directory wins.
fn read_dropin(
    units: &[SystemdUnit],
    dropins: &mut DropIns,
    h: &FileHeader,
    tag: &mut std::str::SplitN<'_, char>,
    data: &[u8],
) {
    let (scope, owner) = scope_owner(tag);
    let unit = sanitize_line(tag.next().unwrap_or(""));
    let Some(idx) = units
        .iter()
        .position(|u| u.name == unit && u.scope == scope && u.owner == owner)
    else {
        return;
    };
    let file = h.path.rsplit('/').next().unwrap_or("").to_string();
    let dir = h.path.rsplit('/').nth(1).unwrap_or("");
    let spec = if dir == format!("{unit}.d") {
        0
    } else if dir == "service.d" {
        2
    } else {
        1
    };
    let pri = dir_priority(&h.path);
    let ft = file_text(h, data);
    let slot = dropins.entry(idx).or_default();
    match slot.get(&file) {
        Some((p, s, _)) if (*p, *s) <= (pri, spec) => {}
        _ => {
            slot.insert(file, (pri, spec, ft));
        }
    }
}

/// Drop-ins attached and applied, environment files read.
fn finish_units(
    units: &mut [SystemdUnit],
    dropins: DropIns,
    envfiles: &[(String, FileHeader, Vec<u8>)],
) {
    for (idx, files) in dropins {
        if let Some(u) = units.get_mut(idx) {
            // systemd applies drop-ins sorted by file name across all directories.
            u.drop_ins = files.into_values().map(|(_, _, f)| f).collect();
        }
    }
    for u in units.iter_mut() {
        apply(u);
        for ef in &mut u.environment_files {
            if let Some((_, h, data)) = envfiles
                .iter()
                .find(|(n, h, _)| n == &u.name && h.path == ef.path)
            {
                ef.status = h.section_status().0;
                if h.is_ok() {
                    ef.vars = parse_env_file(&text(data));
                }
            } else {
                ef.status = SectionStatus::NotPresent;
            }
        }
    }
}

/// Logical lines of a unit file's `[Service]` section: (key, value), continuations joined.
pub fn service_lines(content: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut section = String::new();
    let mut pending: Option<String> = None;
    for raw in content.lines().take(200_000) {
        let line = raw.trim_end();
        let joined = match pending.take() {
            Some(mut p) => {
                let t = line.trim_start();
                if t.starts_with('#') || t.starts_with(';') {
                    pending = Some(p);
                    continue;
                }
                p.push(' ');
                p.push_str(t);
                p
            }
            None => {
                let t = line.trim_start();
                if t.is_empty() || t.starts_with('#') || t.starts_with(';') {
                    continue;
                }
                t.to_string()
            }
        };
        if let Some(j) = joined.strip_suffix('\\') {
            pending = Some(j.trim_end().to_string());
            continue;
        }
        if joined.starts_with('[') && joined.ends_with(']') {
            section = joined.clone();
            continue;
        }
        if section == "[Service]"
            && let Some((k, v)) = joined.split_once('=')
        {
            out.push((k.trim().to_string(), v.trim().to_string()));
        }
    }
    if let Some(p) = pending
        && section == "[Service]"
        && let Some((k, v)) = p.split_once('=')
    {
        out.push((k.trim().to_string(), v.trim().to_string()));
    }
    out
}

/// Applies fragment then drop-ins: ExecStart list (an empty assignment resets it),
/// Environment, EnvironmentFile, WorkingDirectory, User.
pub fn apply(u: &mut SystemdUnit) {
    let mut exec: Vec<String> = Vec::new();
    let mut env: BTreeMap<String, String> = BTreeMap::new();
    let mut envfiles: Vec<EnvironmentFile> = Vec::new();
    let texts: Vec<String> = std::iter::once(u.fragment.content.clone())
        .chain(u.drop_ins.iter().map(|d| d.content.clone()))
        .collect();
    for t in &texts {
        for (k, v) in service_lines(t) {
            match k.as_str() {
                "ExecStart" => {
                    if v.is_empty() {
                        exec.clear();
                    } else if exec.len() < 64 {
                        exec.push(v);
                    }
                }
                "Environment" => {
                    if v.is_empty() {
                        env.clear();
                    } else {
                        for w in split_quoted(&v) {
                            if let Some((a, b)) = w.split_once('=')
                                && env.len() < 1000
                            {
                                env.insert(a.to_string(), b.to_string());
                            }
                        }
                    }
                }
                "EnvironmentFile" => {
                    if v.is_empty() {
                        envfiles.clear();
                    } else {
                        for w in split_quoted(&v) {
                            let (optional, path) = match w.strip_prefix('-') {
                                Some(p) => (true, p.to_string()),
                                None => (false, w),
                            };
                            if envfiles.len() < 64 {
                                envfiles.push(EnvironmentFile {
                                    path,
                                    optional,
                                    ..Default::default()
                                });
                            }
                        }
                    }
                }
                "WorkingDirectory" => {
                    u.working_directory =
                        (!v.is_empty()).then(|| v.trim_start_matches('-').to_string())
                }
                "User" => u.run_as = (!v.is_empty()).then_some(v),
                _ => {}
            }
        }
    }
    u.exec_start = exec;
    u.environment = env;
    u.environment_files = envfiles;
}

/// systemd-style word splitting: whitespace separated, double or single quotes group.
pub fn split_quoted(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quote: Option<char> = None;
    let mut any = false;
    let mut it = s.chars();
    while let Some(c) = it.next() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), '\\') => {
                if let Some(n) = it.next() {
                    cur.push(n);
                }
            }
            (Some(_), c) => cur.push(c),
            (None, '"' | '\'') => {
                quote = Some(c);
                any = true;
            }
            (None, c) if c.is_whitespace() => {
                if any || !cur.is_empty() {
                    out.push(std::mem::take(&mut cur));
                }
                any = false;
            }
            (None, c) => {
                cur.push(c);
                any = true;
            }
        }
    }
    if any || !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// `KEY=VALUE` lines of an EnvironmentFile (comments, `export`, quotes).
pub fn parse_env_file(t: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for l in t.lines().take(10_000) {
        let l = l.trim();
        if l.is_empty() || l.starts_with('#') || l.starts_with(';') {
            continue;
        }
        let l = l.strip_prefix("export ").unwrap_or(l);
        if let Some((k, v)) = l.split_once('=') {
            let k = k.trim();
            if k.is_empty()
                || !k
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
            {
                continue;
            }
            let v = v.trim();
            let v = split_quoted(v).join(" ");
            out.insert(k.to_string(), v);
        }
    }
    out
}

/// `systemctl show` output: blocks of `Key=Value` separated by blank lines, keyed by `Id`.
pub fn parse_show(body: &[u8], tz_offset_s: i64) -> BTreeMap<String, UnitState> {
    let mut out = BTreeMap::new();
    let t = text(body);
    for block in t.split("\n\n") {
        let mut id = None;
        let mut s = UnitState::default();
        for l in block.lines() {
            let Some((k, v)) = l.split_once('=') else {
                continue;
            };
            let v = v.trim();
            match k.trim() {
                "Id" => id = Some(v.to_string()),
                "ActiveState" => s.active_state = Some(v.to_string()),
                "SubState" => s.sub_state = Some(v.to_string()),
                "MainPID" => s.main_pid = v.parse().ok().filter(|&p: &u32| p > 0),
                "ExecMainStartTimestamp" => s.exec_main_start = parse_systemd_time(v, tz_offset_s),
                "ExecMainExitTimestamp" => s.exec_main_exit = parse_systemd_time(v, tz_offset_s),
                "InactiveEnterTimestamp" => s.inactive_enter = parse_systemd_time(v, tz_offset_s),
                "NRestarts" => s.n_restarts = v.parse().ok(),
                "NeedDaemonReload" => s.need_daemon_reload = Some(v == "yes"),
                "FragmentPath" => s.fragment_path = (!v.is_empty()).then(|| v.to_string()),
                "DropInPaths" => {
                    s.drop_in_paths = v.split_whitespace().map(str::to_string).collect()
                }
                _ => {}
            }
        }
        if let Some(id) = id {
            out.insert(id, s);
        }
    }
    out
}

/// `Thu 2026-10-29 10:00:00 UTC` (or `CET`, `+0100`...). Zone names other than UTC/GMT use
/// the host's current offset.
pub fn parse_systemd_time(v: &str, tz_offset_s: i64) -> Option<UnixTime> {
    let mut parts = v.split_whitespace();
    let mut first = parts.next()?;
    if first.len() <= 3 && first.chars().all(|c| c.is_ascii_alphabetic()) {
        first = parts.next()?;
    }
    let time = parts.next()?;
    let base = super::parse_datetime(&format!("{first} {time}"))?;
    let off = parts
        .next()
        .map(|z| super::parse_offset(z).unwrap_or(tz_offset_s))
        .unwrap_or(tz_offset_s);
    Some(base - off)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dropins_in_order_and_reset() {
        let b = "B";
        let body = format!(
            "\n{b} F ok frag:system:- 1761800000 200 /etc/systemd/system/vllm.service\n[Unit]\nDescription=v\n[Service]\nUser=svc\nEnvironment=\"HF_HOME=/data/hf\" CUDA_VISIBLE_DEVICES=0,1\nEnvironmentFile=-/etc/default/vllm\nExecStart=/opt/venv/bin/vllm serve /models/a \\\n  --tensor-parallel-size 2\n\
             \n{b} F ok frag:system:- 1 1 /usr/lib/systemd/system/vllm.service\n[Service]\nExecStart=/bin/false\n\
             \n{b} F ok dropin:system:-:vllm.service 1761800100 50 /etc/systemd/system/vllm.service.d/20-spec.conf\n[Service]\nExecStart=\nExecStart=/opt/venv/bin/vllm serve /models/a --speculative-config '{{\"method\":\"mtp\"}}'\nWorkingDirectory=/srv\n\
             \n{b} F ok dropin:system:-:vllm.service 1761800050 50 /usr/lib/systemd/system/vllm.service.d/10-env.conf\n[Service]\nEnvironment=VLLM_LOGGING_LEVEL=DEBUG\n\
             \n{b} F ok dropin:system:-:vllm.service 1 1 /usr/lib/systemd/system/vllm.service.d/20-spec.conf\n[Service]\nExecStart=/masked/by/etc\n\
             \n{b} F ok envfile:vllm.service 1 30 /etc/default/vllm\n# c\nexport HF_TOKEN=\"hf_x\"\nPORT=8000\n"
        );
        let u = parse(body.as_bytes(), b);
        assert_eq!(u.len(), 1);
        let u = &u[0];
        assert_eq!(u.fragment.path, "/etc/systemd/system/vllm.service");
        assert_eq!(u.drop_ins.len(), 2);
        assert_eq!(
            u.drop_ins[0].path,
            "/usr/lib/systemd/system/vllm.service.d/10-env.conf"
        );
        assert_eq!(
            u.drop_ins[1].path,
            "/etc/systemd/system/vllm.service.d/20-spec.conf"
        );
        assert_eq!(
            u.exec_start,
            vec![
                "/opt/venv/bin/vllm serve /models/a --speculative-config '{\"method\":\"mtp\"}'"
                    .to_string()
            ]
        );
        assert_eq!(
            u.environment.get("HF_HOME").map(String::as_str),
            Some("/data/hf")
        );
        assert_eq!(
            u.environment.get("VLLM_LOGGING_LEVEL").map(String::as_str),
            Some("DEBUG")
        );
        assert_eq!(u.run_as.as_deref(), Some("svc"));
        assert_eq!(u.working_directory.as_deref(), Some("/srv"));
        assert_eq!(u.environment_files.len(), 1);
        assert!(u.environment_files[0].optional);
        assert_eq!(
            u.environment_files[0].vars.get("PORT").map(String::as_str),
            Some("8000")
        );
        assert_eq!(
            u.environment_files[0]
                .vars
                .get("HF_TOKEN")
                .map(String::as_str),
            Some("hf_x")
        );
    }

    #[test]
    fn show() {
        let out = "Id=vllm.service\nActiveState=active\nSubState=running\nMainPID=4242\nExecMainStartTimestamp=Thu 2026-10-29 10:00:00 UTC\nNRestarts=3\nNeedDaemonReload=yes\nFragmentPath=/etc/systemd/system/vllm.service\nDropInPaths=/etc/systemd/system/vllm.service.d/a.conf /etc/systemd/system/vllm.service.d/b.conf\n\nId=x.service\nMainPID=0\n";
        let m = parse_show(out.as_bytes(), 0);
        let s = &m["vllm.service"];
        assert_eq!(s.main_pid, Some(4242));
        assert_eq!(s.exec_main_start, Some(1_793_268_000));
        assert_eq!(s.n_restarts, Some(3));
        assert_eq!(s.need_daemon_reload, Some(true));
        assert_eq!(s.drop_in_paths.len(), 2);
        assert_eq!(m["x.service"].main_pid, None);
    }
}
