//! Evidence found where people put it, second part (issue 30): the scripts a cron line, a
//! crontab line or a service runs (read by round 1's `log_places` in every shell), and history
//! lines that read a server's saved output.

use crate::util::{run_script, shells};
use probe_collect::found::{self, FoundPlace, PlaceKind, PlaceText, Places};
use probe_collect::{CollectOptions, script};
use probe_model::{ComposeOrigin, ContainerInfo, HistoryEntry, HistoryFile, Snapshot};
use std::path::Path;

/// A host with one compose container, `llm-vllm-1` of service `vllm`.
fn host() -> Snapshot {
    Snapshot {
        containers: vec![ContainerInfo {
            id: "c71e5a0b9d3f4e2a8c6b1d0f7e9a3c5b2d4f6e8a0c1b3d5f7e9a2c4b6d8f0e1a".into(),
            name: Some("llm-vllm-1".into()),
            compose: Some(ComposeOrigin {
                project: "llm".into(),
                service: "vllm".into(),
                ..Default::default()
            }),
            ..Default::default()
        }],
        ..Default::default()
    }
}

fn text(kind: &str, path: &str, text: &str) -> PlaceText {
    PlaceText {
        kind: PlaceKind::from_word(kind).unwrap(),
        path: path.into(),
        text: text.into(),
    }
}

fn plan(snap: &Snapshot, texts: Vec<PlaceText>) -> Vec<(String, String, String)> {
    let places = Places {
        texts,
        ..Default::default()
    };
    found::plan(snap, &places, &[])
        .into_iter()
        .map(|f: FoundPlace| (f.dir, f.pattern, f.reason))
        .collect()
}

const SAVE_SCRIPT: &str = "#!/bin/sh\n# keep the server's output: docker forgets it when compose recreates the container\nset -eu\nARCHIVE=/var/log/llm-archive\nDAY=$(date +%F)\nmkdir -p \"$ARCHIVE\"\ndocker logs --since 24h llm-vllm-1 \\\n  >> \"$ARCHIVE/vllm-$DAY.log\" 2>&1\n";

