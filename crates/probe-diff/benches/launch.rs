//! Diff-engine benchmark: launch reconstruction over the launch corpora, and launches /
//! timeline / snapshot comparison on a big snapshot. Reports numbers, asserts nothing about
//! time. Run with `cargo bench -p probe-diff --bench launch`.
//!
//! * `launch::reconstruct` over every text of `shared/corpus/launch-public.jsonl` (found like
//!   `probe-launch/tests/launch/corpus.rs` does, or `$PROBE_CORPUS`) and `probe-launch/tests/data/launch-extra.jsonl`;
//! * `launch::launches_of`, `timeline` and `compare_snapshots` on a hand-built big snapshot
//!   (5,000 history entries, 20 units with drop-ins, 50 processes, 10 start-up log records,
//!   a Python environment) against a changed copy of it;
//! * the same on every `*.json` snapshot in `$PROBE_BENCH_SNAPSHOTS` (the fleet bench of
//!   probe-cli exports one per fixture host there), each against itself.
#![expect(clippy::print_stdout, reason = "a benchmark prints its numbers")]

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use probe_diff::{CompareOptions, compare_snapshots, timeline};
use probe_launch::{ParseHints, launches_of, reconstruct};
use probe_model::Snapshot;
use serde_json::{Value, json};

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .unwrap_or_default()
        .split_whitespace()
        .take(3)
        .collect::<Vec<_>>()
        .join(" ")
}

