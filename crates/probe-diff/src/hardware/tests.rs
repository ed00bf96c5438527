use super::*;

#[test]
fn minutes_before_a_restart_round_to_the_nearest() {
    for (gap, minutes) in [
        (0, 0),
        (29, 0),
        (30, 1),
        (239, 4),
        (240, 4),
        (269, 4),
        (270, 5),
    ] {
        assert_eq!(minutes_rounded(gap), minutes, "{gap} s");
    }
}

#[test]
fn readers() {
    let pl = [
        ("nvidia-smi -i 1 -pl 200", Some((Some(1), 200.0))),
        ("sudo nvidia-smi --power-limit=250", Some((None, 250.0))),
        (
            "nvidia-smi --id=0 --power-limit 300",
            Some((Some(0), 300.0)),
        ),
        ("nvidia-smi -q", None),
        ("echo -pl 3", None),
    ];
    for (i, e) in pl {
        assert_eq!(parse_power_limit(i), e, "{i}");
    }
    assert!(versions_disagree("2.21.5", "2.27.5"));
    assert!(!versions_disagree("2", "2.27.5"));
    assert!(!versions_disagree("2.27.5", "2.27.5+cu128"));
    assert_eq!(date(1_796_083_200), "2026-12-01");
    assert_eq!(hhmm(1_796_083_200 + 3 * 3600 + 12 * 60), "03:12");
}

#[test]
fn findings_from_state() {
    let gpu = |limit: f64| GpuHealth {
        index: Some(1),
        uuid: Some("GPU-1".into()),
        event_reasons: vec!["sw_power_cap".into()],
        enforced_power_limit_w: Some(limit),
        default_power_limit_w: Some(300.0),
        clocks_sm_mhz: Some(1200),
        clocks_max_sm_mhz: Some(1980),
        pcie_width_current: Some(4),
        pcie_width_max: Some(16),
        ..GpuHealth::default()
    };
    let before = Snapshot {
        collected_at: 1_795_737_600, // 2026-11-27
        hardware: HardwareState {
            gpus: vec![gpu(300.0)],
            ..HardwareState::default()
        },
        ..Snapshot::default()
    };
    let now = Snapshot {
        hardware: HardwareState {
            gpus: vec![gpu(200.0)],
            faults: vec![KernelFault {
                time: Some(1_796_094_764),
                kind: FaultKind::Xid,
                code: Some(79),
                pci_bus_id: Some("0000:17:00.0".into()),
                meaning: Some("GPU has fallen off the bus".into()),
                ..KernelFault::default()
            }],
            ..HardwareState::default()
        },
        ..Snapshot::default()
    };
    let timeline = Timeline {
        events: vec![TimelineEvent {
            running: true,
            time: TimeBounds {
                at: Some(1_796_094_764 + 240),
                ..TimeBounds::default()
            },
            ..TimelineEvent::default()
        }],
        ..Timeline::default()
    };
    let r = report(&now, Some(&before), &timeline);
    let ev: Vec<String> = r
        .findings
        .iter()
        .filter_map(|f| f.after.as_ref().and_then(|v| v.as_str()).map(String::from))
        .collect();
    let cases = [
        "GPU 1 throttled by SW power cap: power limit 300 -> 200 W since the snapshot of 2026-11-27, SM clock 1200 of 1980 MHz",
        "Xid 79 on 0000:17:00.0 at 03:12, 4 minutes before the restart (GPU has fallen off the bus)",
        "GPU 1 PCIe link gen ? x4 (max gen ? x16)",
    ];
    for want in cases {
        assert!(ev.iter().any(|e| e == want), "{want:?} not in {ev:#?}");
    }
    assert_eq!(
        r.findings.first().map(|f| f.impact),
        Some(probe_model::Impact::High)
    );
    // No previous snapshot, no history: the limit against the default instead.
    let r = report(&now, None, &Timeline::default());
    assert!(
        r.findings.iter().any(|f| f
            .after
            .as_ref()
            .and_then(|v| v.as_str())
            .is_some_and(|e| e.contains("its 200 W limit (default 300 W)"))),
        "{:#?}",
        r.findings
    );
}
