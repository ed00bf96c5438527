//! End-to-end: the hardware lane (issue 13) of the built `probe` binary against the `gpu-faults`
//! fixture host over real SSH: a power-capped, throttled GPU (limit lowered with `nvidia-smi -pl`
//! in root's history), a PCIe link below its max, an Xid 79 four minutes before the server
//! started, another user's process holding 20 GiB, and a system libnccl loaded instead of the
//! venv's wheel. Each shows in the report, on the timeline and among the ranked findings.
//! The nvidia-smi and journalctl stand-ins replay driver-535-shaped output (no GPU here).

use std::path::Path;
use std::process::Output;
use std::sync::OnceLock;

use probe_model::{HostReport, Impact, Timeline, TimelineEventKind};
use probe_testkit::fixture::FixtureHost;

use crate::util;

struct Env {
    host: &'static FixtureHost,
    dir: tempfile::TempDir,
}

fn env() -> &'static Env {
    static ENV: OnceLock<Env> = OnceLock::new();
    ENV.get_or_init(|| Env {
        host: util::fleet(&["gpu-faults"]).host("gpu-faults"),
        dir: tempfile::tempdir().unwrap(),
    })
}

/// probe with the host's own config and the store at `store`.
fn probe(args: &[&str], store: &Path) -> Output {
    let env = env();
    util::probe_on(env.dir.path(), &env.host.ssh_config(), store).run(args)
}

fn ok(out: &Output) -> String {
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "exit {:?}\nstdout: {stdout}\nstderr: {}",
        out.status.code(),
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

fn report() -> &'static (HostReport, String, Timeline) {
    static R: OnceLock<(HostReport, String, Timeline)> = OnceLock::new();
    R.get_or_init(|| {
        let env = env();
        let store = env.dir.path().join("snapshots.db");
        let alias = env.host.alias.clone();
        let report = util::one_host_report(&probe(&["host", &alias, "--format", "json"], &store));
        let human = ok(&probe(&["host", &alias], &store));
        let tl = ok(&probe(
            &["timeline", &format!("{alias}@latest"), "--format", "json"],
            &store,
        ));
        let timeline: Timeline = serde_json::from_str(&tl).expect("timeline json");
        (report, human, timeline)
    })
}

/// The finding whose evidence contains `needle`, with its rank (0 = first).
fn finding(needle: &str) -> (usize, Impact, String) {
    let (r, _, _) = report();
    r.hardware
        .findings
        .iter()
        .enumerate()
        .find_map(|(i, f)| {
            let ev = f.after.as_ref()?.as_str()?.to_string();
            ev.contains(needle).then_some((i, f.impact, ev))
        })
        .unwrap_or_else(|| panic!("no finding with {needle:?} in {:#?}", r.hardware.findings))
}

#[test]
fn gpu_state_from_driver_535() {
    let (r, _, _) = report();
    let g = &r.hardware.state.gpus;
    assert_eq!(g.len(), 2, "{g:#?}");
    assert_eq!(g[1].event_reasons, ["sw_power_cap"]);
    assert_eq!(g[1].enforced_power_limit_w, Some(200.0));
    assert_eq!(g[1].default_power_limit_w, Some(700.0));
    assert_eq!(g[0].pcie_width_current, Some(8));
    assert_eq!(g[0].slowdown_temp_c, Some(87), "from nvidia-smi -q");
    // 535 does not know clocks_event_reasons.*: asked under its old name, nothing else lost.
    assert!(g[0].unknown_fields.is_empty(), "{:?}", g[0].unknown_fields);
    assert_eq!(
        g[0].event_reasons_mask.as_deref(),
        Some("0x0000000000000000")
    );
}

#[test]
fn power_cap_with_its_limit_change() {
    let (i, impact, ev) = finding("GPU 1 throttled by SW power cap");
    assert_eq!(impact, Impact::High);
    assert!(
        ev.contains("power limit 700 -> 200 W since 2026-11-27"),
        "{ev}"
    );
    assert!(ev.contains("SM clock 1110 of 1980 MHz"), "{ev}");
    assert!(i < 4, "ranked among the first: {i}");
}