/// (median, p90, min, max), nearest-rank.
fn summary(v: &[Duration]) -> (Duration, Duration, Duration, Duration) {
    let mut v = v.to_vec();
    v.sort();
    let at = |q: f64| {
        let i = ((v.len() as f64 - 1.0) * q).round() as usize;
        v.get(i).copied().unwrap_or_default()
    };
    (
        at(0.5),
        at(0.9),
        v.first().copied().unwrap_or_default(),
        v.last().copied().unwrap_or_default(),
    )
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// Runs `f` `n` times, prints a row (per-item rate from the median when `items` is given).
fn row<T>(what: &str, n: usize, items: Option<(usize, &str)>, mut f: impl FnMut() -> T) -> T {
    let mut times = Vec::with_capacity(n);
    let mut last = None;
    for _ in 0..n {
        let t = Instant::now();
        let out = black_box(f());
        times.push(t.elapsed());
        last = Some(out);
    }
    let (med, p90, min, max) = summary(&times);
    let rate = items.map_or(String::new(), |(count, unit)| {
        format!("{:.0} {unit}/s", count as f64 / med.as_secs_f64())
    });
    println!(
        "{what:<52} {n:>3} {:>9.2} {:>9.2} {:>9.2} {:>9.2}  {rate}",
        ms(med),
        ms(p90),
        ms(min),
        ms(max)
    );
    last.expect("n > 0")
}

#[path = "../../probe-launch/tests/launch/corpus_file/mod.rs"]
mod corpus_file;

fn texts(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter_map(|v| v.get("text").and_then(Value::as_str).map(str::to_string))
        .collect()
}

// ---------------------------------------------------------------------------------------------
// The big snapshot.

const T0: i64 = 1_762_000_000;

fn sglang_argv(tp: u32, steps: u32, mem: f64, port: u32) -> Vec<String> {
    format!(
        "/opt/venvs/sglang/bin/python3 -m sglang.launch_server --model-path /mnt/models/Qwen3-Next-80B-A3B-Instruct-FP8 --tp {tp} --speculative-algorithm NEXTN --speculative-num-steps {steps} --speculative-eagle-topk 1 --speculative-num-draft-tokens {} --mem-fraction-static {mem} --max-running-requests 48 --mamba-ssm-dtype float32 --host 0.0.0.0 --port {port}",
        steps + 1
    )
    .split(' ')
    .map(str::to_string)
    .collect()
}

/// `changed`: the "after" side: other flags on half the launchers and units, newer packages,
/// more history.
fn big_snapshot(changed: bool) -> Snapshot {
    let c = u32::from(changed);
    let mut processes = Vec::new();
    for i in 0..10u32 {
        let pid = 1000 + i * 10;
        let steps = if changed && i % 2 == 0 { 4 } else { 3 };
        processes.push(json!({
            "pid": pid, "ppid": 1, "uid": 0, "user": "root",
            "argv": sglang_argv(2, steps, 0.8 + 0.02 * f64::from(c), 30000 + i),
            "comm": "python3", "exe": "/opt/venvs/sglang/bin/python3.11", "cwd": "/root",
            "start_time": T0 + i64::from(i) * 3600,
            "env": {"CUDA_VISIBLE_DEVICES": "0,1", "SGLANG_LOG_MS": "1", "HF_TOKEN": "<redacted:1a2b3c4d>"},
            "role": "launcher", "engine": "sglang"
        }));
        for w in 0..4u32 {
            processes.push(json!({
                "pid": pid + 1 + w, "ppid": pid, "uid": 0, "user": "root",
                "argv": [format!("sglang::scheduler_TP{w}")], "comm": "python3",
                "start_time": T0 + i64::from(i) * 3600 + 5,
                "role": "worker", "engine": "sglang", "launcher_pid": pid
            }));
        }
    }
    let mut units = Vec::new();
    for i in 0..20u32 {
        let tp = if changed && i % 2 == 1 { 8 } else { 4 };
        let exec = format!(
            "/opt/venvs/vllm/bin/vllm serve meta-llama/Llama-3.3-70B-Instruct --tensor-parallel-size {tp} --max-model-len 32768 --gpu-memory-utilization 0.92 --max-num-seqs 256 --port {} --speculative-config '{{\"method\": \"eagle3\", \"model\": \"yuhuili/EAGLE3-LLaMA3.3-Instruct-70B\", \"num_speculative_tokens\": 3}}'",
            8000 + i
        );
        units.push(json!({
            "name": format!("vllm-{i:02}.service"), "scope": "system",
            "fragment": {
                "path": format!("/etc/systemd/system/vllm-{i:02}.service"), "mtime": T0 - 86_400,
                "content": format!("[Unit]\nDescription=vLLM {i}\n\n[Service]\nUser=vllm\nWorkingDirectory=/srv/vllm\nEnvironment=VLLM_USE_V1=1\nEnvironmentFile=-/etc/default/vllm\nExecStart={exec}\nRestart=always\n\n[Install]\nWantedBy=multi-user.target\n")
            },
            "drop_ins": [{
                "path": format!("/etc/systemd/system/vllm-{i:02}.service.d/override.conf"),
                "mtime": T0 - 3600,
                "content": format!("[Service]\nExecStart=\nExecStart={exec} --enable-prefix-caching\nEnvironment=VLLM_ATTENTION_BACKEND=FLASHINFER\n")
            }],
            "exec_start": [format!("{exec} --enable-prefix-caching")],
            "environment": {"VLLM_USE_V1": "1", "VLLM_ATTENTION_BACKEND": "FLASHINFER"},
            "environment_files": [{"path": "/etc/default/vllm", "optional": true, "vars": {"HF_HOME": "/srv/hf"}, "status": "ok"}],
            "working_directory": "/srv/vllm", "run_as": "vllm",
            "state": {"active_state": "active", "sub_state": "running", "main_pid": 5000 + i,
                      "exec_main_start": T0 + 600, "n_restarts": 0, "need_daemon_reload": false}
        }));
    }
    // 5,000 history entries over 5 users; about one in five is a launch.
    let mut histories = Vec::new();
    let plain = [
        "nvidia-smi",
        "cd /opt/sglang && git pull",
        "tail -f /root/sglang.log",
        "pip list | grep -E 'vllm|torch'",
        "journalctl -u vllm-00 -n 100",
        "curl -s localhost:30000/v1/models",
        "htop",
    ];
    let entries_per_user = 1000 + 20 * c as usize;
    for u in 0..5usize {
        let mut entries = Vec::new();
        for k in 0..entries_per_user {
            let command = if k % 5 == 0 {
                format!(
                    "python3 -m sglang.launch_server --model-path /mnt/models/Qwen3-Next-80B-A3B-Instruct-FP8 --tp {} --speculative-algorithm NEXTN --speculative-num-steps {} --port 3000{} > /root/sglang.log 2>&1 &",
                    1 << (k % 3),
                    1 + k % 4,
                    u
                )
            } else if k % 7 == 0 {
                format!(
                    "vllm serve meta-llama/Llama-3.3-70B-Instruct --tensor-parallel-size {} --max-model-len {}",
                    1 << (k % 4),
                    8192 << (k % 3)
                )
            } else {
                plain[k % plain.len()].to_string()
            };
            entries.push(
                json!({"index": k, "time": T0 - 864_000 + (k as i64) * 120, "command": command}),
            );
        }
        histories.push(json!({
            "user": format!("user{u}"), "path": format!("/home/user{u}/.bash_history"),
            "shell": "bash", "mtime": T0, "size": 120_000, "truncated": false, "entries": entries
        }));
    }
    let startup = |i: u32| {
        format!(
            "ServerArgs(model_path='/mnt/models/Qwen3-Next-80B-A3B-Instruct-FP8', tp_size=2, dp_size=1, mem_fraction_static={}, context_length=131072, chunked_prefill_size=8192, speculative_algorithm='NEXTN', speculative_num_steps={}, speculative_eagle_topk=1, speculative_num_draft_tokens=4, port={}, attention_backend='fa3', mamba_ssm_dtype='float32')",
            0.8 + 0.02 * f64::from(c),
            3 + c,
            30000 + i
        )
    };
    let logs: Vec<Value> = (0..10u32)
        .map(|i| {
            json!({
                "origin": "file", "location": format!("/root/sglang-{i}.log"), "mtime": T0,
                "bytes_read": 1_000_000, "status": "ok",
                "startups": [{"time": T0 + i64::from(i) * 3600, "engine": "sglang", "text": startup(i), "version": "0.5.9"}]
            })
        })
        .collect();
    let pkgs = |v: &str| {
        json!([
            {"name": "sglang", "version": v, "installed_at": T0 - 86_400},
            {"name": "torch", "version": "2.9.1+cu128", "installed_at": T0 - 86_400},
            {"name": "flashinfer-python", "version": "0.5.3", "installed_at": T0 - 86_400},
            {"name": "transformers", "version": "4.57.1", "installed_at": T0 - 86_400},
        ])
    };
    let doc = json!({
        "schema_version": probe_model::SCHEMA_VERSION,
        "id": format!("bench-{c}"), "target": "bench", "collected_at": T0 + 86_400 * i64::from(c),
        "host": {"hostname": "gpu-bench-01", "machine_id": "0123456789abcdef0123456789abcdef"},
        "processes": processes, "units": units, "histories": histories, "logs": logs,
        "python_envs": [{
            "interpreter": "/opt/venvs/sglang/bin/python3", "prefix": "/opt/venvs/sglang",
            "python_version": "3.11.2", "used_by": ["pid:1000"],
            "packages": pkgs(if changed { "0.5.10" } else { "0.5.9" })
        }]
    });
    serde_json::from_value(doc).expect("the bench snapshot matches probe_model::Snapshot")
}

/// A host whose root history holds `lines` timestamped launch lines (four configurations, each
/// run many times; one in four a different `--mem-fraction-static`), a running launcher and its
/// log: the analysis cost per launch line.
fn history_snapshot(lines: usize) -> Snapshot {
    let entries: Vec<Value> = (0..lines)
        .map(|i| {
            let mem = ["0.80", "0.85", "0.88", "0.90"][i / 50 % 4];
            json!({
                "index": i, "time": T0 + 60 * i as i64,
                "command": format!(
                    "nohup /opt/venvs/sglang/bin/python3 -m sglang.launch_server --model-path /m \
                     --tp 2 --mem-fraction-static {mem} --port 30000 > /root/s.log 2>&1 &"
                )
            })
        })
        .collect();
    let points: Vec<Value> = (0..2_000)
        .map(|i| json!([T0 + 30 * i64::from(i), 900.0 + f64::from(i % 200)]))
        .collect();
    let doc = json!({
        "schema_version": probe_model::SCHEMA_VERSION, "id": "bench-history", "target": "bench",
        "collected_at": T0 + 60 * lines as i64 + 600,
        "host": {"hostname": "gpu-bench-02"},
        "histories": [{"user": "root", "path": "/root/.bash_history", "shell": "bash", "entries": entries}],
        "processes": [{
            "pid": 4000, "role": "launcher", "engine": "sglang", "start_time": T0 + 60 * lines as i64 + 60,
            "argv": ["/opt/venvs/sglang/bin/python3", "-m", "sglang.launch_server", "--model-path", "/m",
                     "--tp", "2", "--mem-fraction-static", "0.85", "--port", "30000"]
        }],
        "logs": [{"origin": "file", "location": "/root/s.log", "metrics": [
            {"name": "gen_throughput", "unit": "tok/s", "points": points}
        ]}],
    });
    serde_json::from_value(doc).expect("the bench snapshot matches probe_model::Snapshot")
}

fn analysis_rows() {
    for lines in [2_000, 10_000] {
        let snapshot = history_snapshot(lines);
        let analysis = row(
            &format!("analyze (launches, timeline, runs), {lines} launch lines"),
            3,
            Some((lines, "lines")),
            || probe_diff::analyze(&snapshot),
        );
        let diff = row(
            &format!("previous_launch_diff, {lines} launch lines"),
            3,
            None,
            || probe_diff::previous_launch_diff(&snapshot, &analysis),
        );
        println!(
            "{:<52}   {} timeline launches, {} runs, diff {}",
            "",
            analysis.timeline.launches.len(),
            analysis.runs.len(),
            if diff.is_some() { "built" } else { "none" }
        );
    }
}

fn snapshot_row(label: &str, before: &Snapshot, after: &Snapshot, n: usize) {
    let launches = row(&format!("launches_of, {label}"), n, None, || {
        launches_of(after)
    });
    let tl = row(&format!("timeline, {label}"), n, None, || timeline(after));
    let diff = row(&format!("compare_snapshots, {label}"), n, None, || {
        compare_snapshots(before, after, &CompareOptions::default())
    });
    let diff_json = serde_json::to_string(&diff).map_or(0, |s| s.len());
    let tl_json = serde_json::to_string(&tl).map_or(0, |s| s.len());
    println!(
        "{:<52}   {} launches; timeline {:.1} KiB JSON; diff {:.1} KiB JSON",
        "",
        launches.len(),
        tl_json as f64 / 1024.0,
        diff_json as f64 / 1024.0
    );
}

/// One block of a launch script with every construct the reader follows: a function with
/// positional parameters, `if`/`elif`/`else` on `$1`, `case`, a literal loop that starts
/// servers, a `&&` chain, `eval` of a built command, and a pasted, repaired line.
fn script_block(i: usize) -> String {
    format!(
        r#"serve_{i}() {{
  MODEL=${{1:-Qwen/Qwen3-8B}}
  vllm serve "$MODEL" --port "$2" --max-model-len 32768 --gpu-memory-utilization 0.9
}}
if [ "$1" = "-d" ]; then
  cmd="python -m sglang.launch_server --model-path /models/m{i} --tp 2 --port 30{i:03}"
elif [ "$1" = "-b" ]; then
  cmd="vllm serve /models/m{i} --tensor-parallel-size 4"
else
  cmd="nohup vllm serve /models/m{i} > /var/log/v{i}.log 2>&1 &"
fi
case "$MODE" in
  fast) EXTRA="--enable-prefix-caching" ;;
  *) EXTRA="" ;;
