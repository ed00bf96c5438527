//! The real script under the real /bin/sh (dash on Debian) on this machine, via LocalExec.

#![expect(
    clippy::print_stderr,
    reason = "progress lines on stderr while fixture hosts start and stop"
)]

use probe_collect::{CollectOptions, collect_with_stats, script};
use probe_model::{GpuStatus, SectionStatus};
use probe_transport::LocalExec;

#[tokio::test]
async fn collects_this_machine_under_dash() {
    let exec = LocalExec::new();
    let opts = CollectOptions {
        target: "local".into(),
        ..Default::default()
    };
    let t = std::time::Instant::now();
    let (snap, stats) = collect_with_stats(&exec, &opts).await.expect("collect");
    let wall = t.elapsed();
    for s in &snap.sections {
        eprintln!(
            "{:12} {:?} {}B {:?}ms rc={:?} {:?}",
            s.name, s.status, s.bytes, s.duration_ms, s.exit_code, s.message
        );
    }
    eprintln!("wall {wall:?} stats {stats:?}");
    // Every round-1 section reported, none failed outright.
    for p in script::probes(1) {
        let s = snap
            .sections
            .iter()
            .find(|s| s.name == p.name)
            .unwrap_or_else(|| panic!("section {} missing", p.name));
        assert_ne!(
            s.status,
            SectionStatus::Failed,
            "{}: {:?}",
            p.name,
            s.message
        );
        assert!(s.exit_code.is_some(), "{}", p.name);
    }
    let hn = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
    assert_eq!(snap.host.hostname.as_deref(), Some(hn.trim()));
    assert!(snap.host.cpu_count.unwrap_or(0) >= 1);
    assert!(snap.host.mem_total_kib.unwrap_or(0) > 0);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    let clock = snap.remote_clock.expect("remote clock");
    assert!((clock - now).abs() < 60);
    assert!(snap.host.boot_time.is_some());
    // No GPU stack here: recorded as a state, not an error.
    if !std::path::Path::new("/usr/bin/nvidia-smi").exists() {
        assert_eq!(snap.gpu.status, GpuStatus::NoNvidiaSmi);
        let g = snap
            .sections
            .iter()
            .find(|s| s.name == "gpu_query")
            .unwrap();
        assert_eq!(g.status, SectionStatus::NotPresent);
    }
    assert!(snap.redacted);
    assert!(wall.as_secs() < 60, "collection took {wall:?}");
}

#[tokio::test]
async fn deadline_stops_starting_sections() {
    // With a tiny budget every section still reports (timed out or done), and the script ends.
    let exec = LocalExec::new();
    let boundary = script::new_boundary();
    let text = script::build_with_budget(
        &CollectOptions::default(),
        &boundary,
        std::time::Duration::from_millis(10),
    );
    let req = probe_transport::ExecRequest::new("sh -s").with_stdin(text.into_bytes());
    let out = probe_transport::Exec::exec(&exec, &req)
        .await
        .expect("exec");
    let f = probe_collect::frame::parse(&out.stdout, &boundary);
    assert!(f.done);
    assert_eq!(f.sections.len(), script::probes(1).count());
}

#[tokio::test]
async fn sudo_requested_but_unavailable_is_reported() {
    let exec = LocalExec::new();
    let opts = CollectOptions {
        target: "local".into(),
        sudo: true,
        ..Default::default()
    };
    let snap = probe_collect::collect(&exec, &opts).await.expect("collect");
    assert!(snap.host.hostname.is_some());
    let has_sudo = std::path::Path::new("/usr/bin/sudo").exists();
    // `Snapshot::sudo`: sudo was used, not only asked for (root may always use it).
    assert_eq!(
        snap.sudo,
        has_sudo && snap.host.collected_as.as_deref() == Some("root")
    );
    let s = snap.sections.iter().find(|s| s.name == "sudo");
    if !has_sudo {
        let s = s.expect("sudo section");
        assert_eq!(s.status, SectionStatus::NotPresent);
        assert!(s.message.as_deref().unwrap_or("").contains("without sudo"));
    }
}
