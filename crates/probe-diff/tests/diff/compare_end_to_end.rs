//! End to end through the real reconstruction: snapshots holding only raw evidence (process argv,
//! unit files, history) are compared and put on a timeline.

use probe_diff::{CompareOptions, compare_snapshots, is_meaningful, timeline};
use probe_model::{
    Engine, HistoryEntry, HistoryFile, ProcessInfo, ProcessRole, Snapshot, SourceKind,
};

fn argv(text: &str) -> Vec<String> {
    text.split_whitespace().map(str::to_string).collect()
}

fn host(pid: u32, command: &str, start: i64) -> Snapshot {
    Snapshot {
        target: String::from("gpu7"),
        collected_at: start + 3600,
        processes: vec![ProcessInfo {
            pid,
            argv: argv(command),
            start_time: Some(start),
            role: ProcessRole::Launcher,
            engine: Some(probe_model::Engine::Sglang),
            ..ProcessInfo::default()
        }],
        ..Snapshot::default()
    }
}

const WITH_MTP: &str = "/opt/venv/bin/python3 -m sglang.launch_server --model-path /models/DeepSeek-V3 \
    --tp 8 --mem-fraction-static 0.85 --speculative-algorithm NEXTN --speculative-num-steps 3 \
    --speculative-eagle-topk 1 --speculative-num-draft-tokens 4 --port 30000";
const WITHOUT_MTP: &str = "/opt/venv/bin/python3 -m sglang.launch_server --model-path /models/DeepSeek-V3 \
    --tensor-parallel-size 8 --mem-fraction-static 0.90 --port 30000";

#[test]
fn dropping_speculative_decoding_is_the_first_answer() {
    let before = host(100, WITH_MTP, 1_700_000_000);
    let after = host(200, WITHOUT_MTP, 1_700_090_000);
    let diff = compare_snapshots(&before, &after, &CompareOptions::default());
    assert_eq!(diff.launches.len(), 1, "{:#?}", diff.launches);
    let keys: Vec<&str> = diff
        .changes
        .iter()
        .map(|change| change.key.as_str())
        .collect();
    // `--tp 8` and `--tensor-parallel-size 8` are the same option; only two things changed.
    assert_eq!(
        keys,
        ["speculative.algorithm", "mem-fraction-static"],
        "{:#?}",
        diff.changes
    );
    assert!(is_meaningful(&diff));
    assert!(diff.volatile.iter().any(|change| change.key == "pid"));
}

#[test]
fn timeline_from_history_and_process() {
    let mut snapshot = host(200, WITHOUT_MTP, 1_700_090_000);
    snapshot.histories.push(HistoryFile {
        user: String::from("root"),
        path: String::from("/root/.bash_history"),
        mtime: Some(1_700_095_000),
        entries: vec![
            HistoryEntry {
                index: 0,
                time: None,
                command: format!("nohup {WITH_MTP} > sglang.log 2>&1 &"),
            },
            HistoryEntry {
                index: 1,
                time: None,
                command: String::from("nvidia-smi"),
            },
            HistoryEntry {
                index: 2,
                time: None,
                command: format!("nohup {WITHOUT_MTP} > sglang.log 2>&1 &"),
            },
        ],
        ..HistoryFile::default()
    });
    let timeline = timeline(&snapshot);
    let launches: Vec<(SourceKind, bool, bool)> = timeline
        .events
        .iter()
        .filter_map(|event| {
            let launch = timeline.launches.get(event.launch?)?;
            assert_eq!(launch.engine, Engine::Sglang);
            Some((launch.source.kind, event.running, event.previous))
        })
        .collect();
    // The last line runs what the process runs and nothing later restarts it: it is the
    // running run's command (also seen in), and the line before it ran before that process.
    assert_eq!(
        launches,
        [
            (SourceKind::History, false, true),
            (SourceKind::Process, true, false),
        ]
    );
    let running = timeline
        .launches
        .iter()
        .find(|launch| launch.source.running)
        .expect("a running launch");
    assert!(
        running
            .source
            .also_seen_in
            .iter()
            .any(|seen| seen == "history:/root/.bash_history#2"),
        "{:?}",
        running.source.also_seen_in
    );
    let earlier = timeline
        .launches
        .iter()
        .find(|launch| launch.source.location == "/root/.bash_history#0")
        .expect("the earlier line");
    assert_eq!(earlier.source.time.not_after, Some(1_700_090_000));
}
