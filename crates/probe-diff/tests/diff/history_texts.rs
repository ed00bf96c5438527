//! Shell histories as people type them: a command assembled in a variable in one entry and run
//! in a later one; the same launch repeated (one run with a count when nothing came between,
//! separate runs when another launch did); host changes placed by their timestamps.

use probe_diff::analyze;
use probe_model::{HistoryEntry, HistoryFile, Snapshot, SourceKind, TimelineEventKind};

const T0: i64 = 1_795_000_000;

fn history(lines: &[&str]) -> Snapshot {
    Snapshot {
        histories: vec![HistoryFile {
            path: "/root/.bash_history".into(),
            entries: lines
                .iter()
                .enumerate()
                .map(|(i, command)| HistoryEntry {
                    index: i as u32,
                    time: Some(T0 + 600 * i as i64),
                    command: (*command).into(),
                })
                .collect(),
            ..HistoryFile::default()
        }],
        ..Snapshot::default()
    }
}

#[test]
fn a_variable_typed_earlier_is_run_later() {
    let snapshot = history(&[
        "MODEL=/models/Qwen2.5-7B",
        "CMD=\"python -m sglang.launch_server --model-path $MODEL --tp 2 --port 30000\"",
        "nvidia-smi",
        "eval \"$CMD\"",
        "nohup $CMD > sg.log 2>&1 &",
        "CMD=$(cat /etc/unknown)",
        "eval \"$CMD\"",
    ]);
    let analysis = analyze(&snapshot);
    let from_history: Vec<_> = analysis
        .launches
        .iter()
        .filter(|l| l.source.kind == SourceKind::History)
        .collect();
    assert!(!from_history.is_empty(), "{:#?}", analysis.launches);
    for l in &from_history {
        assert_eq!(l.model.as_deref(), Some("/models/Qwen2.5-7B"), "{l:#?}");
        assert_eq!(
            l.options.get("port").map(|o| o.value.clone()),
            Some(serde_json::json!(30000))
        );
    }
    // The eval and the nohup line are the same configuration typed twice: one event, 2 runs of it.
    let launches: Vec<_> = analysis
        .timeline
        .events
        .iter()
        .filter(|e| e.kind == TimelineEventKind::Launch)
        .collect();
    assert_eq!(launches.len(), 1, "{launches:#?}");
    assert_eq!(launches.first().map(|e| e.repeats), Some(2));
    // A value the text cannot know is not carried on: the last eval is no launch.
    assert!(
        from_history
            .iter()
            .all(|l| l.source.time.at != Some(T0 + 600 * 6)),
        "{from_history:#?}"
    );
}

#[test]
fn repeats_collapse_only_when_no_other_launch_came_between() {
    let a = "vllm serve /m --port 8000 --max-model-len 8192";
    let b = "vllm serve /m --port 8000 --max-model-len 4096";
    let snapshot = history(&[a, "curl localhost:8000/health", a, a, b, a]);
    let analysis = analyze(&snapshot);
    let events: Vec<(u32, String)> = analysis
        .timeline
        .events
        .iter()
        .filter(|e| e.kind == TimelineEventKind::Launch)
        .map(|e| (e.repeats, e.summary.clone()))
        .collect();
    // a x3 (curl between does not count), then b, then a again: three runs, not two.
    assert_eq!(
        events.iter().map(|(r, _)| *r).collect::<Vec<_>>(),
        vec![3, 1, 1],
        "{events:#?}"
    );
    let first = events.first().map(|(_, s)| s.as_str()).unwrap_or_default();
    assert!(first.contains("[run 3 times"), "{first}");
    let counts: Vec<u32> = analysis.runs.iter().map(|r| r.launches).collect();
    assert_eq!(counts, vec![3, 1, 1], "{:#?}", analysis.runs);
}

#[test]
fn host_changes_are_placed_by_their_timestamps() {
    let snapshot = history(&[
        "uv pip install vllm==0.10.1.1",
        "sudo systemctl daemon-reload",
        "vllm serve /m --port 8000",
        "conda install -y -c conda-forge nccl",
        "sudo apt-get install -y nvidia-driver-570",
        "docker pull vllm/vllm-openai:v0.11.0",
        "docker compose up -d",
        "sudo systemctl restart vllm",
    ]);
    let analysis = analyze(&snapshot);
    let events: Vec<(i64, String)> = analysis
        .timeline
        .events
        .iter()
        .filter_map(|e| e.time.at.map(|t| (t, e.summary.clone())))
        .collect();
    let position = |needle: &str| {
        events
            .iter()
            .position(|(_, s)| s.contains(needle))
            .unwrap_or_else(|| panic!("{needle} not in {events:#?}"))
    };
    let order = [
        "pip install vllm==0.10.1.1",
        "systemctl daemon-reload",
        "vllm /m",
        "conda install",
        "apt-get install",
        "docker pull",
        "docker-compose up -d",
        "systemctl restart vllm",
    ]
    .map(position);
    assert!(
        order.windows(2).all(|w| w[0] < w[1]),
        "{order:?} {events:#?}"
    );
    for (i, needle) in ["pip install vllm", "daemon-reload"].iter().enumerate() {
        let at = events.get(position(needle)).map(|(t, _)| *t);
        assert_eq!(at, Some(T0 + 600 * i as i64));
    }
}

/// A loop typed on one line starts one server per item (with the variables an earlier entry
/// fixed); a launch after a test and `&&` is noted with its condition.
#[test]
fn a_loop_typed_in_history_starts_one_server_per_item() {
    let snapshot = history(&[
        "MODEL=/models/m",
        "for i in 0 1; do CUDA_VISIBLE_DEVICES=$i vllm serve $MODEL --port 800$i & done",
        "[ -n \"$BIG\" ] && vllm serve $MODEL --tensor-parallel-size 8 --port 8100",
    ]);
    let analysis = analyze(&snapshot);
    let shown: Vec<String> = analysis
        .launches
        .iter()
        .filter(|l| l.source.kind == SourceKind::History)
        .map(|l| {
            let port = l.options.get("port").map(|o| o.value.to_string());
            let gpus = l.env.get("CUDA_VISIBLE_DEVICES").cloned();
            let notes: Vec<&String> = l
                .warnings
                .iter()
                .filter(|w| w.starts_with("when "))
                .collect();
            format!("{:?} {port:?} {gpus:?} {notes:?}", l.model)
        })
        .collect();
    assert_eq!(
        shown,
        vec![
            "Some(\"/models/m\") Some(\"8000\") Some(\"0\") []",
            "Some(\"/models/m\") Some(\"8001\") Some(\"1\") []",
            "Some(\"/models/m\") Some(\"8100\") None [\"when -n $BIG\"]",
        ],
        "{:#?}",
        analysis.launches
    );
}
