//! Evidence found where people put it (issue 30): which files a cron line, a timer's service,
//! a logrotate config or kubelet's pod directories name for a server, each with its reason;
//! and the round-2 section that reads them, against hostile directories.

use crate::util::{Shell, run_round2, shells};
use probe_collect::found::{self, FoundMode, FoundPlace, PlaceText, Places};
use probe_model::{ComposeOrigin, ContainerInfo, PodOrigin, SectionStatus, Snapshot, SystemdUnit};
use std::path::Path;

fn kind(w: &str) -> probe_collect::found::PlaceKind {
    probe_collect::found::PlaceKind::from_word(w).unwrap()
}

/// A host with one compose container (`llm-vllm-1`, service `vllm`), one pod's container and
/// one serving unit.
fn host() -> Snapshot {
    Snapshot {
        containers: vec![
            ContainerInfo {
                id: "c71e5a0b9d3f4e2a8c6b1d0f7e9a3c5b2d4f6e8a0c1b3d5f7e9a2c4b6d8f0e1a".into(),
                name: Some("llm-vllm-1".into()),
                compose: Some(ComposeOrigin {
                    project: "llm".into(),
                    service: "vllm".into(),
                    ..Default::default()
                }),
                ..Default::default()
            },
            ContainerInfo {
                id: "0a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f9".into(),
                name: Some("k8s_vllm_vllm-0_serving_6f1c2d3e-0000-4000-8000-123456789abc_0".into()),
                pod: Some(PodOrigin {
                    namespace: Some("serving".into()),
                    pod: "vllm-0".into(),
                    container: Some("vllm".into()),
                    uid: Some("6f1c2d3e-0000-4000-8000-123456789abc".into()),
                    ..Default::default()
                }),
                ..Default::default()
            },
        ],
        units: vec![SystemdUnit {
            name: "sglang.service".into(),
            ..Default::default()
        }],
        ..Default::default()
    }
}

fn places(texts: &[(&str, &str, &str)]) -> Places {
    Places {
        texts: texts
            .iter()
            .map(|(k, p, t)| PlaceText {
                kind: kind(k),
                path: (*p).into(),
                text: (*t).into(),
            })
            .collect(),
        ..Default::default()
    }
}

fn found(p: &Places, named: &[&str]) -> Vec<(String, String, String)> {
    let named: Vec<String> = named.iter().map(|s| (*s).to_string()).collect();
    found::plan(&host(), p, &named)
        .into_iter()
        .map(|f: FoundPlace| (f.dir, f.pattern, f.reason))
        .collect()
}

