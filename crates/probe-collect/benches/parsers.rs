//! Parser throughput on synthetic but realistic remote output, through the crate's public API
//! only. Reports numbers, asserts nothing about time (only that the parsers found what the
//! input holds, so a broken parser cannot post a fast number). Run with
//! `cargo bench -p probe-collect --bench parsers`.
//!
//! * `parse::logs::parse_text` on SGLang and vLLM server logs of 4 MiB and 64 MiB, built from
//!   the line formats of `shared/knowledge/serving-knowledge.md` §3 and §5 (decode and prefill
//!   batch lines of a hybrid model with speculative decoding, vLLM throughput and SpecDecoding
//!   lines, access-log noise, a start-up block);
//! * `frame::parse` + `frame::records` on 10 MB of framed script output;
//! * `parse::history::parse_entries` on 100,000 bash (`#<epoch>`) and zsh extended entries;
//! * `redact::Redactor::redact_text` on 1 MB of text with secrets in it, whole and per line.
#![expect(clippy::print_stdout, reason = "a benchmark prints its numbers")]

use std::hint::black_box;
use std::time::{Duration, Instant};

use probe_collect::frame;
use probe_collect::parse::{history, logs};
use probe_collect::redact::Redactor;
use probe_model::{LogSource, ShellKind};

const MIB: usize = 1 << 20;
const BOUNDARY: &str = "5f0c2a9e7d3b41c8a6e2f9d0b7c4a1e3";

