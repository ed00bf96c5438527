//! `compare_launches`: default-aware, typed, across engines, speculative settings normalised.

use probe_diff::compare_launches;
use probe_model::{
    Category, ChangeKind, Engine, Impact, LaunchConfig, LaunchOption, LaunchSource, SourceKind,
    Speculative,
};
use serde_json::{Value, json};

fn launch(engine: Engine, model: &str, options: &[(&str, Value)]) -> LaunchConfig {
    let mut config = LaunchConfig {
        engine,
        model: Some(model.to_string()),
        source: LaunchSource {
            kind: SourceKind::Process,
            location: String::from("pid:100"),
            running: true,
            ..LaunchSource::default()
        },
        ..LaunchConfig::default()
    };
    for (name, value) in options {
        let written = match value {
            Value::String(text) => format!("--{name} {text}"),
            other => format!("--{name} {other}"),
        };
        config.options.insert(
            name.to_string(),
            LaunchOption {
                value: value.clone(),
                written,
            },
        );
    }
    config
}

fn speculative(
    algorithm: &str,
    steps: Option<i64>,
    topk: Option<i64>,
    draft: Option<i64>,
) -> Speculative {
    Speculative {
        algorithm: Some(algorithm.to_string()),
        num_steps: steps.map(Value::from),
        eagle_topk: topk.map(Value::from),
        num_draft_tokens: draft.map(Value::from),
        ..Speculative::default()
    }
}

const MODEL: &str = "/models/Qwen3-Next-80B-A3B";

/// (name, before, after, expected change keys in ranked order, expected equal_by_default entries)
struct Case {
    name: &'static str,
    before: LaunchConfig,
    after: LaunchConfig,
    keys: &'static [&'static str],
    equal_by_default: &'static [&'static str],
}

fn cases() -> Vec<Case> {
    let sglang = |options: &[(&str, Value)]| launch(Engine::Sglang, MODEL, options);
    let vllm = |options: &[(&str, Value)]| launch(Engine::Vllm, MODEL, options);
    vec![
        Case {
            name: "identical launches",
            before: sglang(&[("tp-size", json!(4)), ("mem-fraction-static", json!(0.85))]),
            after: sglang(&[("tp-size", json!(4)), ("mem-fraction-static", json!(0.85))]),
            keys: &[],
            equal_by_default: &[],
        },
        Case {
            name: "float written differently",
            before: sglang(&[("mem-fraction-static", json!(0.9))]),
            after: sglang(&[("mem-fraction-static", json!("0.90"))]),
            keys: &[],
            equal_by_default: &[],
        },
        Case {
            name: "integer as text",
            before: sglang(&[("tp-size", json!("2"))]),
            after: sglang(&[("tp-size", json!(2))]),
            keys: &[],
            equal_by_default: &[],
        },
        Case {
            name: "option set to its default equals absent",
            before: sglang(&[("schedule-policy", json!("fcfs")), ("tp-size", json!(1))]),
            after: sglang(&[]),
            keys: &[],
            equal_by_default: &["schedule-policy=fcfs (default)", "tp-size=1 (default)"],
        },
        Case {
            name: "option added with a non-default value",
            before: sglang(&[]),
            after: sglang(&[("tp-size", json!(2))]),
            keys: &["tp-size"],
            equal_by_default: &[],
        },
        Case {
            name: "ranked: parallelism before memory before scheduling",
            before: sglang(&[
                ("schedule-policy", json!("lpm")),
                ("mem-fraction-static", json!(0.85)),
                ("tp-size", json!(4)),
            ]),
            after: sglang(&[
                ("schedule-policy", json!("fcfs")),
                ("mem-fraction-static", json!(0.7)),
                ("tp-size", json!(2)),
            ]),
            keys: &["tp-size", "mem-fraction-static", "schedule-policy"],
            equal_by_default: &[],
        },
        Case {
            name: "engine switch maps options by their cross-engine key",
            before: sglang(&[
                ("tp-size", json!(2)),
                ("context-length", json!(32768)),
                ("mem-fraction-static", json!(0.85)),
            ]),
            after: vllm(&[
                ("tensor-parallel-size", json!(2)),
                ("max-model-len", json!(32768)),
                ("gpu-memory-utilization", json!(0.85)),
            ]),
            keys: &["engine"],
            equal_by_default: &[],
        },
        Case {
            name: "engine switch with a real difference in a mapped option",
            before: sglang(&[("tp-size", json!(4)), ("context-length", json!(32768))]),
            after: vllm(&[
                ("tensor-parallel-size", json!(2)),
                ("max-model-len", json!(65536)),
            ]),
            keys: &["tensor-parallel-size", "engine", "max-model-len"],
            equal_by_default: &[],
        },
    ]
}

