//! The `kernel_log` section: GPU lines of the kernel log. `rec boot N` is followed by
//! `journalctl -k -b N -o short-iso` lines, `rec dmesg` by `dmesg` lines (`--time-format=iso`
//! where util-linux has it, else `[seconds since boot]`). Kept: Xid and SXid lines, "fallen off
//! the bus", GPU resets and NVLink errors, each with its time, PCI bus id, code and the code's
//! meaning from `configs/xid.toml`.

use probe_model::{FaultKind, HardwareState, KernelFault, UnixTime};

use super::{Ctx, lines, parse_rfc3339};
use crate::frame::records;
use crate::sanitize::sanitize_line;

/// Faults kept (the newest).
const MAX_FAULTS: usize = 500;

/// Parses the section body. Returns the faults (oldest first) and where they came from.
pub fn parse(body: &[u8], ctx: &Ctx) -> (Vec<KernelFault>, Option<String>) {
    let mut out = Vec::new();
    let mut source = None;
    for r in records(body, &ctx.boundary) {
        let (boot, from) = if let Some(b) = r.header.strip_prefix("boot ") {
            (b.trim().parse::<i32>().ok(), "journal")
        } else if r.header == "dmesg" {
            (None, "dmesg")
        } else {
            continue;
        };
        if !r.data.iter().all(u8::is_ascii_whitespace) {
            source.get_or_insert_with(|| from.to_string());
        }
        for l in lines(r.data) {
            if let Some(mut f) = parse_line(&l, ctx.boot_time) {
                f.boot = boot;
                out.push(f);
            }
        }
    }
    out.sort_by_key(|f| f.time);
    if out.len() > MAX_FAULTS {
        out.drain(..out.len() - MAX_FAULTS);
    }
    (out, source)
}

/// Adds the faults of one kernel-log section (this boot's, the previous boot's) to those of
/// the others: oldest first, the newest [`MAX_FAULTS`] kept; the journal is named as the
/// source when any section read it.
pub fn merge(hw: &mut HardwareState, faults: Vec<KernelFault>, source: Option<String>) {
    hw.faults.extend(faults);
    hw.faults.sort_by_key(|f| f.time);
    if hw.faults.len() > MAX_FAULTS {
        hw.faults.drain(..hw.faults.len() - MAX_FAULTS);
    }
    if hw.kernel_log.is_none() || source.as_deref() == Some("journal") {
        hw.kernel_log = source.or(hw.kernel_log.take());
    }
}

/// Time at the start of a kernel line: ISO 8601 (journal short-iso, dmesg iso) or
/// `[secs.usecs]` since boot.
fn line_time(l: &str, boot: Option<UnixTime>) -> (Option<UnixTime>, &str) {
    if let Some(rest) = l.strip_prefix('[') {
        let Some((secs, tail)) = rest.split_once(']') else {
            return (None, l);
        };
        let t = secs
            .trim()
            .split('.')
            .next()
            .and_then(|s| s.parse::<i64>().ok())
            .zip(boot)
            .map(|(s, b)| b + s);
        return (t, tail);
    }
    let (first, tail) = l.split_once(' ').unwrap_or((l, ""));
    match parse_rfc3339(&first.replace(',', ".")) {
        Some(t) => (Some(t), tail),
        None => (None, l),
    }
}

fn bus_in(s: &str) -> Option<String> {
    s.split(|c: char| c.is_whitespace() || matches!(c, '(' | ')' | ',' | ';'))
        .map(|w| w.trim_end_matches(':'))
        .find_map(|w| {
            let w = w.strip_prefix("PCI:").unwrap_or(w);
            (w.matches(':').count() == 2).then(|| crate::parse::gpu_catalog::normalize_bus_id(w))?
        })
}

/// Bus id, code, pid and process name of an Xid / SXid line.
type XidParts = (Option<String>, u32, Option<u32>, Option<String>);

/// `NVRM: Xid (PCI:0000:17:00): 79, pid=1234, name=python3, GPU has fallen off the bus.`
fn xid_parts(msg: &str, key: &str) -> Option<XidParts> {
    let at = msg.find(key)?;
    let rest = &msg[at + key.len()..];
    let rest = rest.trim_start();
    let (bus, rest) = match rest.strip_prefix('(') {
        Some(r) => {
            let (inside, after) = r.split_once(')')?;
            (bus_in(inside), after)
        }
        None => (None, rest),
    };
    let rest = rest.trim_start_matches([':', ' ']);
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    let code = digits.parse().ok()?;
    let mut pid = None;
    let mut name = None;
    for field in rest.split(", ").skip(1).take(4) {
        if let Some(p) = field.strip_prefix("pid=") {
            pid = p.trim_matches('\'').parse().ok();
        } else if let Some(n) = field.strip_prefix("name=") {
            let n = n.trim_matches('\'');
            if !n.is_empty() && n != "<unknown>" {
                name = Some(sanitize_line(n).chars().take(64).collect());
            }
        }
    }
    Some((bus, code, pid, name))
}