/// (kind, file, text) -> (dir, pattern, reason) of each place found.
#[test]
fn lines_that_write_a_servers_output_name_its_files() {
    type Case<'a> = (&'a str, &'a str, &'a str, &'a [(&'a str, &'a str, &'a str)]);
    let cases: &[Case] = &[
        (
            "cron",
            "/etc/cron.d/llm-logs",
            "SHELL=/bin/sh\n# keep it\n5 0 * * * root docker logs --since 24h llm-vllm-1 >> /var/log/llm-archive/vllm-$(date +\\%F).log 2>&1\n",
            &[(
                "/var/log/llm-archive",
                "vllm-*.log",
                "cron:/etc/cron.d/llm-logs line 3 writes docker logs of llm-vllm-1 to /var/log/llm-archive/vllm-$(date +%F).log",
            )],
        ),
        (
            "crontab",
            "/var/spool/cron/crontabs/ops",
            "@daily cd /srv/llm && docker compose logs --no-color vllm | tee -a /data/logs/vllm.log >/dev/null\n",
            &[
                (
                    "/data/logs",
                    "vllm.log",
                    "crontab:/var/spool/cron/crontabs/ops line 1 writes docker docker compose logs of vllm to /data/logs/vllm.log",
                ),
                (
                    "/data/logs",
                    "vllm.log.*",
                    "crontab:/var/spool/cron/crontabs/ops line 1 writes docker docker compose logs of vllm to /data/logs/vllm.log",
                ),
                (
                    "/data/logs",
                    "vllm.log-*",
                    "crontab:/var/spool/cron/crontabs/ops line 1 writes docker docker compose logs of vllm to /data/logs/vllm.log",
                ),
            ],
        ),
        (
            "service",
            "/etc/systemd/system/sglang-archive.service",
            "[Service]\nType=oneshot\nExecStart=/bin/sh -c 'journalctl -u sglang.service --since -1d -o short-iso \\\n  > /srv/archive/sglang.$(date +%%Y%%m%%d).log'\n",
            &[(
                "/srv/archive",
                "sglang.*.log",
                "service:/etc/systemd/system/sglang-archive.service line 3 writes journalctl of sglang.service to /srv/archive/sglang.$(date +%Y%m%d).log",
            )],
        ),
        // The output of a command that names no server here, and lines that write nowhere a
        // collector may look: nothing.
        (
            "cron",
            "/etc/crontab",
            "17 * * * * root cd / && run-parts --report /etc/cron.hourly\n",
            &[],
        ),
        (
            "cron",
            "/etc/cron.d/other",
            "0 1 * * * root docker logs redis > /var/log/redis.log\n",
            &[],
        ),
        (
            "cron",
            "/etc/cron.d/root",
            "0 1 * * * root docker logs llm-vllm-1 > /$(date +%s)\n",
            &[],
        ),
        (
            "cron",
            "/etc/cron.d/proc",
            "0 1 * * * root docker logs llm-vllm-1 > /proc/1/fd/1\n",
            &[],
        ),
        (
            "cron",
            "/etc/cron.d/up",
            "0 1 * * * root docker logs llm-vllm-1 > /var/log/../../etc/x.log\n",
            &[],
        ),
        (
            "cron",
            "/etc/cron.d/null",
            "0 1 * * * root docker logs llm-vllm-1 > /dev/null 2>&1\n",
            &[],
        ),
        (
            "cron",
            "/etc/cron.d/vardir",
            "0 1 * * * root docker logs llm-vllm-1 > $HOME/vllm.log\n",
            &[],
        ),
        (
            "cron",
            "/etc/cron.d/glob",
            "0 1 * * * root docker logs llm-vllm-1 > /var/log/*\n",
            &[],
        ),
    ];
    for (k, path, text, want) in cases {
        let got = found(&places(&[(k, path, text)]), &[]);
        let want: Vec<(String, String, String)> = want
            .iter()
            .map(|(d, p, r)| ((*d).into(), (*p).into(), (*r).into()))
            .collect();
        assert_eq!(got, want, "{path}: {text}");
    }
}

#[test]
fn logrotate_olddir_holds_the_rotated_copies() {
    let p = places(&[
        (
            "cron",
            "/etc/cron.d/llm-logs",
            "5 0 * * * root docker logs llm-vllm-1 >> /var/log/llm/vllm.log 2>&1\n",
        ),
        (
            "logrotate",
            "/etc/logrotate.d/llm",
            "/var/log/llm/*.log /var/log/sglang/server.log {\n  daily\n  rotate 30\n  dateext\n  compress\n  olddir /var/log/llm/old\n}\n/var/log/other.log {\n olddir old\n}\n",
        ),
    ]);
    let got = found(&p, &["/var/log/sglang/server.log"]);
    let olddirs: Vec<(&str, &str, &str)> = got
        .iter()
        .filter(|(_, _, r)| r.starts_with("logrotate:"))
        .map(|(d, p, r)| (d.as_str(), p.as_str(), r.as_str()))
        .collect();
    assert_eq!(
        olddirs,
        [
            (
                "/var/log/llm/old",
                "server.log*",
                "logrotate:/etc/logrotate.d/llm line 1 moves the rotated copies of /var/log/sglang/server.log to olddir /var/log/llm/old"
            ),
            (
                "/var/log/llm/old",
                "vllm.log*",
                "logrotate:/etc/logrotate.d/llm line 1 moves the rotated copies of /var/log/llm/vllm.log to olddir /var/log/llm/old"
            ),
        ]
    );
}

