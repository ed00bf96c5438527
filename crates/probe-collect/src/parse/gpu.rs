//! nvidia-smi: `--query-gpu` / `--query-compute-apps` CSV (with header, nounits), the banner
//! (CUDA version), `-q -d TEMPERATURE,PIDS` (compute processes, CUDA version), `topo -m`.

use probe_model::{ComputeApp, Gpu, GpuHealth, GpuState, GpuStatus};

use super::nvcsv::{csv, is_csv, num, val};
use crate::frame::records;
use crate::sanitize::{sanitize_line, text};

/// Most compute processes kept from one `-q` report.
const MAX_APPS: usize = 4096;

fn s(v: Option<&str>) -> Option<String> {
    v.map(sanitize_line)
}

/// The start of the GPU state's message when `nvidia-smi` printed something that is not its
/// CSV of GPUs (the section is then an error, and no GPU is named from it).
pub const JUNK: &str = "nvidia-smi printed what is not a GPU list";

/// GPUs one host can hold, at most (more rows is not nvidia-smi).
const MAX_GPUS: usize = 256;

/// What a cell of `--query-gpu` may hold.
#[derive(Clone, Copy)]
enum Cell {
    /// Text of at most this many characters, each letter, digit or one of the extra ones.
    Text(usize, &'static str),
    /// A number in this range.
    Num(f64, f64),
}

/// Every column probe asks for, with what its cells may hold (a wider field is junk).
const CELLS: &[(&str, Cell)] = &[
    ("index", Cell::Num(0.0, 4096.0)),
    ("name", Cell::Text(96, " -_.()+/:")),
    ("uuid", Cell::Text(80, "-")),
    ("pci.bus_id", Cell::Text(32, ":.")),
    ("driver_version", Cell::Text(32, ".-")),
    ("vbios_version", Cell::Text(32, ".-")),
    ("compute_cap", Cell::Text(8, ".")),
    ("memory.total", Cell::Num(0.0, 16_777_216.0)),
    ("memory.used", Cell::Num(0.0, 16_777_216.0)),
    ("utilization.gpu", Cell::Num(0.0, 100.0)),
    ("utilization.memory", Cell::Num(0.0, 100.0)),
    ("temperature.gpu", Cell::Num(-60.0, 250.0)),
    ("power.draw", Cell::Num(0.0, 20_000.0)),
    ("power.limit", Cell::Num(0.0, 20_000.0)),
    ("enforced.power.limit", Cell::Num(0.0, 20_000.0)),
    ("power.max_limit", Cell::Num(0.0, 20_000.0)),
    ("clocks.current.sm", Cell::Num(0.0, 100_000.0)),
    ("clocks.current.memory", Cell::Num(0.0, 100_000.0)),
    ("clocks.max.sm", Cell::Num(0.0, 100_000.0)),
    ("clocks.max.memory", Cell::Num(0.0, 100_000.0)),
    ("pstate", Cell::Text(4, "")),
    ("persistence_mode", Cell::Text(32, " _")),
    ("ecc.mode.current", Cell::Text(32, " _")),
    ("mig.mode.current", Cell::Text(32, " _")),
    ("compute_mode", Cell::Text(32, " _")),
    ("pcie.link.gen.current", Cell::Num(0.0, 64.0)),
    ("pcie.link.width.current", Cell::Num(0.0, 128.0)),
];

/// Why a row of `--query-gpu` CSV is not a GPU (a cell too long, of other characters, or
/// out of range), if it is not.
fn junk_row(h: &[String], r: &[String]) -> Option<String> {
    if r.len() > h.len() {
        return Some(format!("{} cells under {} columns", r.len(), h.len()));
    }
    for (col, cell) in CELLS {
        let Some(v) = val(h, r, &[col]) else { continue };
        let ok = match cell {
            Cell::Text(max, extra) => {
                v.chars().count() <= *max
                    && v.chars()
                        .all(|c| c.is_ascii_alphanumeric() || extra.contains(c))
            }
            Cell::Num(lo, hi) => v
                .split_whitespace()
                .next()
                .and_then(|x| x.parse::<f64>().ok())
                .is_some_and(|x| x.is_finite() && (*lo..=*hi).contains(&x)),
        };
        if !ok {
            let shown: String = sanitize_line(v).chars().take(40).collect();
            return Some(format!("{col} is {shown:?}"));
        }
    }
    None
}

/// Parses `--query-gpu` output into the state (status, GPUs, driver version).
pub fn parse_query(out: &[u8], stderr: &[u8], state: &mut GpuState) {
    let t = text(out);
    if !is_csv(&t) {
        let msg = first_line(&t).or_else(|| first_line(&text(stderr)));
        state.status = if t.contains("No devices were found") {
            GpuStatus::NoDevices
        } else {
            GpuStatus::DriverError
        };
        state.message = msg;
        return;
    }
    let (h, rows) = csv(&t);
    let junk = if rows.len() > MAX_GPUS {
        Some(format!("{} rows", rows.len()))
    } else {
        rows.iter()
            .enumerate()
            .filter(|(_, r)| r.len() >= 2)
            .find_map(|(i, r)| junk_row(&h, r).map(|why| format!("row {}: {why}", i + 1)))
    };
    if let Some(why) = junk {
        state.status = GpuStatus::DriverError;
        state.message = Some(format!("{JUNK} ({why})"));
        return;
    }
    for r in rows {
        if r.len() < 2 {
            continue;
        }
        let g = Gpu {
            index: num(val(&h, &r, &["index"])),
            name: s(val(&h, &r, &["name", "gpu_name"])),
            uuid: s(val(&h, &r, &["uuid", "gpu_uuid"])),
            pci_bus_id: s(val(&h, &r, &["pci.bus_id", "gpu_bus_id"])),
            driver_version: s(val(&h, &r, &["driver_version"])),
            vbios_version: s(val(&h, &r, &["vbios_version"])),
            compute_cap: s(val(&h, &r, &["compute_cap"])),
            memory_total_mib: num(val(&h, &r, &["memory.total"])),
            memory_used_mib: num(val(&h, &r, &["memory.used"])),
            utilization_gpu_pct: num(val(&h, &r, &["utilization.gpu"])),
            utilization_memory_pct: num(val(&h, &r, &["utilization.memory"])),
            temperature_c: num(val(&h, &r, &["temperature.gpu"])),
            power_draw_w: num(val(
                &h,
                &r,
                &["power.draw", "power.draw.average", "power.draw.instant"],
            )),
            power_limit_w: num(val(&h, &r, &["power.limit", "enforced.power.limit"])),
            power_max_limit_w: num(val(&h, &r, &["power.max_limit"])),
            clocks_sm_mhz: num(val(&h, &r, &["clocks.sm", "clocks.current.sm"])),
            clocks_mem_mhz: num(val(&h, &r, &["clocks.mem", "clocks.current.memory"])),
            clocks_max_sm_mhz: num(val(&h, &r, &["clocks.max.sm", "clocks.max.graphics"])),
            clocks_max_mem_mhz: num(val(&h, &r, &["clocks.max.mem", "clocks.max.memory"])),
            pstate: s(val(&h, &r, &["pstate"])),
            persistence_mode: s(val(&h, &r, &["persistence_mode"])),
            ecc_mode: s(val(&h, &r, &["ecc.mode.current"])),
            mig_mode: s(val(&h, &r, &["mig.mode.current"])),
            compute_mode: s(val(&h, &r, &["compute_mode"])),
            pcie_link_gen: num(val(
                &h,
                &r,
                &["pcie.link.gen.current", "pcie.link.gen.gpucurrent"],
            )),
            pcie_link_width: num(val(&h, &r, &["pcie.link.width.current"])),
        };
        state.gpus.push(g);
    }
    state.driver_version = state.gpus.iter().find_map(|g| g.driver_version.clone());
    state.status = if state.gpus.is_empty() {
        GpuStatus::NoDevices
    } else {
        GpuStatus::Present
    };
}

fn first_line(t: &str) -> Option<String> {
    t.lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .map(|l| sanitize_line(l).chars().take(300).collect())
}

/// The `gpu_query` section: `rec unknown FIELD` records, then `rec csv` and the CSV of the one
/// `--query-gpu` call. A call that failed before its CSV left its output in the last record.
/// Fills the GPU state and the GPUs' health from the same CSV.
pub fn parse_query_section(
    body: &[u8],
    stderr: &[u8],
    boundary: &str,
    state: &mut GpuState,
) -> Vec<GpuHealth> {
    let recs = records(body, boundary);
    let out = recs
        .iter()
        .find(|r| r.header == "csv")
        .or_else(|| recs.last())
        .map_or(body, |r| r.data);
    parse_query(out, stderr, state);
    if state
        .message
        .as_deref()
        .is_some_and(|m| m.starts_with(JUNK))
    {
        return Vec::new();
    }
    super::gpu_health::parse(body, boundary)
}

/// The `gpu_apps` section, `nvidia-smi -q -d TEMPERATURE,PIDS`: the CUDA version of its header,
/// the compute processes of each `GPU <bus id>` block (joined to the GPUs of `--query-gpu` by bus
/// id for their UUID) and the temperature thresholds of the GPUs' health.
pub fn apply_q(out: &[u8], state: &mut GpuState, health: &mut [GpuHealth]) {
    parse_banner(out, state);
    let t = text(out);
    state.compute_apps = q_apps(&t)
        .into_iter()
        .map(|(bus, mut app)| {
            app.gpu_uuid = state
                .gpus
                .iter()
                .find(|g| same_bus(g.pci_bus_id.as_deref(), bus.as_deref()))
                .and_then(|g| g.uuid.clone());
            app
        })
        .collect();
    super::gpu_health::apply_q(&t, health);
}

fn same_bus(a: Option<&str>, b: Option<&str>) -> bool {
    let norm = |x: Option<&str>| x.and_then(crate::parse::gpu_catalog::normalize_bus_id);
    let a = norm(a);
    a.is_some() && a == norm(b)
}

/// Compute processes (type `C` or `C+G`) of `-q` text with the bus id of their GPU block:
/// `Process ID : 4242`, then `Type`, `Name`, `Used GPU Memory : 71234 MiB`.
pub fn q_apps(t: &str) -> Vec<(Option<String>, ComputeApp)> {
    let mut out: Vec<(Option<String>, ComputeApp, bool)> = Vec::new();
    let mut bus: Option<String> = None;
    let mut in_gpu_block = false;
    for line in t.lines().take(200_000) {
        if let Some(b) = line.strip_prefix("GPU ") {
            bus = Some(sanitize_line(b.trim()));
            in_gpu_block = true;
            continue;
        }
        let Some((k, v)) = line.split_once(':') else {
            continue;
        };
        let v = v.trim();
        let known = !v.is_empty() && !v.eq_ignore_ascii_case("n/a") && !v.starts_with('[');
        match k.trim() {
            "Process ID" if in_gpu_block && out.len() < MAX_APPS => out.push((
                bus.clone(),
                ComputeApp {
                    pid: v.parse().ok(),
                    ..ComputeApp::default()
                },
                false,
            )),
            "Type" => {
                if let Some(last) = out.last_mut() {
                    last.2 = v.contains('C');
                }
            }
            "Name" if known => {
                if let Some(last) = out.last_mut() {
                    last.1.process_name = Some(sanitize_line(v));
                }
            }
            "Used GPU Memory" => {
                if let Some(last) = out.last_mut() {
                    last.1.used_memory_mib = num(Some(v));
                }
            }
            _ => {}
        }
    }
    out.into_iter()
        .filter(|(_, _, compute)| *compute)
        .map(|(b, a, _)| (b, a))
        .collect()
}

/// Banner of plain `nvidia-smi`: `CUDA Version: 12.4`, `Driver Version: 550.54.15`.
pub fn parse_banner(out: &[u8], state: &mut GpuState) {
    let t = text(out);
    let grab = |key: &str| {
        let i = t.find(key)?;
        let rest = t.get(i + key.len()..)?.trim_start_matches([':', ' ']);
        let v: String = rest
            .chars()
            .take_while(|c| c.is_ascii_digit() || *c == '.')
            .collect();
        (!v.is_empty()).then_some(v)
    };
    if let Some(c) = grab("CUDA Version") {
        state.cuda_version = Some(c);
    }
    if state.driver_version.is_none() {
        state.driver_version = grab("Driver Version");
    }
}

/// `--query-compute-apps=gpu_uuid,pid,process_name,used_memory --format=csv,nounits`.
pub fn parse_apps(out: &[u8]) -> Vec<ComputeApp> {
    let t = text(out);
    if !is_csv(&t) {
        return Vec::new();
    }
    let (h, rows) = csv(&t);
    rows.iter()
        .filter(|r| r.len() >= 2)
        .map(|r| ComputeApp {
            gpu_uuid: s(val(&h, r, &["gpu_uuid"])),
            pid: num(val(&h, r, &["pid"])),
            process_name: s(val(&h, r, &["process_name", "name"])),
            used_memory_mib: num(val(&h, r, &["used_gpu_memory", "used_memory"])),
        })
        .collect()
}

/// `topo -m` text, control characters stripped, leading whitespace kept.
pub fn parse_topo(out: &[u8]) -> Option<String> {
    let t = text(out);
    let t = t.trim_end();
    (!t.is_empty()).then(|| t.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    const Q: &str = "index, name, uuid, pci.bus_id, driver_version, vbios_version, compute_cap, memory.total [MiB], memory.used [MiB], utilization.gpu [%], utilization.memory [%], temperature.gpu, power.draw [W], power.limit [W], power.max_limit [W], clocks.current.sm [MHz], clocks.current.memory [MHz], clocks.max.sm [MHz], clocks.max.memory [MHz], pstate, persistence_mode, ecc.mode.current, mig.mode.current, compute_mode, pcie.link.gen.current, pcie.link.width.current
0, NVIDIA H100 80GB HBM3, GPU-6f1c2b3a-1111-2222-3333-444455556666, 00000000:18:00.0, 550.54.15, 96.00.99.00.01, 9.0, 81559, 74213, 97, 61, 64, 612.45, 700.00, 700.00, 1980, 2619, 1980, 2619, P0, Enabled, Enabled, [N/A], Default, 5, 16
1, NVIDIA H100 80GB HBM3, GPU-7f1c2b3a-1111-2222-3333-444455556666, 00000000:2A:00.0, 550.54.15, 96.00.99.00.01, 9.0, 81559, 3, 0, 0, 31, [N/A], 700.00, 700.00, 345, 2619, 1980, 2619, P0, Enabled, Enabled, Disabled, Default, 5, 16
";

    #[test]
    fn junk_is_no_gpu() {
        let header = Q.lines().next().unwrap_or("");
        let row = Q.lines().nth(1).unwrap_or("");
        let big = "A".repeat(1 << 20);
        // (what replaces what in a real row, why)
        let cases: Vec<(String, &str)> = vec![
            (row.replace("NVIDIA H100 80GB HBM3", &big), "name is"),
            (
                row.replace("NVIDIA H100 80GB HBM3", "H100 <b>x</b>"),
                "name is",
            ),
            (
                row.replace(", 64, 612.45", ", 9000, 612.45"),
                "temperature.gpu",
            ),
            (row.replace(", 97, 61,", ", 140, 61,"), "utilization.gpu"),
            (
                row.replace(", 81559, 74213", ", lots, 74213"),
                "memory.total",
            ),
            (
                row.replace("550.54.15", "550.54.15 $(reboot)"),
                "driver_version",
            ),
            (format!("{row}, extra, cells"), "cells under"),
        ];
        for (bad, why) in &cases {
            let mut st = GpuState::default();
            parse_query(format!("{header}\n{bad}\n").as_bytes(), b"", &mut st);
            assert_eq!(st.status, GpuStatus::DriverError, "{why}");
            assert!(st.gpus.is_empty(), "{why}");
            let m = st.message.unwrap_or_default();
            assert!(m.starts_with(JUNK) && m.contains(why), "{why}: {m}");
            assert!(m.len() < 300, "{why}: {} bytes", m.len());
        }
        // The real rows pass.
        let mut st = GpuState::default();
        parse_query(Q.as_bytes(), b"", &mut st);
        assert_eq!((st.status, st.gpus.len()), (GpuStatus::Present, 2));
    }

    #[test]
    fn query() {
        let mut st = GpuState::default();
        parse_query(Q.as_bytes(), b"", &mut st);
        assert_eq!(st.status, GpuStatus::Present);
        assert_eq!(st.gpus.len(), 2);
        let g = &st.gpus[0];
        assert_eq!(g.name.as_deref(), Some("NVIDIA H100 80GB HBM3"));
        assert_eq!(g.memory_total_mib, Some(81559));
        assert_eq!(g.power_draw_w, Some(612.45));
        assert_eq!(g.mig_mode, None);
        assert_eq!(g.clocks_sm_mhz, Some(1980));
        assert_eq!(st.gpus[1].power_draw_w, None);
        assert_eq!(st.driver_version.as_deref(), Some("550.54.15"));
    }

    #[test]
    fn broken_driver_and_banner() {
        let mut st = GpuState::default();
        parse_query(b"NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the latest NVIDIA driver is installed and running.\n", b"", &mut st);
        assert_eq!(st.status, GpuStatus::DriverError);
        assert!(
            st.message
                .as_deref()
                .unwrap_or("")
                .contains("couldn't communicate")
        );
        let mut st = GpuState::default();
        parse_query(b"No devices were found\n", b"", &mut st);
        assert_eq!(st.status, GpuStatus::NoDevices);
        let banner = "+-----------------------------------------------------------------------------------------+\n| NVIDIA-SMI 550.54.15              Driver Version: 550.54.15      CUDA Version: 12.4     |\n";
        parse_banner(banner.as_bytes(), &mut st);
        assert_eq!(st.cuda_version.as_deref(), Some("12.4"));
        assert_eq!(st.driver_version.as_deref(), Some("550.54.15"));
    }

    #[test]
    fn apps() {
        let a = parse_apps(b"gpu_uuid, pid, process_name, used_gpu_memory [MiB]\nGPU-6f1c, 4242, sglang::scheduler_TP0, 71234\nGPU-7f1c, 4243, [N/A], [N/A]\n");
        assert_eq!(a.len(), 2);
        assert_eq!(a[0].pid, Some(4242));
        assert_eq!(a[0].used_memory_mib, Some(71234));
        assert_eq!(a[1].process_name, None);
    }

    /// `-q -d TEMPERATURE,PIDS` as drivers 535 and 570 print it (graphics processes, a GPU with
    /// none, a name the driver cannot read, memory not available).
    const Q_PIDS: &str = "
==============NVSMI LOG==============

Timestamp                                 : Tue Dec  1 13:40:00 2026
Driver Version                            : 535.183.01
CUDA Version                              : 12.2

Attached GPUs                             : 3
GPU 00000000:18:00.0
    Temperature
        GPU Current Temp                  : 64 C
        GPU Shutdown Temp                 : 92 C
        GPU Slowdown Temp                 : 89 C
    Processes
        GPU instance ID                   : N/A
        Compute instance ID               : N/A
        Process ID                        : 1700
            Type                          : G
            Name                          : /usr/lib/xorg/Xorg
            Used GPU Memory               : 47 MiB
        GPU instance ID                   : N/A
        Compute instance ID               : N/A
        Process ID                        : 4242
            Type                          : C
            Name                          : sglang::scheduler_TP0
            Used GPU Memory               : 71234 MiB

GPU 00000000:2A:00.0
    Processes
        GPU instance ID                   : N/A
        Compute instance ID               : N/A
        Process ID                        : 4243
            Type                          : C+G
            Name                          : 
            Used GPU Memory               : Not available

GPU 00000000:3B:00.0
    Processes                             : None
";

    #[test]
    fn q_report() {
        let mut st = GpuState::default();
        let mut health =
            parse_query_section(format!("\n{B} R csv\n{Q}").as_bytes(), b"", B, &mut st);
        apply_q(Q_PIDS.as_bytes(), &mut st, &mut health);
        assert_eq!(st.cuda_version.as_deref(), Some("12.2"));
        let got: Vec<_> = st
            .compute_apps
            .iter()
            .map(|a| {
                (
                    a.pid,
                    a.gpu_uuid.as_deref().map(|u| u.get(..8).unwrap_or(u)),
                    a.process_name.as_deref(),
                    a.used_memory_mib,
                )
            })
            .collect();
        assert_eq!(
            got,
            [
                (
                    Some(4242),
                    Some("GPU-6f1c"),
                    Some("sglang::scheduler_TP0"),
                    Some(71234)
                ),
                (Some(4243), Some("GPU-7f1c"), None, None),
            ]
        );
        assert_eq!(health.len(), 2);
        assert_eq!(health[0].slowdown_temp_c, Some(89));
        assert_eq!(health[0].shutdown_temp_c, Some(92));
    }

    const B: &str = "PROBE_B";

    #[test]
    fn query_section_cases() {
        // (section body, GPUs, status, message starts with)
        let cases: &[(&str, usize, GpuStatus, &str)] = &[
            (
                "\nPROBE_B R unknown fabric.state\n\nPROBE_B R csv\nindex, uuid, pci.bus_id\n0, GPU-1, 00000000:18:00.0\n",
                1,
                GpuStatus::Present,
                "",
            ),
            (
                "\nPROBE_B R csv\nNVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\n",
                0,
                GpuStatus::DriverError,
                "NVIDIA-SMI has failed",
            ),
            (
                "\nPROBE_B R unknown x\n0, NVIDIA H100 80GB HBM3, GPU-00000000-flood\n0, NVIDIA H100",
                0,
                GpuStatus::DriverError,
                "0, NVIDIA H100",
            ),
            (
                "No devices were found\n",
                0,
                GpuStatus::NoDevices,
                "No devices",
            ),
        ];
        for (body, n, status, msg) in cases {
            let mut st = GpuState::default();
            let health = parse_query_section(body.as_bytes(), b"", B, &mut st);
            assert_eq!(st.gpus.len(), *n, "{body}");
            assert_eq!(health.len(), *n, "{body}");
            assert_eq!(st.status, *status, "{body}");
            assert!(
                st.message.as_deref().unwrap_or("").starts_with(msg),
                "{body}: {:?}",
                st.message
            );
        }
    }
}