/// A script's lines write a server's output like a cron line's, with the script's own values
/// in place, and the reason names the line that runs the script.
#[test]
fn a_script_cron_runs_names_its_files() {
    type Case<'a> = (Vec<PlaceText>, &'a [(&'a str, &'a str, &'a str)]);
    let cases: Vec<Case> = vec![
        (
            vec![
                text(
                    "cron",
                    "/etc/cron.d/llm-logs",
                    "SHELL=/bin/sh\n15 0 * * * root /usr/local/bin/save-vllm-logs.sh\n",
                ),
                text("script", "/usr/local/bin/save-vllm-logs.sh", SAVE_SCRIPT),
            ],
            &[(
                "/var/log/llm-archive",
                "vllm-*.log",
                "script:/usr/local/bin/save-vllm-logs.sh line 7 writes docker logs of llm-vllm-1 to /var/log/llm-archive/vllm-$(date +%F).log (run by cron:/etc/cron.d/llm-logs line 2)",
            )],
        ),
        // run-parts' directory: the script is its own place.
        (
            vec![text(
                "script",
                "/etc/cron.daily/llm-journal",
                "#!/bin/sh\nOUT=/srv/journal\njournalctl -u vllm --since yesterday -o short-iso > $OUT/vllm.$(date +%Y%m%d).txt\n",
            )],
            &[],
        ),
        // A script that saves some other program's output: nothing.
        (
            vec![text(
                "script",
                "/usr/local/bin/backup.sh",
                "#!/bin/sh\ndocker logs redis > /var/log/redis-$(date +%F).log\n",
            )],
            &[],
        ),
    ];
    for (texts, want) in cases {
        let got = plan(&host(), texts.clone());
        let want: Vec<(String, String, String)> = want
            .iter()
            .map(|(d, p, r)| ((*d).into(), (*p).into(), (*r).into()))
            .collect();
        assert_eq!(got, want, "{:?}", texts[0].path);
    }
}

/// The run-parts script for a unit of the host names its files, run by its directory.
#[test]
fn a_run_parts_script_saving_a_units_journal() {
    let mut snap = host();
    snap.units.push(probe_model::SystemdUnit {
        name: "vllm.service".into(),
        ..Default::default()
    });
    let got = plan(
        &snap,
        vec![text(
            "script",
            "/etc/cron.daily/llm-journal",
            "#!/bin/sh\nOUT=/srv/journal\njournalctl -u vllm --since yesterday -o short-iso > $OUT/vllm.$(date +%Y%m%d).txt\n",
        )],
    );
    assert_eq!(
        got,
        [(
            "/srv/journal".to_string(),
            "vllm.*.txt".to_string(),
            "script:/etc/cron.daily/llm-journal line 3 writes journalctl of vllm to /srv/journal/vllm.$(date +%Y%m%d).txt (run by run-parts of /etc/cron.daily)".to_string()
        )]
    );
}

fn history(lines: &[&str]) -> HistoryFile {
    HistoryFile {
        user: "root".into(),
        path: "/root/.bash_history".into(),
        entries: lines
            .iter()
            .enumerate()
            .map(|(i, c)| HistoryEntry {
                index: i as u32,
                time: None,
                command: (*c).into(),
            })
            .collect(),
        ..Default::default()
    }
}

/// A found place a history line reads says so (the newest such line); a file history lines
/// read whose name carries a server's name is a place of its own; other files read are not.
#[test]
fn history_lines_that_read_a_servers_saved_output() {
    let mut snap = host();
    snap.histories.push(history(&[
        "vi /etc/cron.d/llm-logs",
        "tail -n 200 /var/log/llm-archive/vllm-2026-11-21.log",
        "grep -c 'Running: 1[0-9][0-9] reqs' /var/log/llm-archive/vllm-2026-11-2*.log",
        "sudo less /data/old/llm-vllm-1.out",
        "cat /etc/hosts | grep gpu",
        "tail -f /var/log/syslog",
        "zcat /proc/config.gz",
    ]));
    let got = plan(
        &snap,
        vec![text(
            "cron",
            "/etc/cron.d/llm-logs",
            "15 0 * * * root docker logs --since 24h llm-vllm-1 >> /var/log/llm-archive/vllm-$(date +\\%F).log\n",
        )],
    );
    let want = [
        (
            "/var/log/llm-archive",
            "vllm-*.log",
            "cron:/etc/cron.d/llm-logs line 1 writes docker logs of llm-vllm-1 to /var/log/llm-archive/vllm-$(date +%F).log; read by 2 history lines, the newest root's /root/.bash_history entry 3: `grep -c 'Running: 1[0-9][0-9] reqs' /var/log/llm-archive/vllm-2026-11-2*.log`",
        ),
        (
            "/data/old",
            "llm-vllm-1.out",
            "root's /root/.bash_history entry 4 reads /data/old/llm-vllm-1.out (its name carries llm-vllm-1): `sudo less /data/old/llm-vllm-1.out`",
        ),
    ];
    let got: Vec<(&str, &str, &str)> = got
        .iter()
        .filter(|(_, p, _)| !p.ends_with(".*") && !p.ends_with("-*"))
        .map(|(d, p, r)| (d.as_str(), p.as_str(), r.as_str()))
        .collect();
    assert_eq!(got, want);
}

/// `(command, paths read)`.
#[test]
fn what_a_history_line_reads() {
    let cases: &[(&str, &[&str])] = &[
        ("tail -f /a/b.log", &["/a/b.log"]),
        (
            "tail -n 5 /a/b.log | grep x /c.log; cat '/d e'",
            &["/a/b.log", "/c.log"],
        ),
        ("sudo -u svc zgrep tok/s /srv/l/*.gz", &["/srv/l/*.gz"]),
        ("vi /a/b.log", &[]),
        ("cat $HOME/x.log", &[]),
        ("echo /a/b.log > /tmp/x", &[]),
        ("(cd /x && cat /y/z.log)", &["/y/z.log"]),
    ];
    for (cmd, want) in cases {
        assert_eq!(found::read_paths(cmd), *want, "{cmd}");
    }
}

/// Round 1's `log_places` section under dash+mawk, busybox alone and bash+gawk: the scripts
/// the cron and crontab lines and a service start are read beside the tables (a shell-run one
/// without `#!` too), a program that is not a script, a `#!`-less file run by itself, a path
/// through `..` and the system's programs are not.
#[test]
fn the_scripts_cron_runs_are_read_in_every_shell() {
    let d = tempfile::tempdir().unwrap();
    let r = d.path().display().to_string();
    let w = |p: &str, t: &str| {
        let f = d.path().join(p);
        std::fs::create_dir_all(f.parent().unwrap()).unwrap();
        std::fs::write(f, t).unwrap();
    };
    w(
        "cron.d/llm-logs",
        &format!(
            "SHELL=/bin/sh\n15 0 * * * root {r}/bin/save.sh >/dev/null 2>&1\n30 0 * * * root sh {r}/bin/plain.sh\n@daily root /bin/bash -c '{r}/bin/quoted.sh'\n0 1 * * * root /usr/bin/docker logs x > /tmp/y.log\n0 2 * * * root {r}/bin/noshebang.sh\n0 3 * * * root {r}/bin/../bin/save.sh\n0 4 * * * root {r}/bin/prog\n"
        ),
    );
    w(
        "crontabs/ops",
        &format!("5 * * * * {r}/bin/user.sh % input\n"),
    );
    w(
        "system/archive.service",
        &format!("[Service]\nExecStartPre=-{r}/bin/pre.sh\nExecStart=/usr/bin/env true\n"),
    );
    w("cron.daily/llm-journal", "#!/bin/sh\njournalctl -u vllm\n");
    for s in ["save", "quoted", "user", "pre"] {
        w(&format!("bin/{s}.sh"), &format!("#!/bin/sh\necho {s}\n"));
    }
    w("bin/plain.sh", "echo plain\n");
    w("bin/noshebang.sh", "echo no\n");
    w("bin/prog", "\x7fELF\x02\x01\x01\0\0\0");
    let lplaces = format!(
        "cron {r}/cron.d/*\ncrontab {r}/crontabs/*\nservice {r}/system/*.service\nscript {r}/cron.daily/*"
    );
    let mut want: Vec<String> = ["save", "plain", "quoted", "user", "pre"]
        .iter()
        .map(|s| format!("{r}/bin/{s}.sh"))
        .chain([format!("{r}/cron.daily/llm-journal")])
        .collect();
    want.sort();
    for sh in shells() {
        let b = script::new_boundary();
        let text = script::build_probe(
            &CollectOptions::default(),
            &b,
            std::time::Duration::from_secs(60),
            "log_places",
            &[
                ("LPLACES", lplaces.clone()),
                ("LPPODS", format!("{r}/pods")),
            ],
        )
        .unwrap();
        let f = run_script(&sh, &text, &b);
        let sec = f.sections.iter().find(|s| s.name == "log_places").unwrap();
        let places = found::parse_places(&sec.body, &b);
        let mut scripts: Vec<String> = places
            .texts
            .iter()
            .filter(|t| t.kind == PlaceKind::Script)
            .map(|t| t.path.clone())
            .collect();
        scripts.sort();
        assert_eq!(scripts, want, "{}", sh.name);
        let save = places
            .texts
            .iter()
            .find(|t| t.path.ends_with("/bin/save.sh"))
            .unwrap();
        assert_eq!(save.text, "#!/bin/sh\necho save\n", "{}", sh.name);
        assert!(
            places.texts.iter().any(|t| t.kind == PlaceKind::Cron),
            "{}",
            sh.name
        );
        assert!(Path::new(&format!("{r}/bin/prog")).exists());
    }
}

/// A cron line that writes a server's output to a file whose name has letters outside ASCII: the
/// place is planned, not given to the host's shell as a pattern, and said not read, with why.
#[test]
fn a_non_ascii_file_name_is_said_not_read() {
    let places = Places {
        texts: vec![text(
            "cron",
            "/etc/cron.d/llm-logs",
            "5 0 * * * root docker logs llm-vllm-1 >> /var/log/llm/caf\u{e9}-$(date +\\%F).log\n",
        )],
        ..Default::default()
    };
    let planned = found::plan(&host(), &places, &[]);
    assert_eq!(planned.len(), 1, "{planned:#?}");
    assert_eq!(planned[0].pattern, "caf\u{e9}-*.log");
    assert!(!found::passed(&planned[0]));
    assert_eq!(found::script_lines(&planned), "");
    let b = script::new_boundary();
    let logs = probe_collect::parse::logs::parse_found(b"", &b, None, 0, &planned);
    let [said] = logs.as_slice() else {
        panic!("{logs:#?}")
    };
    assert_eq!(said.location, "/var/log/llm/caf\u{e9}-*.log");
    assert_eq!(said.status, probe_model::SectionStatus::NotPresent);
    assert_eq!(
        said.message.as_deref(),
        Some(
            "not read: the name pattern caf\u{e9}-*.log has letters outside ASCII, which probe does not give the host's shell as a pattern"
        )
    );
    assert!(
        said.found_by
            .as_deref()
            .is_some_and(|r| r.starts_with("cron:/etc/cron.d/llm-logs line 1 writes")),
        "{said:?}"
    );
}