#[test]
fn kubelet_pod_directories_of_containers_in_pods() {
    let p = Places {
        pod_dirs: vec![
            "/var/log/pods/serving_vllm-0_6f1c2d3e-0000-4000-8000-123456789abc/vllm".into(),
            "/var/log/pods/serving_vllm-0_6f1c2d3e-0000-4000-8000-123456789abc/init".into(),
            "/var/log/pods/serving_vllm-0_0000-old-uid/vllm".into(),
            "/var/log/pods/kube-system_coredns-1_1234/coredns".into(),
        ],
        ..Default::default()
    };
    let got = found::plan(&host(), &p, &[]);
    assert_eq!(got.len(), 1, "{got:#?}");
    let f = &got[0];
    assert_eq!(f.mode, FoundMode::Cri);
    assert_eq!(
        (f.dir.as_str(), f.pattern.as_str()),
        (
            "/var/log/pods/serving_vllm-0_6f1c2d3e-0000-4000-8000-123456789abc/vllm",
            "*.log"
        )
    );
    assert!(f.reason.starts_with("kubelet:"), "{}", f.reason);
}

/// However many lines a crontab holds, the places are bounded.
#[test]
fn many_lines_give_a_bounded_plan() {
    let text: String = (0..5000)
        .map(|i| {
            format!("0 1 * * * root docker logs llm-vllm-1 > /var/log/d{i}/v-$(date +\\%F).log\n")
        })
        .collect();
    let got = found(&places(&[("cron", "/etc/cron.d/many", &text)]), &[]);
    assert_eq!(got.len(), found::MAX_PLACES);
}