#[test]
fn table_of_launch_comparisons() {
    for case in cases() {
        let diff = compare_launches(&case.before, &case.after);
        let keys: Vec<&str> = diff
            .changes
            .iter()
            .map(|change| change.key.as_str())
            .collect();
        assert_eq!(keys, case.keys, "{}: {:#?}", case.name, diff.changes);
        assert_eq!(
            diff.equal_by_default, case.equal_by_default,
            "{}",
            case.name
        );
    }
}

#[test]
fn changed_option_carries_values_written_forms_and_rule() {
    let before = launch(Engine::Sglang, MODEL, &[("tp-size", json!(4))]);
    let after = launch(Engine::Sglang, MODEL, &[("tp-size", json!(2))]);
    let diff = compare_launches(&before, &after);
    let change = &diff.changes[0];
    assert_eq!(change.kind, ChangeKind::Changed);
    assert_eq!(change.category, Category::Parallelism);
    assert_eq!(change.impact, Impact::High);
    assert_eq!(change.before, Some(json!(4)));
    assert_eq!(change.after, Some(json!(2)));
    assert_eq!(change.before_written.as_deref(), Some("--tp-size 4"));
    assert!(
        change.explanation.contains("4 -> 2"),
        "{}",
        change.explanation
    );
}

#[test]
fn removed_option_notes_the_default_it_falls_back_to() {
    let before = launch(Engine::Sglang, MODEL, &[("schedule-policy", json!("lpm"))]);
    let after = launch(Engine::Sglang, MODEL, &[]);
    let diff = compare_launches(&before, &after);
    assert_eq!(diff.changes.len(), 1);
    let change = &diff.changes[0];
    assert_eq!(change.kind, ChangeKind::Removed);
    assert_eq!(change.category, Category::BatchingScheduling);
    assert_eq!(change.after, None);
    let note = change.note.as_deref().unwrap_or_default();
    assert!(note.contains("default is fcfs"), "{note}");
}

#[test]
fn engine_switch_is_reported_and_mapping_noted() {
    let before = launch(Engine::Sglang, MODEL, &[("tp-size", json!(4))]);
    let after = launch(Engine::Vllm, MODEL, &[("tensor-parallel-size", json!(2))]);
    let diff = compare_launches(&before, &after);
    assert_eq!(diff.engine_switch, Some((Engine::Sglang, Engine::Vllm)));
    let tp = diff
        .changes
        .iter()
        .find(|change| change.key == "tensor-parallel-size")
        .expect("tensor parallel compared across engines");
    assert_eq!(tp.before_written.as_deref(), Some("--tp-size 4"));
    assert_eq!(
        tp.after_written.as_deref(),
        Some("--tensor-parallel-size 2")
    );
    let note = tp.note.as_deref().unwrap_or_default();
    assert!(
        note.contains("sglang --tp-size") && note.contains("vllm --tensor-parallel-size"),
        "{note}"
    );
    let engine = diff
        .changes
        .iter()
        .find(|change| change.key == "engine")
        .expect("engine change");
    assert_eq!(engine.impact, Impact::High);
}

#[test]
fn engine_switch_uses_each_engines_default() {
    // SGLang's tp-size 1 and vLLM's absent tensor-parallel-size (default 1) are the same.
    let before = launch(Engine::Sglang, MODEL, &[("tp-size", json!(1))]);
    let after = launch(Engine::Vllm, MODEL, &[]);
    let diff = compare_launches(&before, &after);
    let keys: Vec<&str> = diff
        .changes
        .iter()
        .map(|change| change.key.as_str())
        .collect();
    assert_eq!(keys, ["engine"]);
    assert_eq!(diff.equal_by_default, ["tensor-parallel-size=1 (default)"]);
}

#[test]
fn speculative_removed_is_the_top_change() {
    let mut before = launch(
        Engine::Sglang,
        MODEL,
        &[
            ("tp-size", json!(4)),
            ("speculative-algorithm", json!("NEXTN")),
            ("mem-fraction-static", json!(0.8)),
        ],
    );
    before.speculative = Some(speculative("NEXTN", Some(3), Some(1), Some(4)));
    let after = launch(
        Engine::Sglang,
        MODEL,
        &[("tp-size", json!(4)), ("mem-fraction-static", json!(0.85))],
    );
    let diff = compare_launches(&before, &after);
    let top = &diff.changes[0];
    assert_eq!(top.key, "speculative.algorithm");
    assert_eq!(top.kind, ChangeKind::Removed);
    assert_eq!(top.impact, Impact::High);
    assert_eq!(top.category, Category::SpeculativeDecoding);
    assert!(
        top.explanation.contains("decode throughput drops"),
        "{}",
        top.explanation
    );
    // The raw speculative option is covered by the normalised comparison, not repeated.
    assert!(
        diff.changes
            .iter()
            .all(|change| change.key != "speculative-algorithm")
    );
    assert_eq!(diff.changes.len(), 2, "{:#?}", diff.changes);
}

