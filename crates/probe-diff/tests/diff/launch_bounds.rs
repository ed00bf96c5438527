//! Texts that once made `reconstruct` run for minutes and take gigabytes (found by
//! `pasted_texts_never_panic` and by hand), shrunk: each with the launches still found and
//! whether the reading's work budget cut it. The work is a deterministic count (bytes walked,
//! expanded and copied), never a time; it stays linear in the size of the text.

use probe_diff::analyze;
use probe_launch::{ParseHints, Work, reconstruct_measured};
use probe_model::{HistoryEntry, HistoryFile, Snapshot, SourceKind};

/// Work allowed per byte of text by this test, whatever the budget's own constants: linear.
const PER_BYTE: usize = 32;
const BASE: usize = 1 << 20;

struct Case {
    name: &'static str,
    text: String,
    /// The models of the launches found, in order.
    models: &'static [&'static str],
    /// The work budget stopped (part of) the reading.
    cut: bool,
}

fn cases() -> Vec<Case> {
    vec![
        Case {
            // The random draw that ran for minutes, shrunk: a multi-line CMD holding
            // `CMD=$CMD$CMD` and `eval $CMD`, evaluated (old: > 120 s).
            name: "self-replicating eval in a fenced block",
            text: "```\nCMD=\"\nCMD=$CMD$CMD``\nuser@h:~$ eval $CMD\n)CMD=\"\n```~~~``\nCMD=$CMD$CMD`\n)eval \"$CMD".into(),
            models: &[],
            cut: true,
        },
        Case {
            // Each eval doubles the value and evaluates it again (old: > 20 s); the launches
            // before and after the bombs are still read.
            name: "self-doubling eval between two launches",
            text: "vllm serve a --tp 2\nCMD='CMD=$CMD$CMD; eval $CMD'\neval $CMD\neval $CMD\neval $CMD\nvllm serve b --tp 4\n".into(),
            models: &["a", "b"],
            cut: true,
        },
        Case {
            // A value doubled to 64 KiB, then split into 32K words at every reference
            // (old: 10 KB of text, 44 s and 1.8 GB).
            name: "doubled value split at every reference",
            text: format!(
                "vllm serve m --tp 2\nCMD=\"a b\"\n{}{}\n",
                "CMD=$CMD$CMD\n".repeat(14),
                "$CMD ".repeat(2000)
            ),
            models: &["m"],
            cut: true,
        },
        Case {
            name: "eval of eval fan-out",
            text: "CMD='eval $CMD $CMD'\neval eval eval eval eval eval eval eval eval $CMD\nvllm serve m\n".into(),
            models: &["m"],
            cut: true,
        },
        Case {
            // `sh -c` inside `bash -c` inside an eval: each nested shell used to start a fresh
            // eval allowance.
            name: "nested shells evaluating the same variable",
            text: "CMD='bash -c \"sh -c \\\"eval $CMD $CMD\\\"\"'\neval $CMD $CMD\nvllm serve m\n".into(),
            models: &["m"],
            cut: false,
        },
        Case {
            // A word of many `(`: the lexer rebuilt the word so far at each one (old: 200 KB in
            // 6.5 s).
            name: "a word of many parentheses",
            text: format!("x{}\nvllm serve m\n", "(".repeat(100_000)),
            models: &["m"],
            cut: false,
        },
        Case {
            // A prompt line with an unclosed quote: every later line continues it, and the
            // Markdown reader re-scanned the whole command at each line.
            name: "unclosed quote after a prompt",
            text: format!(
                "```\n$ vllm serve m --served-model-name \"x\n{}```\n",
                "INFO output line\n".repeat(20_000)
            ),
            models: &["m"],
            cut: false,
        },
        Case {
            // 20 exports and 200 commands: the exports are shared, not copied per command,
            // and the launches all read.
            name: "a script of exports and many commands",
            text: format!(
                "{}{}",
                (0..20)
                    .map(|i| format!("export VAR_{i}=value-{i}\n"))
                    .collect::<String>(),
                "echo step\nvllm serve m --port 8000\n".repeat(100)
            ),
            models: &["m"; 100],
            cut: false,
        },
        Case {
            // More words than the lexer takes in: the launch after them is not read, and the
            // reading says so (it used to be dropped without a word).
            name: "a script longer than the token limit",
            text: format!("vllm serve m
{}
vllm serve late
", "x ".repeat(210_000)),
            models: &["m"],
            cut: true,
        },
    ]
}

fn check(case: &Case, launches: &[probe_model::LaunchConfig], work: Work) {
    let models: Vec<&str> = launches
        .iter()
        .map(|l| l.model.as_deref().unwrap_or("-"))
        .collect();
    assert_eq!(models, case.models, "{}", case.name);
    assert_eq!(work.cut, case.cut, "{}: {work:?}", case.name);
    assert!(
        work.spent <= BASE + PER_BYTE * case.text.len(),
        "{}: {work:?} for {} bytes",
        case.name,
        case.text.len()
    );
    for l in launches {
        let says = l.warnings.iter().any(|w| w.contains("read only in part"));
        assert_eq!(says, case.cut, "{}: {:?}", case.name, l.warnings);
    }
}

#[test]
fn pathological_texts_stay_bounded() {
    for case in cases() {
        let (launches, work) = reconstruct_measured(&case.text, &ParseHints::default());
        check(&case, &launches, work);
    }
}

/// Many large exports copied into every launch: the reading stops at its limit, having read
/// the first launches (old: 2 MB of text, 54 s and 8.3 GB).
#[test]
fn large_exports_copied_into_many_launches_stop_at_the_limit() {
    let value = "v".repeat(2000);
    let text = format!(
        "{}{}",
        (0..128)
            .map(|i| format!("export E{i}={value}\n"))
            .collect::<String>(),
        "vllm serve m\n".repeat(500)
    );
    let (launches, work) = reconstruct_measured(&text, &ParseHints::default());
    assert!(work.cut, "{work:?}");
    assert!(work.spent <= BASE + PER_BYTE * text.len(), "{work:?}");
    assert!(
        !launches.is_empty() && launches.len() < 500,
        "{}",
        launches.len()
    );
    assert_eq!(launches.first().map(|l| l.env.len()), Some(128));
}

/// Control flow that could multiply the work: nested literal loops (16^8 iterations), a
/// function calling itself twice, branches doubling a value that is read once per value,
/// thousands of `if`s never closed. Each stays within the linear bound and still reads launches.
#[test]
fn control_flow_stays_bounded() {
    let texts = [
        format!(
            "{}vllm serve m --port 80$i\n{}",
            "for i in {0..15}; do\n".repeat(8),
            "done\n".repeat(8)
        ),
        "f() {\n  vllm serve m\n  f\n  f\n}\nf\n".to_string(),
        format!(
            "C='vllm serve m'\n{}eval $C\n",
            "if [ \"$1\" = x ]; then C=\"$C $C\"; else C=\"$C --port 1\"; fi\n".repeat(200)
        ),
        format!(
            "{}vllm serve m\n",
            "if [ \"$1\" = x ]; then\n".repeat(20_000)
        ),
        format!(
            "{}vllm serve m\n",
            "[ -n \"$X\" ] && case $1 in a) ".repeat(5_000)
        ),
    ];
    for text in texts {
        let (launches, work) = reconstruct_measured(&text, &ParseHints::default());
        assert!(
            work.spent <= BASE + PER_BYTE * text.len(),
            "{work:?} for {} bytes: {}",
            text.len(),
            text.get(..80).unwrap_or(&text)
        );
        assert!(!launches.is_empty(), "{}", text.get(..80).unwrap_or(&text));
        for l in &launches {
            assert!(l.warnings.len() <= 16, "{:?}", l.warnings);
        }
    }
}

fn history(lines: &[String]) -> Snapshot {
    Snapshot {
        histories: vec![HistoryFile {
            path: "/home/mallory/.bash_history".into(),
            entries: lines
                .iter()
                .enumerate()
                .map(|(i, command)| HistoryEntry {
                    index: i as u32,
                    time: None,
                    command: command.clone(),
                })
                .collect(),
            ..HistoryFile::default()
        }],
        ..Snapshot::default()
    }
}

/// The models of the launches read from a history of `lines`.
fn history_models(lines: &[String]) -> Vec<Option<String>> {
    analyze(&history(lines))
        .launches
        .iter()
        .filter(|l| l.source.kind == SourceKind::History)
        .map(|l| l.model.clone())
        .collect()
}

/// Many variables carried and thousands of entries with `=` after them: an entry copies only
/// the variables it can reach, so a launch typed at the end is still read.
#[test]
fn a_long_history_with_many_variables_reads_its_last_launch() {
    let mut lines: Vec<String> = (0..60)
        .map(|i| format!("V{i}=value-{i}-of-a-variable-typed-long-ago"))
        .collect();
    lines.extend((0..3000).map(|i| format!("ls --color=auto /data/{i}")));
    lines.push("M=org/late".into());
    lines.push("vllm serve $M --tp 2".into());
    let models = history_models(&lines);
    assert_eq!(models, vec![Some("org/late".to_string())]);
}

/// A variable doubled entry by entry, then evaluated in many entries: the variables carried
/// from entry to entry are bounded, and the file shares one budget; the launch typed before
/// the bombs is kept.
#[test]
fn a_history_of_doubling_variables_and_evals_stays_bounded() {
    let mut lines = vec!["vllm serve org/model --tp 2".to_string(), "X='a b'".into()];
    lines.extend((0..20).map(|_| "X=$X$X".to_string()));
    lines.extend((0..2000).map(|_| "eval $X $X".to_string()));
    let models = history_models(&lines);
    assert_eq!(models, vec![Some("org/model".to_string())]);
}