#[test]
fn xid_before_the_restart() {
    let (i, impact, ev) = finding("Xid 79 on 0000:17:00.0");
    assert_eq!(impact, Impact::High);
    assert!(ev.contains("4 minutes before the restart"), "{ev}");
    assert!(ev.contains("GPU has fallen off the bus"), "{ev}");
    assert!(i < 4, "{i}");
    let (r, _, _) = report();
    assert_eq!(r.hardware.state.kernel_log.as_deref(), Some("journal"));
    assert!(
        r.hardware
            .state
            .faults
            .iter()
            .any(|f| f.code == Some(63) && f.boot == Some(-1)),
        "the previous boot's Xid 63 is read too: {:#?}",
        r.hardware.state.faults
    );
}

#[test]
fn other_users_process_and_pcie_and_nccl() {
    let (_, impact, ev) = finding("of user ana holds 20.0 GiB");
    assert_eq!(impact, Impact::High);
    assert!(ev.starts_with("GPU 1: pid "), "{ev}");
    let (_, impact, ev) = finding("PCIe link gen 5 x8 (max gen 5 x16)");
    assert_eq!(impact, Impact::Medium, "{ev}");
    let (_, impact, ev) =
        finding("loaded libnccl 2.21.5 from /usr/local/lib/nccl-2.21/libnccl.so.2.21.5");
    assert_eq!(impact, Impact::Medium);
    assert!(ev.contains("wheel is nvidia-nccl-cu12 2.27.5"), "{ev}");
    // Ranked: high before medium.
    let (r, _, _) = report();
    let impacts: Vec<Impact> = r.hardware.findings.iter().map(|f| f.impact).collect();
    let mut sorted = impacts.clone();
    sorted.sort();
    assert_eq!(impacts, sorted);
}

#[test]
fn human_report_has_the_hardware_section() {
    let (_, human, _) = report();
    let at = human.find("Hardware").expect("a Hardware section");
    let section = &human[at..];
    for needle in [
        "GPU 1 throttled by SW power cap: power limit 700 -> 200 W since 2026-11-27",
        "Xid 79 on 0000:17:00.0 at ",
        "of user ana holds 20.0 GiB",
        "PCIe link gen 5 x8 (max gen 5 x16)",
        "NOT from wheel nvidia-nccl-cu12 2.27.5",
    ] {
        assert!(section.contains(needle), "{needle:?} missing in\n{section}");
    }
}

#[test]
fn timeline_has_the_fault_and_the_limit_change() {
    let (_, _, t) = report();
    let fault = t
        .events
        .iter()
        .find(|e| {
            e.kind == TimelineEventKind::GpuFault && e.summary.starts_with("Xid 79 on 0000:17:00.0")
        })
        .unwrap_or_else(|| panic!("{:#?}", t.events));
    let pl = t
        .events
        .iter()
        .find(|e| e.kind == TimelineEventKind::PowerLimitChange)
        .expect("power limit event");
    assert!(pl.summary.contains("200 W on GPU 1"), "{}", pl.summary);
    let running = t.events.iter().find(|e| e.running).expect("running launch");
    let pos = |e: &probe_model::TimelineEvent| t.events.iter().position(|x| x == e).unwrap();
    assert!(
        pos(pl) < pos(fault) && pos(fault) < pos(running),
        "order: {:#?}",
        t.events
    );
}

/// What the report ranks as the candidate causes of the restarted run against the run before
/// it (root's hand launch of 2026-11-25, which crashed with the Xid).
fn ranked_causes() -> Vec<(usize, Impact, String)> {
    let (r, _, _) = report();
    let diff = r
        .vs_previous_launch
        .as_ref()
        .unwrap_or_else(|| panic!("no comparison with the previous run: {:#?}", r.runs));
    diff.changes
        .iter()
        .enumerate()
        .filter_map(|(i, c)| Some((i, c.impact, c.after.as_ref()?.as_str()?.to_string())))
        .collect()
}

