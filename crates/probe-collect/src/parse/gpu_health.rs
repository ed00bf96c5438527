//! The `gpu_health` section: one extended `--query-gpu` CSV (`rec csv`; fields the driver did
//! not know are named by `rec unknown FIELD`) and `nvidia-smi -q -d TEMPERATURE` (`rec q`) for
//! the slowdown and shutdown thresholds the CSV lacks.

use probe_model::GpuHealth;

use super::nvcsv::{csv, is_csv, num, val};
use crate::frame::records;
use crate::sanitize::{sanitize_line, text};

/// Clock event (throttle) reason bits of NVML's `nvmlClocksEventReasons`.
const REASONS: &[(u64, &str)] = &[
    (0x1, "gpu_idle"),
    (0x2, "applications_clocks_setting"),
    (0x4, "sw_power_cap"),
    (0x8, "hw_slowdown"),
    (0x10, "sync_boost"),
    (0x20, "sw_thermal_slowdown"),
    (0x40, "hw_thermal_slowdown"),
    (0x80, "hw_power_brake_slowdown"),
    (0x100, "display_clocks_setting"),
];

/// Active reason names of a mask as printed (`0x0000000000000004`).
pub fn reasons(mask: &str) -> Vec<String> {
    let Ok(m) = u64::from_str_radix(mask.trim().trim_start_matches("0x"), 16) else {
        return Vec::new();
    };
    REASONS
        .iter()
        .filter(|(bit, _)| m & bit != 0)
        .map(|(_, n)| (*n).to_string())
        .collect()
}

fn s(v: Option<&str>) -> Option<String> {
    v.map(sanitize_line)
}

/// Parses the section body.
pub fn parse(body: &[u8], boundary: &str) -> Vec<GpuHealth> {
    let recs = records(body, boundary);
    let unknown: Vec<String> = recs
        .iter()
        .filter_map(|r| r.header.strip_prefix("unknown "))
        .take(64)
        .map(sanitize_line)
        .collect();
    let mut gpus = recs
        .iter()
        .find(|r| r.header == "csv")
        .map(|r| parse_csv(&text(r.data)))
        .unwrap_or_default();
    if let Some(q) = recs.iter().find(|r| r.header == "q") {
        apply_q(&text(q.data), &mut gpus);
    }
    for g in &mut gpus {
        g.unknown_fields = unknown.clone();
    }
    gpus
}

/// One GPU per CSV row (header names; `[N/A]` and `[Not Supported]` read as absent).
pub fn parse_csv(t: &str) -> Vec<GpuHealth> {
    if !is_csv(t) {
        return Vec::new();
    }
    let (h, rows) = csv(t);
    rows.iter()
        .filter(|r| r.len() >= 2)
        .take(64)
        .map(|r| {
            let v = |names: &[&str]| val(&h, r, names);
            let mask = s(v(&[
                "clocks_event_reasons.active",
                "clocks_throttle_reasons.active",
            ]));
            GpuHealth {
                index: num(v(&["index"])),
                uuid: s(v(&["uuid"])),
                pci_bus_id: s(v(&["pci.bus_id"])),
                driver_version: s(v(&["driver_version"])),
                event_reasons: mask.as_deref().map(reasons).unwrap_or_default(),
                event_reasons_mask: mask,
                clocks_sm_mhz: num(v(&["clocks.current.sm", "clocks.sm"])),
                clocks_max_sm_mhz: num(v(&["clocks.max.sm"])),
                clocks_mem_mhz: num(v(&["clocks.current.memory", "clocks.mem"])),
                clocks_max_mem_mhz: num(v(&["clocks.max.memory"])),
                temperature_c: num(v(&["temperature.gpu"])),
                power_draw_w: num(v(&[
                    "power.draw",
                    "power.draw.average",
                    "power.draw.instant",
                ])),
                power_limit_w: num(v(&["power.limit"])),
                enforced_power_limit_w: num(v(&["enforced.power.limit"])),
                default_power_limit_w: num(v(&["power.default_limit"])),
                max_power_limit_w: num(v(&["power.max_limit"])),
                pcie_gen_current: num(v(&["pcie.link.gen.current", "pcie.link.gen.gpucurrent"])),
                pcie_gen_max: num(v(&["pcie.link.gen.max", "pcie.link.gen.gpumax"])),
                pcie_width_current: num(v(&["pcie.link.width.current"])),
                pcie_width_max: num(v(&["pcie.link.width.max"])),
                ecc_volatile_corrected: num(v(&["ecc.errors.corrected.volatile.total"])),
                ecc_volatile_uncorrected: num(v(&["ecc.errors.uncorrected.volatile.total"])),
                ecc_aggregate_corrected: num(v(&["ecc.errors.corrected.aggregate.total"])),
                ecc_aggregate_uncorrected: num(v(&["ecc.errors.uncorrected.aggregate.total"])),
                retired_pages_pending: s(v(&["retired_pages.pending"])),
                remapped_rows_pending: s(v(&["remapped_rows.pending"])),
                remapped_rows_failure: s(v(&["remapped_rows.failure"])),
                persistence_mode: s(v(&["persistence_mode"])),
                mig_mode: s(v(&["mig.mode.current"])),
                compute_mode: s(v(&["compute_mode"])),
                ..GpuHealth::default()
            }
        })
        .collect()
}