/// Small deterministic generator (xorshift64*), so every run parses the same bytes.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
    fn f(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

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

/// Runs `f` `n` times; prints one table row with the throughput of the median run.
fn row<T>(
    what: &str,
    bytes: usize,
    items: Option<(usize, &str)>,
    n: usize,
    mut f: impl FnMut() -> T,
) -> T {
    let mut times = Vec::with_capacity(n);
    let mut last = None;
    for _ in 0..n {
        let t = Instant::now();
        let out = black_box(f());
        times.push(t.elapsed());
        last = Some(out);
    }
    let (med, p90, min, max) = summary(&times);
    let mbs = |d: Duration| bytes as f64 / 1e6 / d.as_secs_f64();
    let per = items.map_or(String::new(), |(count, unit)| {
        format!("  {:.0} {unit}/s", count as f64 / med.as_secs_f64())
    });
    println!(
        "{what:<44} {:>8.2} {:>3} {:>9.1} {:>9.1} {:>9.1} {:>9.1} {:>8.1}{per}",
        bytes as f64 / 1e6,
        n,
        med.as_secs_f64() * 1e3,
        p90.as_secs_f64() * 1e3,
        min.as_secs_f64() * 1e3,
        max.as_secs_f64() * 1e3,
        mbs(med),
    );
    last.expect("n > 0")
}

// ---------------------------------------------------------------------------------------------
// Synthetic inputs.

fn clock(t: u64) -> (u64, u64, u64, u64) {
    // Seconds since 2026-11-01 00:00:00 -> (day of November, hour, minute, second).
    let day = 1 + (t / 86_400) % 30;
    let s = t % 86_400;
    (day, s / 3600, (s / 60) % 60, s % 60)
}

/// An SGLang 0.5.x server log (hybrid GDN model, NEXTN speculative decoding, TP2).
fn sglang_log(target: usize, seed: u64) -> String {
    let mut r = Rng(seed);
    let mut s = String::with_capacity(target + 4096);
    s.push_str("[2026-11-01 00:00:00] server_args=ServerArgs(model_path='Qwen/Qwen3-Next-80B-A3B-Instruct-FP8', tokenizer_path='Qwen/Qwen3-Next-80B-A3B-Instruct-FP8', tokenizer_mode='auto', trust_remote_code=True, dtype='auto', kv_cache_dtype='auto', context_length=131072, host='0.0.0.0', port=30000, mem_fraction_static=0.8, chunked_prefill_size=8192, max_prefill_tokens=16384, tp_size=2, pp_size=1, dp_size=1, ep_size=1, decode_log_interval=40, attention_backend='fa3', speculative_algorithm='NEXTN', speculative_num_steps=3, speculative_eagle_topk=1, speculative_num_draft_tokens=4, mamba_ssm_dtype='float32', api_key=None)\n");
    s.push_str("[2026-11-01 00:01:35 TP0] Load weight end. elapsed=41.37 s, type=Qwen3NextForCausalLM, dtype=torch.bfloat16, avail mem=38.12 GB, mem usage=83.62 GB.\n");
    s.push_str("[2026-11-01 00:01:35 TP0] max_total_num_tokens=1286144, chunked_prefill_size=8192, max_prefill_tokens=16384, max_running_requests=48, context_len=131072, available_gpu_mem=12.40 GB\n");
    s.push_str("[2026-11-01 00:01:47] The server is fired up and ready to roll!\n");
    let mut t = 120u64;
    while s.len() < target {
        t += 1 + r.below(20);
        let (d, h, m, sec) = clock(t);
        let ts = format!("2026-11-{d:02} {h:02}:{m:02}:{sec:02}");
        match r.below(10) {
            0..=5 => {
                let running = 1 + r.below(48);
                let al = r.f(1.8, 3.6);
                s.push_str(&format!(
                    "[{ts} TP0] Decode batch, #running-req: {running}, #full token: {}, full token usage: {:.2}, mamba num: {}, mamba usage: {:.2}, accept len: {al:.2}, accept rate: {:.2}, cuda graph: True, gen throughput (token/s): {:.2}, #queue-req: {}\n",
                    r.below(200_000),
                    r.f(0.0, 0.9),
                    running * 4,
                    r.f(0.1, 0.95),
                    (al - 1.0) / 3.0,
                    r.f(200.0, 1800.0),
                    r.below(8)
                ));
            }
            6 => s.push_str(&format!(
                "[{ts} TP0] Prefill batch, #new-seq: {}, #new-token: {}, #cached-token: {}, full token usage: {:.2}, mamba usage: {:.2}, #running-req: {}, #queue-req: {}, input throughput (token/s): {:.2}, cuda graph: False\n",
                1 + r.below(4),
                r.below(8192),
                r.below(4096),
                r.f(0.0, 0.9),
                r.f(0.1, 0.95),
                r.below(48),
                r.below(8),
                r.f(500.0, 20_000.0)
            )),
            _ => s.push_str(&format!(
                "[{ts}] INFO:     127.0.0.1:{} - \"POST /v1/chat/completions HTTP/1.1\" 200 OK\n",
                30_000 + r.below(30_000)
            )),
        }
    }
    s
}

/// A vLLM 0.11 server log (V1 engine, MTP speculative decoding, process prefixes).
fn vllm_log(target: usize, seed: u64) -> String {
    let mut r = Rng(seed);
    let mut s = String::with_capacity(target + 4096);
    s.push_str("(APIServer pid=2231) INFO 11-01 00:00:03 [api_server.py:1815] vLLM API server version 0.11.0\n");
    s.push_str("(APIServer pid=2231) INFO 11-01 00:00:03 [utils.py:233] non-default args: {'model_tag': 'meta-llama/Llama-3.3-70B-Instruct', 'host': '0.0.0.0', 'model': 'meta-llama/Llama-3.3-70B-Instruct', 'max_model_len': 32768, 'tensor_parallel_size': 4, 'gpu_memory_utilization': 0.92, 'max_num_seqs': 256, 'speculative_config': {'method': 'eagle3', 'model': 'yuhuili/EAGLE3-LLaMA3.3-Instruct-70B', 'num_speculative_tokens': 3}}\n");
    let mut t = 60u64;
    while s.len() < target {
        t += 10;
        let (d, h, m, sec) = clock(t);
        let ts = format!("11-{d:02} {h:02}:{m:02}:{sec:02}");
        s.push_str(&format!(
            "(APIServer pid=2231) INFO {ts} [loggers.py:123] Engine 000: Avg prompt throughput: {:.1} tokens/s, Avg generation throughput: {:.1} tokens/s, Running: {} reqs, Waiting: {} reqs, GPU KV cache usage: {:.1}%, Prefix cache hit rate: {:.1}%\n",
            r.f(0.0, 5000.0),
            r.f(100.0, 3000.0),
            r.below(256),
            r.below(20),
            r.f(0.0, 99.0),
            r.f(0.0, 80.0)
        ));
        let accepted = r.below(2000);
        s.push_str(&format!(
            "(APIServer pid=2231) INFO {ts} [metrics.py:96] SpecDecoding metrics: Mean acceptance length: {:.2}, Accepted throughput: {:.2} tokens/s, Drafted throughput: {:.2} tokens/s, Accepted: {accepted} tokens, Drafted: {} tokens, Per-position acceptance rate: {:.3}, {:.3}, {:.3}, Avg Draft acceptance rate: {:.1}%\n",
            r.f(1.5, 3.5),
            r.f(50.0, 300.0),
            r.f(100.0, 400.0),
            accepted + r.below(1000),
            r.f(0.6, 0.9),
            r.f(0.4, 0.7),
            r.f(0.2, 0.5),
            r.f(30.0, 80.0)
        ));
        for _ in 0..r.below(6) {
            s.push_str(&format!(
                "(APIServer pid=2231) INFO:     10.0.3.{}:{} - \"POST /v1/completions HTTP/1.1\" 200 OK\n",
                1 + r.below(250),
                30_000 + r.below(30_000)
            ));
        }
    }
    s
}

const COMMANDS: &[&str] = &[
    "nvidia-smi",
    "cd /opt/sglang",
    "source /opt/venvs/sglang/bin/activate",
    "tail -f /root/sglang.log",
    "python3 -m sglang.launch_server --model-path Qwen/Qwen3-Next-80B-A3B-Instruct-FP8 --tp 2 --speculative-algorithm NEXTN --speculative-num-steps 3 --speculative-eagle-topk 1 --speculative-num-draft-tokens 4 --mem-fraction-static 0.8 --port 30000 > /root/sglang.log 2>&1 &",
    "vllm serve meta-llama/Llama-3.3-70B-Instruct --tensor-parallel-size 4 --max-model-len 32768 --gpu-memory-utilization 0.92",
    "pip list | grep -i -E 'vllm|torch|flashinfer'",
    "systemctl status vllm",
    "journalctl -u vllm -n 200 --no-pager",
    "curl -s localhost:30000/v1/models | jq .",
    "git -C /opt/sglang log --oneline -5",
    "htop",
    "docker ps --format '{{.Names}} {{.Image}}'",
    "export HF_TOKEN=hf_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789",
    "ls -la /mnt/models",
];

/// `n` bash history entries with `#<epoch>` lines; every 50th entry spans two lines.
fn bash_history(n: usize) -> Vec<u8> {
    let mut r = Rng(7);
    let mut s = String::new();
    let mut t = 1_760_000_000u64;
    for i in 0..n {
        t += 1 + r.below(600);
        let cmd = COMMANDS[r.below(COMMANDS.len() as u64) as usize];
        if i % 50 == 0 {
            s.push_str(&format!("#{t}\nfor g in 0 1; do\n  {cmd}; done\n"));
        } else {
            s.push_str(&format!("#{t}\n{cmd}\n"));
        }
    }
    s.into_bytes()
}

/// `n` zsh extended-history entries (`: <epoch>:<duration>;cmd`).
fn zsh_history(n: usize) -> Vec<u8> {
    let mut r = Rng(11);
    let mut s = String::new();
    let mut t = 1_760_000_000u64;
    for _ in 0..n {
        t += 1 + r.below(600);
        let cmd = COMMANDS[r.below(COMMANDS.len() as u64) as usize];
        s.push_str(&format!(": {t}:{};{cmd}\n", r.below(30)));
    }
    s.into_bytes()
}

/// 10 MB of framed script output: 20 sections, each a few file records of history and log
/// text, with stderr and rc trailers, then DONE.
fn framed_output(target: usize) -> Vec<u8> {
    let b = BOUNDARY;
    let per_section = target / 20;
    let hist = bash_history(4000);
    let log = sglang_log(per_section, 3);
    let mut out = Vec::with_capacity(target + 65_536);
    let mut i = 0;
    while out.len() < target {
        let name = format!("section{i:02}");
        out.extend_from_slice(format!("\n{b} BEGIN {name}\n").as_bytes());
        let start = out.len();
        let mut f = 0;
        while out.len() - start < per_section {
            let data: &[u8] = if f % 2 == 0 { &hist } else { log.as_bytes() };
            let take = data.len().min(per_section / 3);
            out.extend_from_slice(
                format!(
                    "\n{b} F ok hist 1762000000 {} /home/user{f}/.bash_history\n",
                    data.len()
                )
                .as_bytes(),
            );
            out.extend_from_slice(data.get(..take).unwrap_or(data));
            f += 1;
        }
        out.extend_from_slice(
            format!(
                "\n{b} ERR {name}\nsh: 1: zcat: not found\n{b} rc 0\n\n{b} END {name} 1200 1234\n"
            )
            .as_bytes(),
        );
        i += 1;
    }
    out.extend_from_slice(format!("\n{b} DONE\n").as_bytes());
    out
}

const TEXT_LINES: &[&str] = &[
    "Environment=HF_TOKEN=hf_qWeRtYuIoPaSdFgHjKlZxCvBnM0123456789",
    "ExecStart=/opt/venvs/vllm/bin/vllm serve meta-llama/Llama-3.3-70B-Instruct --api-key sk-live-8f3a9c2e7b1d4f60 --port 8000",
    "curl -H 'Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.c2lnbmF0dXJl' https://api.internal/v1/models",
    "git clone https://deploy:glpat-Zx8vQ2mN7pL4kR9tY1wE@gitlab.example.com/ml/serving.git",
    "export WANDB_API_KEY=0123456789abcdef0123456789abcdef01234567",
    "[2026-11-04 10:14:35 TP0] Decode batch, #running-req: 48, #full token: 76543, full token usage: 0.09, mamba num: 192, mamba usage: 0.70, cuda graph: True, gen throughput (token/s): 1039.90, #queue-req: 3",
    "INFO 11-01 10:00:00 [loggers.py:336] Engine 000: Avg prompt throughput: 512.3 tokens/s, Avg generation throughput: 1830.5 tokens/s, Running: 24 reqs, Waiting: 0 reqs, GPU KV cache usage: 12.5%",
    "python3 -m sglang.launch_server --model-path /mnt/models/Qwen3-Next --tp 2 --port 30000 --host 0.0.0.0",
    "cd /opt/sglang && git pull && pip install -e 'python[all]'",
    "MAX_JOBS=8 pip install flash-attn --no-build-isolation",
    "nvidia-smi --query-gpu=index,name,memory.used --format=csv",
    "PASSWORD=changeme ./deploy.sh staging",
];

/// About `target` bytes of mixed lines, a third of them holding a secret.
fn secret_text(target: usize) -> String {
    let mut r = Rng(13);
    let mut s = String::with_capacity(target + 256);
    while s.len() < target {
        s.push_str(TEXT_LINES[r.below(TEXT_LINES.len() as u64) as usize]);
        s.push('\n');
    }
    s
}

// ---------------------------------------------------------------------------------------------

fn main() {
    println!("probe-collect parser benchmark (release, public API only)");
    println!(
        "machine: {} CPUs, load average at start {}",
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        load_average()
    );
    println!();
    println!(
        "{:<44} {:>8} {:>3} {:>9} {:>9} {:>9} {:>9} {:>8}",
        "what", "MB", "n", "med ms", "p90 ms", "min ms", "max ms", "MB/s"
    );

    // Logs.
    let reference = Some(1_764_460_800); // 2025-11-30, near the end of the synthetic logs
    for (engine, make) in [
        ("SGLang", sglang_log as fn(usize, u64) -> String),
        ("vLLM", vllm_log as fn(usize, u64) -> String),
    ] {
        for (size, n) in [(4 * MIB, 5), (64 * MIB, 3)] {
            let text = make(size, 42);
            let lines = text.lines().count();
            let src = row(
                &format!("log metrics, {engine} {} MiB", size / MIB),
                text.len(),
                Some((lines, "lines")),
                n,
                || {
                    let mut src = LogSource::default();
                    logs::parse_text(&text, reference, 0, &mut src);
                    src
                },
            );
            let samples: usize = src.metrics.iter().map(|m| m.summary.count as usize).sum();
            assert!(
                samples > lines / 4 && !src.startups.is_empty(),
                "{engine}: the parser found {samples} samples and {} start-ups in {lines} lines",
                src.startups.len()
            );
            println!(
                "{:<44} {} series, {samples} samples, {} start-up record(s)",
                "",
                src.metrics.len(),
                src.startups.len()
            );
        }
    }

    // Framing.
    let framed = framed_output(10_000_000);
    let (sections, recs) = row(
        "framing: frame::parse + records, 10 MB",
        framed.len(),
        None,
        5,
        || {
            let f = frame::parse(&framed, BOUNDARY);
            let recs: usize = f
                .sections
                .iter()
                .map(|s| frame::records(&s.body, BOUNDARY).len())
                .sum();
            (f.sections.len(), recs)
        },
    );
    let only_parse = row(
        "framing: frame::parse only, 10 MB",
        framed.len(),
        None,
        5,
        || frame::parse(&framed, BOUNDARY),
    );
    assert!(only_parse.done && sections >= 20 && recs > sections);
    println!("{:<44} {sections} sections, {recs} file records", "");

    // History.
    let n = 100_000;
    let bash = bash_history(n);
    let entries = row(
        "history: bash #epoch, 100k entries",
        bash.len(),
        Some((n, "entries")),
        5,
        || history::parse_entries(ShellKind::Bash, &bash, false),
    );
    // Every entry is parsed; the newest MAX_ENTRIES are kept (a bounded snapshot).
    assert_eq!(entries.len(), n.min(history::MAX_ENTRIES), "bash entries");
    println!(
        "{:<44} {n} entries parsed, newest {} kept (history::MAX_ENTRIES)",
        "",
        entries.len()
    );
    let zsh = zsh_history(n);
    let entries = row(
        "history: zsh extended, 100k entries",
        zsh.len(),
        Some((n, "entries")),
        5,
        || history::parse_entries(ShellKind::Zsh, &zsh, false),
    );
    // Every entry is parsed; the newest MAX_ENTRIES are kept (a bounded snapshot).
    assert_eq!(entries.len(), n.min(history::MAX_ENTRIES), "zsh entries");
    println!(
        "{:<44} {n} entries parsed, newest {} kept (history::MAX_ENTRIES)",
        "",
        entries.len()
    );

    // Redaction.
    let text = secret_text(MIB);
    let r = Redactor::builtin();
    let lines = text.lines().count();
    let whole = row(
        "redaction: redact_text, 1 MiB at once",
        text.len(),
        None,
        5,
        || r.redact_text(&text).into_owned(),
    );
    let markers = whole.matches("<redacted:").count();
    assert!(
        markers > lines / 4,
        "only {markers} secrets redacted in {lines} lines"
    );
    let per_line = row(
        "redaction: redact_text per line, 1 MiB",
        text.len(),
        Some((lines, "lines")),
        5,
        || text.lines().map(|l| r.redact_text(l).len()).sum::<usize>(),
    );
    println!(
        "{:<44} {lines} lines, {markers} values redacted, {:.1} MB out per line",
        "",
        per_line as f64 / 1e6
    );
    println!();
    println!("load average at end: {}", load_average());
}