#[test]
fn each_condition_is_among_the_ranked_causes() {
    let causes = ranked_causes();
    // (evidence, impact)
    let cases = [
        (
            "GPU 1 throttled by SW power cap: power limit 700 -> 200 W since 2026-11-27",
            Impact::High,
        ),
        ("Xid 79 on 0000:17:00.0 at ", Impact::High),
        ("4 minutes before the restart", Impact::High),
        ("of user ana holds 20.0 GiB", Impact::High),
        ("PCIe link gen 5 x8 (max gen 5 x16)", Impact::Medium),
        (
            "loaded libnccl 2.21.5 from /usr/local/lib/nccl-2.21/libnccl.so.2.21.5",
            Impact::Medium,
        ),
    ];
    for (needle, impact) in cases {
        let found = causes.iter().find(|(_, _, e)| e.contains(needle));
        assert_eq!(
            found.map(|(_, i, _)| *i),
            Some(impact),
            "{needle:?} among the causes: {causes:#?}"
        );
    }
    // The high hardware causes come before any medium or low cause.
    let (r, _, _) = report();
    let changes = &r.vs_previous_launch.as_ref().unwrap().changes;
    let first_not_high = changes
        .iter()
        .position(|c| c.impact != Impact::High)
        .unwrap_or(changes.len());
    let power_cap = causes
        .iter()
        .find(|(_, _, e)| e.starts_with("GPU 1 throttled"))
        .unwrap();
    assert!(power_cap.0 < first_not_high, "{changes:#?}");
    assert!(
        changes
            .iter()
            .filter(|c| c.category == probe_model::Category::Hardware)
            .all(|c| !c.explanation.is_empty()),
        "every hardware cause says its likely effect"
    );
}

#[test]
fn runs_record_the_hardware_they_had() {
    let (r, human, _) = report();
    let running = r.runs.iter().find(|run| run.running).expect("running run");
    let earlier = r
        .runs
        .iter()
        .find(|run| !run.running && run.launch.starts_with("history:"))
        .unwrap_or_else(|| panic!("the hand launch's run: {:#?}", r.runs));
    let now = running.hardware.as_ref().expect("running run's hardware");
    let before = earlier.hardware.as_ref().expect("earlier run's hardware");
    let gpu1 = |h: &probe_model::RunHardware| -> Vec<f64> {
        h.power_limits
            .iter()
            .filter(|l| l.gpu == Some(1))
            .map(|l| l.watts)
            .collect()
    };
    assert_eq!(gpu1(before), [700.0, 200.0], "{before:#?}");
    assert_eq!(gpu1(now), [200.0], "{now:#?}");
    assert!(
        now.throttle_reasons
            .iter()
            .any(|t| t == "GPU 1: sw_power_cap"),
        "{now:#?}"
    );
    assert!(
        now.faults_before_start
            .iter()
            .any(|f| f.starts_with("Xid 79 on 0000:17:00.0") && f.contains("4 minutes before")),
        "{now:#?}"
    );
    assert!(
        before
            .faults
            .iter()
            .any(|f| f.starts_with("Xid 79 on 0000:17:00.0")),
        "the Xid falls in the crashed run's period: {before:#?}"
    );
    let at = human.find("Runs (oldest first)").expect("runs section");
    let runs = &human[at..];
    for needle in [
        "GPU 1 700 W (default limit) -> 200 W since 2026-11-27",
        "throttle reasons now: GPU 1: sw_power_cap",
        "GPU fault before its start: Xid 79 on 0000:17:00.0",
        "GPU fault while it ran: Xid 79 on 0000:17:00.0",
    ] {
        assert!(runs.contains(needle), "{needle:?} missing in\n{runs}");
    }
    let at = human
        .find("What changed vs the previous launch")
        .expect("the comparison section");
    let causes = &human[at..];
    assert!(
        causes.contains("GPU 1 throttled by SW power cap"),
        "hardware among the printed causes:\n{causes}"
    );
}