#[test]
fn nextn_equals_eagle_with_its_implied_defaults() {
    let mut before = launch(
        Engine::Sglang,
        MODEL,
        &[("speculative-algorithm", json!("NEXTN"))],
    );
    let mut nextn = speculative("NEXTN", None, None, None);
    nextn.effective_algorithm = Some(String::from("EAGLE"));
    nextn.implied.insert(String::from("num_steps"), json!(3));
    nextn.implied.insert(String::from("eagle_topk"), json!(1));
    nextn
        .implied
        .insert(String::from("num_draft_tokens"), json!(4));
    before.speculative = Some(nextn);
    let mut after = launch(
        Engine::Sglang,
        MODEL,
        &[
            ("speculative-algorithm", json!("EAGLE")),
            ("speculative-num-steps", json!(3)),
            ("speculative-eagle-topk", json!(1)),
            ("speculative-num-draft-tokens", json!(4)),
        ],
    );
    after.speculative = Some(speculative("EAGLE", Some(3), Some(1), Some(4)));
    let diff = compare_launches(&before, &after);
    assert!(diff.changes.is_empty(), "{:#?}", diff.changes);
}

#[test]
fn speculative_steps_and_draft_model() {
    let mut before = launch(Engine::Sglang, MODEL, &[]);
    before.speculative = Some(speculative("EAGLE", Some(3), Some(1), Some(4)));
    let mut after = launch(Engine::Sglang, MODEL, &[]);
    let mut fewer = speculative("EAGLE", Some(1), Some(1), Some(2));
    fewer.draft_model = Some(String::from("/models/eagle-draft"));
    after.speculative = Some(fewer);
    let diff = compare_launches(&before, &after);
    let keys: Vec<&str> = diff
        .changes
        .iter()
        .map(|change| change.key.as_str())
        .collect();
    assert_eq!(
        keys,
        [
            "speculative.draft_model",
            "speculative.num_draft_tokens",
            "speculative.num_steps"
        ]
    );
    let steps = &diff.changes[2];
    assert_eq!(steps.impact, Impact::Medium);
    assert!(
        steps.explanation.starts_with("fewer speculative tokens"),
        "{}",
        steps.explanation
    );
}

#[test]
fn sglang_eagle_on_mtp_heads_equals_vllm_mtp() {
    let mut before = launch(Engine::Sglang, MODEL, &[("tp-size", json!(2))]);
    let mut eagle = speculative("NEXTN", Some(3), Some(1), Some(4));
    eagle.effective_algorithm = Some(String::from("EAGLE"));
    eagle.draft_model = Some(format!("{MODEL}/"));
    before.speculative = Some(eagle);
    let mut after = launch(
        Engine::Vllm,
        MODEL,
        &[
            ("tensor-parallel-size", json!(2)),
            (
                "speculative-config",
                json!({"method": "qwen3_next_mtp", "num_speculative_tokens": 3}),
            ),
        ],
    );
    after.speculative = Some(Speculative {
        algorithm: Some(String::from("qwen3_next_mtp")),
        num_speculative_tokens: Some(json!(3)),
        ..Speculative::default()
    });
    let diff = compare_launches(&before, &after);
    let keys: Vec<&str> = diff
        .changes
        .iter()
        .map(|change| change.key.as_str())
        .collect();
    assert_eq!(keys, ["engine"], "{:#?}", diff.changes);
}

#[test]
fn env_changes_respect_redaction_hashes() {
    let mut before = launch(Engine::Vllm, MODEL, &[]);
    let mut after = before.clone();
    before.env.insert(
        String::from("HF_TOKEN"),
        String::from("<redacted:abcd1234>"),
    );
    after.env.insert(
        String::from("HF_TOKEN"),
        String::from("<redacted:abcd1234>"),
    );
    before.env.insert(
        String::from("CUDA_VISIBLE_DEVICES"),
        String::from("0,1,2,3"),
    );
    after
        .env
        .insert(String::from("CUDA_VISIBLE_DEVICES"), String::from("0,1"));
    before
        .env
        .insert(String::from("API_KEY"), String::from("<redacted:00000000>"));
    after
        .env
        .insert(String::from("API_KEY"), String::from("<redacted:ffffffff>"));
    before
        .env
        .insert(String::from("SSH_CONNECTION"), String::from("10.0.0.1 22"));
    after
        .env
        .insert(String::from("SSH_CONNECTION"), String::from("10.0.0.2 22"));
    let diff = compare_launches(&before, &after);
    let keys: Vec<&str> = diff
        .changes
        .iter()
        .map(|change| change.key.as_str())
        .collect();
    assert_eq!(keys, ["env:CUDA_VISIBLE_DEVICES", "env:API_KEY"]);
    assert_eq!(diff.changes[0].impact, Impact::High);
    assert!(
        diff.changes[1]
            .note
            .as_deref()
            .unwrap_or_default()
            .contains("hashes differ")
    );
}

