//! Unit tests of the plan: reports, round-2 inputs, rooted paths.

use std::collections::BTreeMap;

use probe_model::{ProcessRole, SectionStatus, Snapshot, SystemdUnit, UnixTime};

use super::*;
use crate::frame::{Framed, RawSection};
use crate::parse::{self, Ctx, processes::ProcExtra};
use crate::script::{ModelLookup, ModelLookupKind, Round2Inputs};

#[test]
fn journals_of_the_units_that_ran_are_read_first() {
    let unit =
        |name: &str, active: Option<&str>, start: Option<UnixTime>, mtime: UnixTime| SystemdUnit {
            name: name.into(),
            fragment: probe_model::FileText {
                mtime: Some(mtime),
                ..Default::default()
            },
            state: active.map(|a| probe_model::UnitState {
                active_state: Some(a.into()),
                exec_main_start: start,
                ..Default::default()
            }),
            ..Default::default()
        };
    let mut units = vec![
        unit("never.service", Some("inactive"), None, 900),
        unit("old.service", Some("failed"), Some(100), 50),
        unit("running.service", Some("active"), Some(10), 10),
        unit("recent.service", Some("inactive"), Some(500), 60),
        unit("nostate.service", None, None, 700),
    ];
    units.extend((0..20).map(|i| unit(&format!("bulk-{i:02}.service"), None, None, i)));
    let snap = Snapshot {
        units,
        ..Default::default()
    };
    let ctx = Ctx {
        systemd_running: true,
        ..Default::default()
    };
    let mut inp = Round2Inputs::default();
    journal_units(&snap, &ctx, &mut inp);
    let names: Vec<&str> = inp.units.iter().map(|(_, n)| n.as_str()).collect();
    assert_eq!(
        names,
        [
            "running.service",
            "never.service",
            "nostate.service",
            "recent.service",
            "old.service",
            "bulk-19.service",
            "bulk-18.service",
            "bulk-17.service",
        ]
    );
}

#[test]
fn model_args() {
    assert!(is_hf_id("Qwen/Qwen3.5-35B-A3B"));
    assert!(!is_hf_id("/abs/path"));
    assert!(!is_hf_id("./rel/x"));
    assert_eq!(
        prefix_of_bin("/opt/venv/bin/python3").as_deref(),
        Some("/opt/venv")
    );
    assert_eq!(
        prefix_of_bin("/usr/bin/python3.11").as_deref(),
        Some("/usr")
    );
    assert_eq!(prefix_of_bin("python3"), None);
}

#[test]
fn container_paths_go_through_proc_root() {
    let v = |s: &str| s.split(' ').map(String::from).collect::<Vec<_>>();
    let cid = "3f2a9c1d8e7b5a4f6c0d2e1b9a8f7c6d5e4b3a2f1c0d9e8b7a6f5c4d3e2b1a0f";
    let mut snap = Snapshot::default();
    snap.processes.push(probe_model::ProcessInfo {
        pid: 66,
        argv: v("python3 -m vllm.entrypoints.openai.api_server --model /mnt/m --log-file l.log"),
        exe: Some("/usr/bin/python3.11".into()),
        cwd: Some("/workspace".into()),
        role: ProcessRole::Launcher,
        container_id: Some(cid.into()),
        mount_root: Some("/proc/66/root".into()),
        ..Default::default()
    });
    snap.processes.push(probe_model::ProcessInfo {
        pid: 7,
        argv: v("/opt/venv/bin/python3 -m sglang.launch_server --model-path /srv/m"),
        role: ProcessRole::Launcher,
        ..Default::default()
    });
    let extra: BTreeMap<u32, ProcExtra> = [(
        66,
        ProcExtra {
            stdout: Some("/var/log/vllm/server.log".into()),
            stderr: Some("pipe:[123]".into()),
        },
    )]
    .into();
    let inp = round2_inputs(&snap, &Ctx::default(), &extra);
    assert!(
        inp.python_prefixes
            .contains(&"/proc/66/root/usr".to_string())
    );
    assert!(inp.python_prefixes.contains(&"/opt/venv".to_string()));
    let dir = |named: &str, dir: &str| ModelLookup {
        kind: ModelLookupKind::Dir,
        named: named.into(),
        dir: dir.into(),
    };
    assert!(inp.models.contains(&dir("/mnt/m", "/proc/66/root/mnt/m")));
    assert!(inp.models.contains(&dir("/srv/m", "/srv/m")));
    assert!(
        inp.logs
            .contains(&"/proc/66/root/var/log/vllm/server.log".to_string())
    );
    // `--log-file` is no vLLM option (the catalog does not know it): round 2 reads only
    // what probe-launch read out of the launch, and no flag list of its own.
    assert!(
        !inp.logs
            .contains(&"/proc/66/root/workspace/l.log".to_string())
    );
    assert_eq!(inp.logs.len(), 1, "{:?}", inp.logs);
    assert_eq!(
        split_root("/proc/66/root/var/log/x"),
        Some(("/proc/66/root".into(), "/var/log/x".into()))
    );
    assert_eq!(split_root("/proc/66/rootx/y"), None);
    assert_eq!(split_root("/proc/self/root/y"), None);
    assert_eq!(split_root("/var/log/x"), None);
}

