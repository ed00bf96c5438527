//! Property tests: comparing arbitrary launches never panics, a launch equals itself, and the
//! result is always ranked.

use std::collections::BTreeMap;

use probe_diff::{CompareOptions, compare_launches, compare_snapshots_with};
use probe_model::{
    Engine, Gpu, GpuState, GpuStatus, LaunchConfig, LaunchOption, LaunchSource, PythonEnv,
    PythonPackage, Snapshot, SourceKind, Speculative,
};
use proptest::prelude::*;
use serde_json::{Value, json};

fn option_name() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => prop::sample::select(vec![
            "tp-size", "tensor-parallel-size", "mem-fraction-static", "gpu-memory-utilization",
            "context-length", "max-model-len", "schedule-policy", "speculative-algorithm",
            "speculative-config", "enforce-eager", "disable-cuda-graph", "port", "quantization",
            "kv-cache-dtype", "max-running-requests", "max-num-seqs", "attention-backend",
            "cuda-graph-backend-decode", "ctx-size", "num-shard",
        ])
        .prop_map(str::to_string),
        1 => "[a-z][a-z-]{0,14}",
        1 => "\\PC{0,8}",
    ]
}

fn scalar() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        (-1.0e6f64..1.0e6).prop_map(|f| json!(f)),
        "\\PC{0,12}".prop_map(Value::from),
        prop::sample::select(vec![
            "0.9",
            "0.90",
            "2",
            "true",
            "False",
            "fcfs",
            "disabled",
            "{\"method\":\"mtp\"}"
        ])
        .prop_map(Value::from),
    ]
}

fn value() -> impl Strategy<Value = Value> {
    scalar().prop_recursive(2, 8, 3, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..3).prop_map(Value::Array),
            prop::collection::btree_map("[a-z_]{1,8}", inner, 0..3)
                .prop_map(|map| Value::Object(map.into_iter().collect())),
        ]
    })
}

fn speculative() -> impl Strategy<Value = Option<Speculative>> {
    prop::option::of(
        (
            prop::option::of(prop::sample::select(vec![
                "NEXTN",
                "EAGLE",
                "EAGLE3",
                "mtp",
                "deepseek_mtp",
                "",
                "none",
            ])),
            prop::option::of(0i64..8),
            prop::option::of(0i64..8),
            prop::option::of("[a-z/]{0,10}"),
        )
            .prop_map(|(algorithm, steps, topk, draft)| Speculative {
                algorithm: algorithm.map(str::to_string),
                num_steps: steps.map(Value::from),
                eagle_topk: topk.map(Value::from),
                draft_model: draft,
                ..Speculative::default()
            }),
    )
}

fn launch() -> impl Strategy<Value = LaunchConfig> {
    (
        prop::sample::select(Engine::ALL.to_vec()),
        prop::option::of(prop::sample::select(vec![
            "0.5.9",
            "0.11.0",
            "x",
            "",
            "99.1.2+cu128",
        ])),
        prop::option::of("[a-z/]{1,12}"),
        prop::collection::btree_map(option_name(), value(), 0..8),
        prop::collection::btree_map("[A-Z_]{1,10}", "\\PC{0,10}", 0..4),
        speculative(),
        prop::collection::vec("--[a-z]{1,6}", 0..3),
    )
        .prop_map(
            |(engine, version, model, options, env, speculative, unknown)| LaunchConfig {
                engine,
                engine_version: version.map(str::to_string),
                model,
                options: options
                    .into_iter()
                    .map(|(name, value)| {
                        let written = format!("--{name}");
                        (name, LaunchOption { value, written })
                    })
                    .collect(),
                env,
                speculative,
                unknown,
                source: LaunchSource {
                    kind: SourceKind::Process,
                    location: String::from("pid:1"),
                    running: true,
                    ..LaunchSource::default()
                },
                ..LaunchConfig::default()
            },
        )
}