/// `probe diff` of an earlier, healthy state of the host (the exported snapshot with GPU 1 at its
/// default limit and not throttled, GPU 0's link at x16, no kernel faults, no other tenant, the
/// wheel's NCCL) against the snapshot now: each hardware difference is a ranked change with
/// its evidence.
#[test]
fn probe_diff_compares_the_hardware_state() {
    let env = env();
    let _ = report();
    let store = env.dir.path().join("snapshots.db");
    let after = env.dir.path().join("after.json");
    let alias = format!("{}@latest", env.host.alias);
    let path = after.to_str().unwrap();
    ok(&probe(&["snapshots", "export", &alias, "-o", path], &store));
    let mut healthy: probe_model::Snapshot =
        serde_json::from_str(&std::fs::read_to_string(&after).unwrap()).unwrap();
    let hw = &mut healthy.hardware;
    hw.gpus[1].enforced_power_limit_w = Some(700.0);
    hw.gpus[1].power_limit_w = Some(700.0);
    hw.gpus[1].event_reasons.clear();
    hw.gpus[0].pcie_width_current = Some(16);
    hw.faults.clear();
    hw.processes.retain(|p| p.user.as_deref() != Some("ana"));
    hw.loaded_libs.clear();
    for g in &mut healthy.gpu.gpus {
        if g.index == Some(1) {
            g.power_limit_w = Some(700.0);
        }
    }
    healthy.collected_at -= 86_400;
    let before = env.dir.path().join("healthy.json");
    std::fs::write(&before, serde_json::to_string(&healthy).unwrap()).unwrap();
    let out = probe(
        &["diff", before.to_str().unwrap(), path, "--format", "json"],
        &store,
    );
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let diff: probe_model::SnapshotDiff = serde_json::from_slice(&out.stdout).unwrap();
    let find = |key: &str| {
        diff.changes
            .iter()
            .find(|c| c.key == key)
            .unwrap_or_else(|| panic!("{key} not among {:#?}", diff.changes))
    };
    let text = |c: &probe_model::Change| {
        c.after
            .as_ref()
            .and_then(|v| v.as_str())
            .unwrap_or_default()
            .to_string()
    };
    // (key, impact, evidence contains)
    let cases = [
        (
            "gpu:1.power_cap",
            Impact::High,
            "power limit 700 -> 200 W since the snapshot of",
        ),
        ("gpu:1.throttle:sw_power_cap", Impact::High, "sw_power_cap"),
        (
            "gpu:0.pcie_link",
            Impact::Medium,
            "PCIe link gen 5 x8 (max gen 5 x16)",
        ),
        (
            "lib:libnccl",
            Impact::Medium,
            "/usr/local/lib/nccl-2.21/libnccl.so.2.21.5",
        ),
    ];
    for (key, impact, needle) in cases {
        let c = find(key);
        assert_eq!(c.impact, impact, "{c:#?}");
        assert!(text(c).contains(needle), "{c:#?}");
    }
    assert!(
        diff.changes
            .iter()
            .any(|c| c.key.starts_with("gpu-process:")
                && text(c).contains("of user ana holds 20.0 GiB")),
        "{:#?}",
        diff.changes
    );
    assert!(
        diff.changes
            .iter()
            .any(|c| c.key.starts_with("kernel:xid_79")
                && text(c).starts_with("Xid 79 on 0000:17:00.0")),
        "{:#?}",
        diff.changes
    );
    let limit = find("gpu:1.power_limit_w");
    assert_eq!(limit.impact, Impact::High);
    // The human rendering lists them too.
    let out = probe(&["diff", before.to_str().unwrap(), path], &store);
    assert_eq!(out.status.code(), Some(1));
    let human = String::from_utf8_lossy(&out.stdout);
    assert!(human.contains("GPU 1 throttled by SW power cap"), "{human}");
}

#[test]
fn each_condition_is_on_the_timeline() {
    let (_, _, t) = report();
    let summaries: Vec<(TimelineEventKind, &str)> = t
        .events
        .iter()
        .map(|e| (e.kind, e.summary.as_str()))
        .collect();
    // (kind, summary contains)
    let cases = [
        (
            TimelineEventKind::GpuObservation,
            "GPU 1 throttled by SW power cap: power limit 700 -> 200 W since 2026-11-27",
        ),
        (TimelineEventKind::PowerLimitChange, "200 W on GPU 1"),
        (
            TimelineEventKind::GpuObservation,
            "PCIe link gen 5 x8 (max gen 5 x16) (seen at collection)",
        ),
        (TimelineEventKind::GpuFault, "Xid 79 on 0000:17:00.0"),
        (
            TimelineEventKind::GpuObservation,
            "of user ana holds 20.0 GiB (seen at collection)",
        ),
        (
            TimelineEventKind::GpuObservation,
            "loaded libnccl 2.21.5 from /usr/local/lib/nccl-2.21/libnccl.so.2.21.5",
        ),
    ];
    for (kind, needle) in cases {
        assert!(
            summaries
                .iter()
                .any(|(k, s)| *k == kind && s.contains(needle)),
            "{kind:?} {needle:?} not on the timeline: {summaries:#?}"
        );
    }
    // The library was mapped when the server started: placed with its launch, after the Xid.
    let pos = |needle: &str| {
        summaries
            .iter()
            .position(|(_, s)| s.contains(needle))
            .unwrap()
    };
    assert!(
        pos("Xid 79 on 0000:17:00.0") < pos("mapped since the process started"),
        "{summaries:#?}"
    );
}