/// `GPU 00000000:19:00.0` blocks of `nvidia-smi -q`: `GPU Slowdown Temp : 87 C` and
/// `GPU Shutdown Temp : 92 C` (older drivers; 550+ print them relative, as `T.Limit`, which
/// is not a threshold and is not read).
pub fn apply_q(t: &str, gpus: &mut [GpuHealth]) {
    let mut cur: Option<String> = None;
    for line in t.lines().take(100_000) {
        if let Some(b) = line.strip_prefix("GPU ") {
            cur = crate::parse::gpu_catalog::normalize_bus_id(b.trim());
            continue;
        }
        let Some((k, v)) = line.split_once(':') else {
            continue;
        };
        let k = k.trim();
        let n: Option<u32> = v.split_whitespace().next().and_then(|x| x.parse().ok());
        let Some(g) = gpus.iter_mut().find(|g| {
            cur.is_some()
                && g.pci_bus_id
                    .as_deref()
                    .and_then(crate::parse::gpu_catalog::normalize_bus_id)
                    == cur
        }) else {
            continue;
        };
        match k {
            "GPU Slowdown Temp" => g.slowdown_temp_c = n,
            "GPU Shutdown Temp" => g.shutdown_temp_c = n,
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Driver 535: `clocks_throttle_reasons.*`, no `power.default_limit` asked... as printed.
    const CSV_535: &str = "index, uuid, pci.bus_id, driver_version, clocks_throttle_reasons.active, clocks.current.sm [MHz], clocks.max.sm [MHz], temperature.gpu, power.draw [W], power.limit [W], enforced.power.limit [W], power.default_limit [W], pcie.link.gen.current, pcie.link.gen.max, pcie.link.width.current, pcie.link.width.max, ecc.errors.uncorrected.volatile.total, retired_pages.pending, remapped_rows.pending, remapped_rows.failure, persistence_mode
0, GPU-1, 00000000:17:00.0, 535.183.01, 0x0000000000000004, 1110, 1980, 61, 199.20, 200.00, 200.00, 300.00, 4, 4, 16, 16, 0, [N/A], No, No, Disabled
1, GPU-2, 00000000:2A:00.0, 535.183.01, 0x0000000000000000, 1980, 1980, 40, 250.00, 300.00, 300.00, 300.00, 4, 4, 4, 16, [N/A], No, [Not Supported], No, Enabled
";

    #[test]
    fn table() {
        type Check = dyn Fn(&[GpuHealth]) -> bool;
        let cases: &[(&str, usize, &Check)] = &[
            (CSV_535, 2, &|g| {
                g[0].event_reasons == ["sw_power_cap"]
                    && g[0].enforced_power_limit_w == Some(200.0)
                    && g[0].default_power_limit_w == Some(300.0)
                    && g[1].pcie_width_current == Some(4)
                    && g[1].remapped_rows_pending.is_none()
                    && g[0].persistence_mode.as_deref() == Some("Disabled")
            }),
            ("Field \"x\" is not a valid field to query.\n", 0, &|_| true),
            ("", 0, &|_| true),
        ];
        for (input, n, check) in cases {
            let g = parse_csv(input);
            assert_eq!(g.len(), *n, "{input}");
            assert!(check(&g), "{input}: {g:?}");
        }
        assert_eq!(
            reasons("0x00000000000000C4"),
            [
                "sw_power_cap",
                "hw_thermal_slowdown",
                "hw_power_brake_slowdown"
            ]
        );
        assert!(reasons("[N/A]").is_empty());
    }

    #[test]
    fn q_thresholds() {
        let mut g = parse_csv(CSV_535);
        let q = "\n==============NVSMI LOG==============\n\nGPU 00000000:17:00.0\n    Temperature\n        GPU Current Temp                  : 61 C\n        GPU Shutdown Temp                 : 92 C\n        GPU Slowdown Temp                 : 89 C\n\nGPU 00000000:2A:00.0\n    Temperature\n        GPU Current Temp                  : 40 C\n        GPU T.Limit Temp                  : 47 C\n        GPU Slowdown T.Limit Temp         : -2 C\n";
        apply_q(q, &mut g);
        assert_eq!(g[0].slowdown_temp_c, Some(89));
        assert_eq!(g[0].shutdown_temp_c, Some(92));
        assert_eq!(g[1].slowdown_temp_c, None);
    }
}
