//! Evidence found where people put it (issue 30): which files a cron line, a timer's service,
//! a logrotate config or kubelet's pod directories name for a server, each with its reason;
//! and the round-2 section that reads them, against hostile directories.

use probe_collect::found::{self, FoundMode, FoundPlace, PlaceText, Places};
use probe_model::{ComposeOrigin, ContainerInfo, PodOrigin, Snapshot, SystemdUnit};

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