esac
for g in 0 1; do CUDA_VISIBLE_DEVICES=$g vllm serve /models/m{i} --port 80$g $EXTRA & done
test -d /models/m{i} && serve_{i} /models/m{i} 90{i:02}
eval $cmd
vllm serve /models/m{i} —tp 2 --max-num-seqs 64
"#
    )
}

/// Reading time against text size: the same constructs repeated to 4 KiB .. 1 MiB. Linear
/// reading keeps the time per KiB flat across the rows.
fn size_series(hints: &ParseHints) {
    println!();
    println!(
        "{:<52} {:>9} {:>9} {:>10} {:>9}",
        "reconstruct, script of size", "KiB", "med ms", "launches", "µs/KiB"
    );
    let one = script_block(0).len();
    let mut first = None;
    for kib in [4usize, 16, 64, 256, 1024] {
        let blocks = (kib * 1024 / one).max(1);
        let text: String = (0..blocks).map(script_block).collect();
        let mut times: Vec<Duration> = Vec::new();
        let mut launches = 0;
        for _ in 0..5 {
            let t = Instant::now();
            launches = black_box(reconstruct(&text, hints)).len();
            times.push(t.elapsed());
        }
        let (med, ..) = summary(&times);
        let size = text.len() as f64 / 1024.0;
        let per = med.as_secs_f64() * 1e6 / size;
        let base = *first.get_or_insert(per);
        println!(
            "{:<52} {:>9.0} {:>9.2} {:>10} {:>9.1}  ({:.2}x the 4 KiB row)",
            "",
            size,
            ms(med),
            launches,
            per,
            per / base
        );
    }
}