#[test]
fn report_statuses() {
    let mk = |rc, body: &[u8]| RawSection {
        name: "gpu_query".into(),
        body: body.to_vec(),
        rc: Some(rc),
        complete: true,
        t0: Some(10),
        t1: Some(25),
        ..Default::default()
    };
    assert_eq!(report(&mk(0, b"x"), false).0.status, SectionStatus::Ok);
    assert_eq!(report(&mk(0, b"x"), false).0.duration_ms, Some(150));
    assert_eq!(
        report(&mk(124, b""), false).0.status,
        SectionStatus::TimedOut
    );
    assert_eq!(
        report(&mk(3, b""), false).0.status,
        SectionStatus::NotPresent
    );
    assert_eq!(
        report(&mk(4, b""), false).0.status,
        SectionStatus::PermissionDenied
    );
    assert_eq!(report(&mk(9, b""), false).0.status, SectionStatus::Failed);
    let mut noisy = mk(0, b"x");
    noisy.stderr =
        b"sudo: unable to resolve host gpu7: Name or service not known\nreal problem".to_vec();
    assert_eq!(
        report(&noisy, false).0.message.as_deref(),
        Some("real problem")
    );
    noisy.stderr = b"sudo: unable to resolve host gpu7: Name or service not known\n".to_vec();
    assert_eq!(report(&noisy, false).0.message, None);
    let big = vec![b'a'; 1_048_577];
    let (r, b) = report(&mk(141, &big), false);
    assert_eq!(r.status, SectionStatus::Truncated);
    assert_eq!(b.len(), 1_048_576);
}

/// A FIFO where a log should be: the logs section names it (and keeps the log's status),
/// a FIFO `/var/log/dpkg.log` makes `pkg_history` fail with what it met, junk from
/// nvidia-smi makes `gpu_query` fail and names no GPU.
#[test]
fn what_a_section_met_is_said() {
    let b = "0123456789abcdef0123456789abcdef";
    let sec = |name: &str, body: String| RawSection {
        name: name.into(),
        body: body.into_bytes(),
        rc: Some(0),
        complete: true,
        ..Default::default()
    };
    let ctx = Ctx {
        boundary: b.into(),
        ..Default::default()
    };
    let mut snap = Snapshot::default();
    let logs = sec(
        "logs",
        format!("\n{b} F fifo log - - /srv/sglang/server.log\n"),
    );
    let framed = Framed {
        sections: vec![logs],
        done: true,
    };
    apply_round2(&mut snap, &ctx, &framed, &Round2Inputs::default());
    let rep = snap.sections.iter().find(|s| s.name == "logs").unwrap();
    let m = rep.message.as_deref().unwrap_or("");
    assert!(
        m.contains("/srv/sglang/server.log: not a regular file (a FIFO)"),
        "{m}"
    );
    assert_eq!(snap.logs[0].status, SectionStatus::Failed);

    let mut snap = Snapshot::default();
    let mut ctx = ctx.clone();
    let framed = Framed {
        sections: vec![
            sec("pkg_history", format!("\n{b} R fifo /var/log/dpkg.log\n")),
            sec(
                "gpu_query",
                format!("\n{b} R csv\nindex, name\n0, {}\n", "\u{7f}x".repeat(5000)),
            ),
        ],
        done: true,
    };
    apply_round1(&mut snap, &mut ctx, &framed, false);
    let rep = |n: &str| snap.sections.iter().find(|s| s.name == n).unwrap().clone();
    let pkg = rep("pkg_history");
    assert_eq!(pkg.status, SectionStatus::Failed);
    assert!(
        pkg.message
            .as_deref()
            .unwrap_or("")
            .contains("/var/log/dpkg.log: not a regular file (a FIFO)"),
        "{pkg:?}"
    );
    let gpu = rep("gpu_query");
    assert_eq!(gpu.status, SectionStatus::Failed, "{gpu:?}");
    assert!(
        gpu.message
            .as_deref()
            .unwrap_or("")
            .contains(parse::gpu::JUNK),
        "{gpu:?}"
    );
    assert!(snap.gpu.gpus.is_empty());
}
