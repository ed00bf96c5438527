//! `host` section: host facts, clock, users.

use probe_model::HostFacts;

use super::Ctx;
use crate::frame::records;
use crate::sanitize::{line, text};

/// Fills host facts and the parse context from the `host` section body.
pub fn parse(body: &[u8], ctx: &mut Ctx) -> HostFacts {
    let mut h = HostFacts::default();
    for r in records(body, &ctx.boundary) {
        let v = line(r.data);
        let first = v.split_whitespace().next().unwrap_or("").to_string();
        match r.header.as_str() {
            "clock" => ctx.remote_clock = first.parse().ok(),
            "tz" => ctx.tz_offset_s = super::parse_offset(&first).unwrap_or(0),
            "hostname" => h.hostname = non_empty(&first),
            "machine_id" => {
                h.machine_id = non_empty(&first)
                    .filter(|m| m.len() <= 64 && m.chars().all(|c| c.is_ascii_hexdigit()))
            }
            "os_release" => read_os_release(&mut h, r.data),
            "uname" => {
                let mut it = v.split_whitespace();
                let _sys = it.next();
                h.kernel = it.next().map(str::to_string);
                h.arch = it.next().map(str::to_string);
            }
            "uptime" => h.uptime_s = first.split('.').next().and_then(|x| x.parse().ok()),
            "btime" => {
                h.boot_time = v.split_whitespace().nth(1).and_then(|x| x.parse().ok());
                ctx.boot_time = h.boot_time;
            }
            "cpu" => {
                h.cpu_model = v
                    .split_once(':')
                    .map(|(_, m)| m.trim().to_string())
                    .and_then(|m| non_empty(&m))
            }
            "nproc" => h.cpu_count = first.parse().ok(),
            "meminfo" => read_meminfo(&mut h, &v),
            "user" => h.collected_as = non_empty(&first),
            "clk_tck" => ctx.clk_tck = first.parse().ok().filter(|&t: &u64| t > 0),
            "tools" => ctx.tools = v.split_whitespace().map(str::to_string).collect(),
            "systemd" => ctx.systemd_running = first == "running",
            "passwd" => read_passwd(ctx, r.data),
            _ => {}
        }
    }
    if ctx.clk_tck.is_none() {
        // No getconf (busybox): USER_HZ, which /proc/PID/stat counts in, is 100 on every
        // mainstream Linux architecture.
        ctx.clk_tck = Some(100);
    }
    if h.boot_time.is_none()
        && let (Some(c), Some(u)) = (ctx.remote_clock, h.uptime_s)
    {
        h.boot_time = Some(c - i64::try_from(u).unwrap_or(0));
        ctx.boot_time = h.boot_time;
    }
    h
}

/// `/etc/os-release`: pretty name, id and version id.
fn read_os_release(h: &mut HostFacts, data: &[u8]) {
    for l in text(data).lines() {
        if let Some((k, val)) = l.split_once('=') {
            let val = val.trim().trim_matches('"').trim_matches('\'').to_string();
            match k.trim() {
                "PRETTY_NAME" => h.os_pretty = non_empty(&val),
                "ID" => h.os_id = non_empty(&val),
                "VERSION_ID" => h.os_version_id = non_empty(&val),
                _ => {}
            }
        }
    }
}

/// `MemTotal:` and `MemAvailable:` of `/proc/meminfo` (one line, `kB`-separated).
fn read_meminfo(h: &mut HostFacts, v: &str) {
    for l in v.split("kB") {
        let l = l.trim();
        if let Some(n) = l.strip_prefix("MemTotal:") {
            h.mem_total_kib = n.trim().parse().ok();
        } else if let Some(n) = l.strip_prefix("MemAvailable:") {
            h.mem_available_kib = n.trim().parse().ok();
        }
    }
}

/// `/etc/passwd`: user names by uid and home directories by name (the first of each).
fn read_passwd(ctx: &mut Ctx, data: &[u8]) {
    for l in text(data).lines().take(100_000) {
        let f: Vec<&str> = l.split(':').collect();
        if let (Some(name), Some(uid), Some(home)) = (
            f.first(),
            f.get(2).and_then(|u| u.parse::<u32>().ok()),
            f.get(5),
        ) {
            let name = crate::sanitize::sanitize_line(name);
            ctx.users.entry(uid).or_insert_with(|| name.clone());
            ctx.homes
                .entry(name)
                .or_insert_with(|| crate::sanitize::sanitize_line(home));
        }
    }
}

fn non_empty(s: &str) -> Option<String> {
    let s = s.trim();
    (!s.is_empty()).then(|| s.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_records() {
        let b = "b0";
        let body = format!(
            "\n{b} R clock\n1793361601\n{b} R tz\n+0100\n{b} R hostname\ngpu7\n{b} R machine_id\n0123456789abcdef0123456789abcdef\n\
             {b} R os_release\nPRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\nID=debian\nVERSION_ID=\"12\"\n\
             {b} R uname\nLinux 6.1.0-18-amd64 x86_64\n{b} R uptime\n3600.55 100.00\n{b} R btime\nbtime 1793358000\n\
             {b} R cpu\nmodel name\t: AMD EPYC 9654 96-Core Processor\n{b} R nproc\n192\n\
             {b} R meminfo\nMemTotal:       2113440808 kB\nMemAvailable:   1900000000 kB\n{b} R user\nroot\n{b} R clk_tck\n100\n\
             {b} R tools\nsystemctl\nnvidia-smi\n{b} R systemd\nrunning\n{b} R passwd\nroot:x:0:0:root:/root:/bin/bash\nalice:x:1000:1000::/home/alice:/bin/zsh\n"
        );
        let mut ctx = Ctx {
            boundary: b.into(),
            ..Default::default()
        };
        let h = parse(body.as_bytes(), &mut ctx);
        assert_eq!(h.hostname.as_deref(), Some("gpu7"));
        assert_eq!(
            h.os_pretty.as_deref(),
            Some("Debian GNU/Linux 12 (bookworm)")
        );
        assert_eq!(h.os_version_id.as_deref(), Some("12"));
        assert_eq!(h.kernel.as_deref(), Some("6.1.0-18-amd64"));
        assert_eq!(h.uptime_s, Some(3600));
        assert_eq!(h.boot_time, Some(1_793_358_000));
        assert_eq!(
            h.cpu_model.as_deref(),
            Some("AMD EPYC 9654 96-Core Processor")
        );
        assert_eq!(h.cpu_count, Some(192));
        assert_eq!(h.mem_total_kib, Some(2_113_440_808));
        assert_eq!(h.mem_available_kib, Some(1_900_000_000));
        assert_eq!(ctx.remote_clock, Some(1_793_361_601));
        assert_eq!(ctx.tz_offset_s, 3600);
        assert_eq!(ctx.users.get(&1000).map(String::as_str), Some("alice"));
        assert_eq!(
            ctx.homes.get("alice").map(String::as_str),
            Some("/home/alice")
        );
        assert!(ctx.systemd_running);
        assert_eq!(ctx.clk_tck, Some(100));
    }
}