fn main() {
    println!("probe-diff launch benchmark (release)");
    println!(
        "machine: {} CPUs, load average at start {}",
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        load_average()
    );
    println!();
    println!(
        "{:<52} {:>3} {:>9} {:>9} {:>9} {:>9}  rate",
        "what", "n", "med ms", "p90 ms", "min ms", "max ms"
    );

    let extra =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../probe-launch/tests/data/launch-extra.jsonl");
    let mut corpora: Vec<(String, Vec<String>)> = Vec::new();
    corpora.push((
        "launch-public.jsonl".into(),
        texts(&corpus_file::public_corpus()),
    ));
    corpora.push(("launch-extra.jsonl".into(), texts(&extra)));
    let all: Vec<String> = corpora.iter().flat_map(|(_, t)| t.clone()).collect();
    corpora.push(("both corpora".into(), all));
    let hints = ParseHints::default();
    for (name, texts) in &corpora {
        let bytes: usize = texts.iter().map(String::len).sum();
        let found = row(
            &format!(
                "reconstruct, {name} ({} texts, {:.0} KiB)",
                texts.len(),
                bytes as f64 / 1024.0
            ),
            20,
            Some((texts.len(), "texts")),
            || {
                texts
                    .iter()
                    .map(|t| reconstruct(t, &hints).len())
                    .sum::<usize>()
            },
        );
        assert!(found >= texts.len() / 2, "{name}: only {found} launches");
    }
    // The slowest single text of both corpora (median of 5 each).
    if let Some((_, all)) = corpora.last() {
        let mut worst = (Duration::ZERO, 0usize);
        for (i, t) in all.iter().enumerate() {
            let mut v: Vec<Duration> = (0..5)
                .map(|_| {
                    let s = Instant::now();
                    black_box(reconstruct(t, &hints));
                    s.elapsed()
                })
                .collect();
            v.sort();
            if let Some(&m) = v.get(2)
                && m > worst.0
            {
                worst = (m, i);
            }
        }
        println!(
            "{:<52}   slowest text: {:.3} ms ({} bytes)",
            "",
            ms(worst.0),
            all.get(worst.1).map_or(0, String::len)
        );
    }

    size_series(&hints);

    println!();
    let before = big_snapshot(false);
    let after = big_snapshot(true);
    let entries: usize = after.histories.iter().map(|h| h.entries.len()).sum();
    println!(
        "big snapshot: {entries} history entries, {} units, {} processes, {} start-up records; {:.1} KiB JSON",
        after.units.len(),
        after.processes.len(),
        after.logs.iter().map(|l| l.startups.len()).sum::<usize>(),
        serde_json::to_string(&after).map_or(0, |s| s.len()) as f64 / 1024.0
    );
    snapshot_row("big snapshot", &before, &after, 10);
    analysis_rows();

    if let Some(dir) = std::env::var_os("PROBE_BENCH_SNAPSHOTS") {
        let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
            .map(|d| d.flatten().map(|e| e.path()).collect())
            .unwrap_or_default();
        files.retain(|p| p.extension().is_some_and(|e| e == "json"));
        files.sort();
        for f in files {
            let Ok(text) = std::fs::read_to_string(&f) else {
                continue;
            };
            let Ok(s) = serde_json::from_str::<Snapshot>(&text) else {
                println!("{}: not a snapshot", f.display());
                continue;
            };
            let name = f
                .file_stem()
                .map_or(String::new(), |n| n.to_string_lossy().into_owned());
            println!(
                "collected snapshot {name}: {} history entries, {} units, {} processes; {:.1} KiB JSON",
                s.histories.iter().map(|h| h.entries.len()).sum::<usize>(),
                s.units.len(),
                s.processes.len(),
                text.len() as f64 / 1024.0
            );
            snapshot_row(&name, &s, &s, 10);
        }
    }
    println!();
    println!("load average at end: {}", load_average());
}