/// One kernel line, if it is about a GPU fault.
pub fn parse_line(l: &str, boot: Option<UnixTime>) -> Option<KernelFault> {
    let (time, msg) = line_time(l.trim_end(), boot);
    let lower = msg.to_ascii_lowercase();
    let nv = lower.contains("nvrm") || lower.contains("nvidia") || lower.contains("nvswitch");
    let mut f = KernelFault {
        time,
        line: sanitize_line(msg.trim()).chars().take(400).collect(),
        ..KernelFault::default()
    };
    if let Some((bus, code, pid, name)) = xid_parts(msg, "SXid") {
        f.kind = FaultKind::Sxid;
        (f.pci_bus_id, f.code, f.pid, f.process) = (bus, Some(code), pid, name);
    } else if let Some((bus, code, pid, name)) = xid_parts(msg, "Xid") {
        f.kind = FaultKind::Xid;
        (f.pci_bus_id, f.code, f.pid, f.process) = (bus, Some(code), pid, name);
        f.meaning = crate::parse::gpu_catalog::xid(code).map(|x| x.meaning.clone());
    } else if nv && lower.contains("fallen off the bus") {
        f.kind = FaultKind::FallenOffBus;
        f.pci_bus_id = bus_in(msg);
    } else if nv && lower.contains("nvlink") && (lower.contains("error") || lower.contains("fatal"))
    {
        f.kind = FaultKind::Nvlink;
        f.pci_bus_id = bus_in(msg);
    } else if nv && lower.contains("reset") && lower.contains("gpu") {
        f.kind = FaultKind::GpuReset;
        f.pci_bus_id = bus_in(msg);
    } else {
        return None;
    }
    Some(f)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table() {
        type Want = (
            FaultKind,
            Option<&'static str>,
            Option<u32>,
            Option<u32>,
            Option<i64>,
        );
        let cases: &[(&str, Option<Want>)] = &[
            (
                "2026-12-01T03:12:44+0000 gpu7 kernel: NVRM: Xid (PCI:0000:17:00): 79, pid=1234, name=python3, GPU has fallen off the bus.",
                Some((
                    FaultKind::Xid,
                    Some("0000:17:00.0"),
                    Some(79),
                    Some(1234),
                    Some(1_796_094_764),
                )),
            ),
            (
                "2026-12-01T03:12:44+00:00 gpu7 kernel: NVRM: Xid (PCI:0000:3b:00): 48, pid='<unknown>', name=<unknown>, An uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer at partition 6, subpartition 0.",
                Some((
                    FaultKind::Xid,
                    Some("0000:3b:00.0"),
                    Some(48),
                    None,
                    Some(1_796_094_764),
                )),
            ),
            (
                "[  812.123456] nvidia-nvswitch0: SXid (PCI:0000:05:00.0): 12028, Non-fatal, Link 46 egress non-posted PRIV error (First)",
                Some((
                    FaultKind::Sxid,
                    Some("0000:05:00.0"),
                    Some(12028),
                    None,
                    Some(1_796_000_812),
                )),
            ),
            (
                "2026-12-01T03:12:44,512311+00:00 NVRM: GPU 0000:17:00.0: GPU has fallen off the bus.",
                Some((
                    FaultKind::FallenOffBus,
                    Some("0000:17:00.0"),
                    None,
                    None,
                    Some(1_796_094_764),
                )),
            ),
            (
                "2026-12-01T03:12:44+0000 gpu7 kernel: usb 1-1: reset high-speed USB device",
                None,
            ),
            ("garbage \u{1b}[31m", None),
            ("", None),
        ];
        for (input, want) in cases {
            let got = parse_line(input, Some(1_796_000_000))
                .map(|f| (f.kind, f.pci_bus_id.clone(), f.code, f.pid, f.time));
            let want = want.map(|(k, b, c, p, t)| (k, b.map(String::from), c, p, t));
            assert_eq!(got, want, "{input}");
        }
        let f = parse_line(cases[0].0, None).unwrap();
        assert_eq!(f.meaning.as_deref(), Some("GPU has fallen off the bus"));
        assert_eq!(f.process.as_deref(), Some("python3"));
    }
}