#[test]
fn engine_version_and_model() {
    let mut before = launch(Engine::Vllm, MODEL, &[]);
    before.engine_version = Some(String::from("0.11.0"));
    let mut after = launch(Engine::Vllm, "/models/Qwen3-32B", &[]);
    after.engine_version = Some(String::from("0.10.2"));
    let diff = compare_launches(&before, &after);
    let keys: Vec<&str> = diff
        .changes
        .iter()
        .map(|change| change.key.as_str())
        .collect();
    assert_eq!(keys, ["model", "engine_version"]);
    assert!(
        diff.changes[1].explanation.contains("downgraded"),
        "{}",
        diff.changes[1].explanation
    );
    // An unknown version on one side is not a change.
    let mut unknown = before.clone();
    unknown.engine_version = None;
    assert!(compare_launches(&before, &unknown).changes.is_empty());
}

#[test]
fn cuda_graphs_turned_off_is_high() {
    let before = launch(Engine::Vllm, MODEL, &[]);
    let after = launch(Engine::Vllm, MODEL, &[("enforce-eager", json!(true))]);
    let diff = compare_launches(&before, &after);
    assert_eq!(diff.changes.len(), 1);
    assert_eq!(diff.changes[0].impact, Impact::High);
    assert_eq!(diff.changes[0].category, Category::KernelsBackends);
}

/// GPU layers and CPU offload are a cause of their own: work moves between GPU and CPU (not a
/// kernel backend change).
#[test]
fn offload_changes_are_offload() {
    // (engine, option, before, after)
    let cases = [
        (Engine::LlamaCpp, "n-gpu-layers", json!("99"), json!("20")),
        (Engine::Vllm, "cpu-offload-gb", json!(0), json!(16)),
        (Engine::Sglang, "cpu-offload-gb", json!(0), json!(8)),
    ];
    for (engine, option, b, a) in cases {
        let before = launch(engine, MODEL, &[(option, b)]);
        let after = launch(engine, MODEL, &[(option, a)]);
        let diff = compare_launches(&before, &after);
        assert_eq!(diff.changes.len(), 1, "{option}: {:#?}", diff.changes);
        let change = &diff.changes[0];
        assert_eq!(change.category, Category::Offload, "{option}");
        assert_eq!(change.impact, Impact::High, "{option}");
        assert!(
            change
                .explanation
                .contains("moves work between GPU and CPU"),
            "{option}: {}",
            change.explanation
        );
    }
}

/// Launches that name no model (an Ollama server's): the model each loaded first is compared,
/// only when both sides know theirs; a model kept loaded beside it is no model change.
#[test]
fn loaded_models_compared_where_no_launch_names_one() {
    let ollama = |loaded: &[&str]| LaunchConfig {
        engine: Engine::Ollama,
        loaded_models: loaded.iter().map(|m| m.to_string()).collect(),
        ..LaunchConfig::default()
    };
    type Case = (
        &'static [&'static str],
        &'static [&'static str],
        Option<(&'static str, &'static str)>,
    );
    let cases: &[Case] = &[
        (&["llama3.3:70b"], &["llama3.3:70b"], None),
        (&["qwen2.5:32b"], &["qwen2.5:32b", "llama3.1:8b"], None),
        (
            &["qwen2.5:32b"],
            &["llama3.3:70b"],
            Some(("qwen2.5:32b", "llama3.3:70b")),
        ),
        (&[], &["llama3.3:70b"], None),
        (&["llama3.3:70b"], &[], None),
    ];
    for (before, after, want) in cases {
        let diff = compare_launches(&ollama(before), &ollama(after));
        let got = diff.changes.iter().find(|c| c.key == "model").map(|c| {
            (
                c.before.clone().unwrap_or_default(),
                c.after.clone().unwrap_or_default(),
            )
        });
        let want = want.map(|(b, a)| (json!(b), json!(a)));
        assert_eq!(got, want, "{before:?} -> {after:?}: {:#?}", diff.changes);
    }
}