fn is_ranked(changes: &[probe_model::Change]) -> bool {
    changes
        .windows(2)
        .all(|pair| pair[0].impact <= pair[1].impact)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn a_launch_equals_itself(config in launch()) {
        let diff = compare_launches(&config, &config);
        prop_assert!(diff.changes.is_empty(), "{:#?}", diff.changes);
        prop_assert!(diff.engine_switch.is_none());
    }

    #[test]
    fn comparing_any_two_launches_never_panics_and_is_ranked(before in launch(), after in launch()) {
        let diff = compare_launches(&before, &after);
        prop_assert!(is_ranked(&diff.changes));
        prop_assert_eq!(diff.engine_switch.is_some(), before.engine != after.engine);
        for change in &diff.changes {
            prop_assert!(!change.key.is_empty());
            prop_assert!(!change.explanation.is_empty());
        }
        // Both directions find the same things changed.
        let reverse = compare_launches(&after, &before);
        let mut forward_keys: Vec<&str> = diff.changes.iter().map(|c| c.key.as_str()).collect();
        let mut reverse_keys: Vec<&str> = reverse.changes.iter().map(|c| c.key.as_str()).collect();
        forward_keys.sort_unstable();
        reverse_keys.sort_unstable();
        if before.engine == after.engine {
            prop_assert_eq!(forward_keys, reverse_keys);
        }
    }

    #[test]
    fn a_snapshot_equals_itself(
        launches in prop::collection::vec(launch(), 0..3),
        powers in prop::collection::vec(prop::option::of(100.0f64..800.0), 0..4),
        packages in prop::collection::btree_map("[a-z-]{1,10}", "[0-9.a-z+]{1,8}", 0..6),
    ) {
        let snapshot = Snapshot {
            gpu: GpuState {
                status: GpuStatus::Present,
                gpus: powers
                    .iter()
                    .map(|power| Gpu { power_limit_w: *power, ..Gpu::default() })
                    .collect(),
                ..GpuState::default()
            },
            python_envs: vec![PythonEnv {
                interpreter: String::from("/usr/bin/python3"),
                packages: packages
                    .iter()
                    .map(|(name, version)| PythonPackage {
                        name: name.clone(),
                        version: version.clone(),
                        ..PythonPackage::default()
                    })
                    .collect(),
                ..PythonEnv::default()
            }],
            ..Snapshot::default()
        };
        let diff = compare_snapshots_with(&snapshot, &launches, &snapshot, &launches, &CompareOptions::default());
        prop_assert!(diff.changes.is_empty(), "{:#?}", diff.changes);
        prop_assert!(diff.texts.is_empty());
    }

    #[test]
    fn comparing_any_two_snapshots_never_panics(
        before_launches in prop::collection::vec(launch(), 0..3),
        after_launches in prop::collection::vec(launch(), 0..3),
        before_packages in prop::collection::btree_map("[a-z-]{1,10}", "[0-9.a-z+]{1,8}", 0..5),
        after_packages in prop::collection::btree_map("[a-z-]{1,10}", "[0-9.a-z+]{1,8}", 0..5),
    ) {
        let snapshot = |packages: &BTreeMap<String, String>| Snapshot {
            python_envs: vec![PythonEnv {
                interpreter: String::from("/usr/bin/python3"),
                packages: packages
                    .iter()
                    .map(|(name, version)| PythonPackage {
                        name: name.clone(),
                        version: version.clone(),
                        ..PythonPackage::default()
                    })
                    .collect(),
                ..PythonEnv::default()
            }],
            ..Snapshot::default()
        };
        let diff = compare_snapshots_with(
            &snapshot(&before_packages),
            &before_launches,
            &snapshot(&after_packages),
            &after_launches,
            &CompareOptions::default(),
        );
        prop_assert!(is_ranked(&diff.changes));
    }
}

/// Details of how the engine was entered and its environment: not configuration on either side.
fn is_configuration(key: &str) -> bool {
    !key.starts_with("env:")
        && !matches!(
            key,
            "engine_version"
                | "interpreter"
                | "venv"
                | "entrypoint"
                | "working_directory"
                | "wrappers"
        )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// Issue 33, item 7: "same configuration" (probe-launch) and "no configuration change in
    /// the ranked diff" (probe-diff) cannot disagree.
    #[test]
    fn same_configuration_and_no_configuration_change_agree(
        before in launch(),
        edits in prop::collection::vec((option_name(), prop::option::of(value())), 0..2),
        other_speculative in prop::option::of(speculative()),
        other_version in prop::option::of(prop::sample::select(vec!["0.5.9", "0.11.0", "0.10.1"])),
        other_unknown in prop::option::of(prop::collection::vec("--[a-z]{1,6}", 0..2)),
    ) {
        let mut after = before.clone();
        if let Some(speculative) = other_speculative {
            after.speculative = speculative;
        }
        if let Some(version) = other_version {
            after.engine_version = Some(version.to_string());
        }
        if let Some(unknown) = other_unknown {
            after.unknown = unknown;
        }
        for (name, value) in edits {
            match value {
                Some(value) => {
                    let written = format!("--{name}");
                    after.options.insert(name, LaunchOption { value, written });
                }
                None => {
                    after.options.remove(&name);
                }
            }
        }
        let same = probe_launch::same_configuration(&before, &after);
        let diff = compare_launches(&before, &after);
        let changed: Vec<&str> = diff
            .changes
            .iter()
            .map(|c| c.key.as_str())
            .filter(|k| is_configuration(k))
            .collect();
        prop_assert_eq!(
            same,
            changed.is_empty(),
            "same_configuration {} but the diff changes {:?}; differences {:?}",
            same,
            changed,
            probe_launch::configuration_differences(&before, &after)
        );
    }
}