#[test]
fn dated_names_become_one_pattern_in_one_directory() {
    /// (target, its directory and patterns)
    type Case<'a> = (&'a str, Option<(&'a str, &'a [&'a str])>);
    let cases: &[Case] = &[
        (
            "/var/log/a/vllm-$(date +%F).log",
            Some(("/var/log/a", &["vllm-*.log"])),
        ),
        (
            "/var/log/a/vllm-`date +%F`.log",
            Some(("/var/log/a", &["vllm-*.log"])),
        ),
        (
            "/var/log/a/${NAME}_$(date +%Y%m%d)-$HOSTNAME.txt",
            Some(("/var/log/a", &["*_*-*.txt"])),
        ),
        (
            "/var/log/a/x.log",
            Some(("/var/log/a", &["x.log", "x.log.*", "x.log-*"])),
        ),
        ("/var/log/$(date +%F)/x.log", None),
        ("/var/log/a/$(date +%F)", None),
        ("/var/log/a/$(unclosed", None),
        ("relative/x.log", None),
        ("/x.log", None),
        ("/etc/x.log", None),
        ("/sys/kernel/x", None),
        ("/var/log/a/x;rm -rf.log", None),
    ];
    for (target, want) in cases {
        let got = found::dated_pattern(target);
        let want = want.map(|(d, p)| {
            (
                d.to_string(),
                p.iter().map(|s| s.to_string()).collect::<Vec<_>>(),
            )
        });
        assert_eq!(got, want, "{target}");
    }
}

/// The `found_logs` section itself, run by dash (with mawk), by busybox's `sh` and `awk` (with
/// nothing else on the PATH) and by bash (with gawk), over a directory another user could fill:
/// thousands of dated files, a link to `/dev/zero`, a FIFO, a directory named like a log, a
/// name with a newline and one with a terminal escape, and a gzip bomb among the rotated copies.
/// Each shell finishes, reads only the newest `max-dated-files` names, never follows the link
/// or opens the FIFO, and keeps the bomb's output bounded.
#[test]
fn found_logs_section_against_a_hostile_directory_in_every_shell() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    hostile_log_dir(d);
    let places = vec![
        found_place(d, "vllm-*.log", "cron line 1"),
        found_place(d, "vllm.log.*", "logrotate line 1"),
    ];
    let max_dated = probe_collect::config::log_places().max_dated_files as usize;
    for shell in shells() {
        let logs = run_found_logs(&shell, &places);
        let of = |name: &str| {
            logs.iter()
                .find(|l| l.location.ends_with(name))
                .unwrap_or_else(|| panic!("{}: no record of {name}: {logs:#?}", shell.name))
        };
        // The newest names of the place, the planted ones among them (they sort last).
        let of_place = logs
            .iter()
            .filter(|l| l.found_by.as_deref() == Some("cron line 1"))
            .count();
        // (The name with a newline is counted among the newest and skipped.)
        assert_eq!(
            of_place,
            max_dated - 1,
            "{}: records of the place",
            shell.name
        );
        let dated: Vec<&str> = logs
            .iter()
            .filter(|l| l.location.contains("/vllm-2026-"))
            .map(|l| l.location.as_str())
            .collect();
        assert_eq!(dated.len(), max_dated - 5, "{}", shell.name);
        assert!(
            dated
                .iter()
                .any(|l| l.ends_with("vllm-2026-11-30-2999.log"))
        );
        assert!(
            !dated
                .iter()
                .any(|l| l.ends_with("vllm-2026-11-30-0000.log"))
        );
        let newest = of("vllm-2026-11-30-2999.log");
        assert_eq!(newest.status, SectionStatus::Ok, "{}", shell.name);
        assert_eq!(newest.found_by.as_deref(), Some("cron line 1"));
        for special in ["vllm-zero.log", "vllm-zfifo.log", "vllm-zdir.log"] {
            let s = of(special);
            assert_eq!(s.bytes_read, 0, "{}: {special} read", shell.name);
            assert!(s.startups.is_empty() && s.metrics.is_empty());
        }
        assert!(
            logs.iter().all(|l| !l.location.contains(['\n', '\u{1b}'])),
            "{}: a control character reached a location",
            shell.name
        );
        let bomb = of("vllm.log.1.gz");
        assert!(
            bomb.bytes_read <= 64 << 20,
            "{}: the bomb gave {} bytes",
            shell.name,
            bomb.bytes_read
        );
        let plain = of("vllm.log.2");
        assert_eq!(plain.status, SectionStatus::Ok, "{}", shell.name);
        assert!(
            plain.metrics.iter().any(|m| !m.points.is_empty()),
            "{}: the rotated copy's metric lines were not read",
            shell.name
        );
    }
}

fn found_place(d: &Path, pattern: &str, reason: &str) -> FoundPlace {
    FoundPlace {
        mode: FoundMode::Text,
        dir: d.display().to_string(),
        pattern: pattern.into(),
        reason: reason.into(),
    }
}

/// vLLM 0.8's periodic stats line (vllm/engine/metrics.py `LoggingStatLogger.log`), as a
/// journal-less file holds it.
fn vllm_line(day: u32, i: u32) -> String {
    format!(
        "INFO 11-{day:02} {:02}:{:02}:00 metrics.py:455] Avg prompt throughput: 1200.0 tokens/s, Avg generation throughput: {}.0 tokens/s, Running: 8 reqs, Swapped: 0 reqs, Pending: 0 reqs, GPU KV cache usage: 41.2%, CPU KV cache usage: 0.0%.\n",
        i % 24,
        i % 60,
        600 + i % 50
    )
}

fn hostile_log_dir(d: &Path) {
    for i in 0..3000u32 {
        let name = format!("vllm-2026-11-30-{i:04}.log");
        std::fs::write(d.join(name), vllm_line(30, i)).unwrap();
    }
    std::os::unix::fs::symlink("/dev/zero", d.join("vllm-zero.log")).unwrap();
    let fifo = d.join("vllm-zfifo.log");
    let st = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(st.success());
    std::fs::create_dir(d.join("vllm-zdir.log")).unwrap();
    std::fs::write(d.join("vllm-zz\n.log"), vllm_line(30, 1)).unwrap();
    std::fs::write(d.join("vllm-zz\u{1b}[2J.log"), vllm_line(30, 2)).unwrap();
    // 32 MiB of one byte, no newline: about 32 KiB gzipped.
    let bomb = d.join("vllm.log.1.gz");
    let st = std::process::Command::new("sh")
        .arg("-c")
        .arg("head -c 33554432 /dev/zero | tr '\\0' A | gzip -9 > \"$1\"")
        .arg("sh")
        .arg(&bomb)
        .status()
        .unwrap();
    assert!(st.success());
    let rotated: String = (0..2000).map(|i| vllm_line(29, i)).collect();
    std::fs::write(d.join("vllm.log.2"), rotated).unwrap();
}

/// Round 2's `found_logs` of `places` under `shell`.
fn run_found_logs(shell: &Shell, places: &[FoundPlace]) -> Vec<probe_model::LogSource> {
    let inputs = probe_collect::script::Round2Inputs {
        found: places.to_vec(),
        ..Default::default()
    };
    let snap = run_round2(shell, &inputs);
    let sec = snap.sections.iter().find(|s| s.name == "found_logs");
    assert!(
        sec.is_some_and(|s| s.status != SectionStatus::Failed),
        "{}: {sec:?}",
        shell.name
    );
    snap.logs
}
