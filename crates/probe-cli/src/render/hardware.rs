//! The "Hardware" section of the host report: ranked hardware findings with their evidence,
//! one line of state per GPU, other users' GPU processes, kernel GPU faults and the CUDA-stack
//! libraries the serving processes really loaded.

use probe_model::{GpuHealth, HardwareReport};

use super::changes::{impact_label, impact_tone};
use super::doc::{Doc, Tone};
use super::{format_time, format_value};

/// Kernel faults listed (the newest).
const MAX_FAULTS_SHOWN: usize = 10;

/// Appends the section; nothing when the host has no hardware data.
pub fn section(doc: &mut Doc, report: &HardwareReport) {
    let st = &report.state;
    if st.gpus.is_empty()
        && st.faults.is_empty()
        && st.loaded_libs.is_empty()
        && report.findings.is_empty()
    {
        return;
    }
    doc.heading(2, "Hardware");
    findings_table(doc, report);
    doc.items(state_items(report));
}

/// The findings as a table, or a line saying there are none.
fn findings_table(doc: &mut Doc, report: &HardwareReport) {
    if report.findings.is_empty() {
        doc.line(Tone::Good, "  no hardware findings");
    } else {
        doc.table(
            ["impact", "finding", "likely effect"]
                .map(String::from)
                .to_vec(),
            report
                .findings
                .iter()
                .map(|f| {
                    let evidence = f
                        .after
                        .as_ref()
                        .map(format_value)
                        .unwrap_or_else(|| f.key.clone());
                    (
                        impact_tone(f.impact),
                        vec![
                            impact_label(f.impact).to_string(),
                            evidence,
                            f.explanation.clone(),
                        ],
                    )
                })
                .collect(),
        );
    }
}

/// The hardware state as items: GPUs, their processes, recent kernel faults, loaded libraries.
fn state_items(report: &HardwareReport) -> Vec<(u8, Tone, String)> {
    let st = &report.state;
    let mut items: Vec<(u8, Tone, String)> = st
        .gpus
        .iter()
        .map(|g| (0, Tone::Plain, gpu_state(g)))
        .collect();
    for p in &st.processes {
        items.push((
            0,
            Tone::Plain,
            format!(
                "process {} ({}) of {}: {} MiB",
                p.pid.map_or("?".into(), |x| x.to_string()),
                p.process_name.as_deref().unwrap_or("?"),
                p.user.as_deref().unwrap_or("unknown user"),
                p.used_memory_mib.map_or("?".into(), |m| m.to_string())
            ),
        ));
    }
    for f in st.faults.iter().rev().take(MAX_FAULTS_SHOWN) {
        items.push((
            0,
            Tone::Warn,
            format!(
                "{} kernel: {}",
                f.time.map_or_else(|| "?".to_string(), format_time),
                f.line
            ),
        ));
    }
    for l in &st.loaded_libs {
        let wheel = match (&l.wheel, &l.wheel_version, l.from_wheel) {
            (Some(w), Some(v), Some(true)) => format!(" (from wheel {w} {v})"),
            (Some(w), Some(v), _) => format!(" (NOT from wheel {w} {v})"),
            _ => String::new(),
        };
        items.push((
            0,
            Tone::Dim,
            format!("pid {} loaded {}{wheel}", l.pid, l.path),
        ));
    }
    items
}

fn gpu_state(g: &GpuHealth) -> String {
    let o = |v: Option<u32>| v.map_or("?".to_string(), |x| x.to_string());
    let w = |v: Option<f64>| v.map_or("?".to_string(), |x| format!("{x:.0}"));
    let reasons = if g.event_reasons.is_empty() {
        "none".to_string()
    } else {
        g.event_reasons.join(",")
    };
    format!(
        "GPU {}: SM {}/{} MHz, {} C, power {}/{} W (default {}), PCIe gen {}/{} x{}/x{}, throttle: {reasons}, persistence {}",
        o(g.index),
        o(g.clocks_sm_mhz),
        o(g.clocks_max_sm_mhz),
        o(g.temperature_c),
        w(g.power_draw_w),
        w(g.enforced_power_limit_w.or(g.power_limit_w)),
        w(g.default_power_limit_w),
        o(g.pcie_gen_current),
        o(g.pcie_gen_max),
        o(g.pcie_width_current),
        o(g.pcie_width_max),
        g.persistence_mode.as_deref().unwrap_or("?")
    )
}
