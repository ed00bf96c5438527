//! The published JSON Schemas in `docs/schema/` are generated from the model types, so the
//! documentation cannot drift from what `probe --format json` writes: this test regenerates every
//! schema and fails when a committed file differs. `PROBE_UPDATE_SCHEMA=1 cargo test -p
//! probe-model --test schema` rewrites them (review the diff, commit).
//!
//! The schemas describe documents as probe *writes* them (schemars' serialize contract): every
//! field is required, since the writer always emits it; `Option` fields may be `null`. Readers of
//! older documents are more lenient (`#[serde(default)]`), the schema is not.

use std::path::{Path, PathBuf};

use probe_model::{
    AuditRecord, AuditSummary, FleetReport, HostReport, LaunchConfig, LaunchOption, MetricSeries,
    ModelConfig, OutliersLine, RollbackPlan, SCHEMA_VERSION, Snapshot, SnapshotDiff, Timeline,
};
use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use serde_json::{Value, json};

/// One item of `probe launch --json` (an array of these).
#[allow(dead_code)]
#[derive(JsonSchema)]
struct LaunchOutput {
    /// The reconstructed launch.
    launch: LaunchConfig,
    /// The launch in the engine-neutral vocabulary of the public launch corpus (`engine`,
    /// `model`, `tp`, `dp`, `context_length`, `speculative`, ...); only the keys the launch sets.
    common: serde_json::Map<String, Value>,
}

/// `probe audit --format json`: every host's record, then the summary.
#[allow(dead_code)]
#[derive(JsonSchema)]
struct AuditReport {
    hosts: Vec<AuditRecord>,
    summary: AuditSummary,
}

struct Document {
    /// File stem under `docs/schema/`.
    name: &'static str,
    /// The commands that write it.
    title: &'static str,
    description: &'static str,
    schema: Value,
}

fn schema_of<T: JsonSchema>() -> Value {
    let generator = SchemaSettings::draft2020_12()
        .for_serialize()
        .into_generator();
    generator.into_root_schema_for::<T>().to_value()
}

fn documents() -> Vec<Document> {
    let mut docs = vec![
        Document {
            name: "snapshot",
            title: "probe snapshot",
            description: "One host at one moment: `probe snapshots show --format json`, `probe snapshots export` (the file `probe snapshots import` and `probe diff FILE` read).",
            schema: schema_of::<Snapshot>(),
        },
        Document {
            name: "host-report",
            title: "probe host report",
            description: "`probe host TARGET... --format json`: one HostReport per target, in the order given.",
            schema: schema_of::<Vec<HostReport>>(),
        },
        Document {
            name: "snapshot-diff",
            title: "probe diff",
            description: "`probe diff A B --format json`: two snapshots compared, changes ranked by likely impact.",
            schema: schema_of::<SnapshotDiff>(),
        },
        Document {
            name: "rollback-plan",
            title: "probe diff --rollback",
            description: "`probe diff A B --rollback --format json`: the plan for rolling B's server back to A's launch on the launcher that runs it, its steps in order (the `rollback_plan` of `probe diff --format json`).",
            schema: schema_of::<RollbackPlan>(),
        },
        Document {
            name: "timeline",
            title: "probe timeline",
            description: "`probe timeline TARGET --format json`: what happened on a host, oldest first.",
            schema: schema_of::<Timeline>(),
        },
        Document {
            name: "launch-output",
            title: "probe launch",
            description: "`probe launch --json` (or `--format json`): one item per launch found in the text.",
            schema: schema_of::<Vec<LaunchOutput>>(),
        },
        Document {
            name: "audit-record",
            title: "probe audit host record",
            description: "One line of `probe audit --jsonl` with `\"type\": \"host\"`: one host's outcome, written as the host finishes.",
            schema: schema_of::<AuditRecord>(),
        },
        Document {
            name: "audit-summary",
            title: "probe audit summary",
            description: "The last line of `probe audit --jsonl`, `\"type\": \"summary\"`.",
            schema: schema_of::<AuditSummary>(),
        },
        Document {
            name: "audit-report",
            title: "probe audit",
            description: "`probe audit --format json`: every host's record, then the summary.",
            schema: schema_of::<AuditReport>(),
        },
        Document {
            name: "fleet-report",
            title: "probe audit report",
            description: "`probe audit report --format json`: every host's last audit across shards and runners, and each group's outliers with `--outliers`.",
            schema: schema_of::<FleetReport>(),
        },
        Document {
            name: "outliers-line",
            title: "probe audit outliers line",
            description: "One line of `probe audit --outliers --jsonl` with `\"type\": \"outliers\"`: one group's modal configuration and the hosts that differ from it.",
            schema: schema_of::<OutliersLine>(),
        },
    ];
    for doc in &mut docs {
        refine(&mut doc.schema);
        let object = doc.schema.as_object_mut().expect("a schema object");
        // Our title and description replace the type's own at the root (`Array_of_...`).
        object.insert("title".into(), doc.title.into());
        object.insert("description".into(), doc.description.into());
        // Keep `$schema`, `title`, `description` first for people reading the file.
        let mut ordered = serde_json::Map::new();
        for key in ["$schema", "title", "description"] {
            if let Some(value) = object.remove(key) {
                ordered.insert(key.into(), value);
            }
        }
        ordered.append(object);
        doc.schema = Value::Object(ordered);
    }
    docs
}

/// What the types alone cannot say: the document version a writer of this schema emits, and the
/// fixed `type` tag of the audit lines. And what they say wrongly for a written document: the
/// `default` annotations of `#[serde(default)]` describe reading (a `schema_version` of 0), not
/// what probe writes, so they go.
fn refine(schema: &mut Value) {
    let Value::Object(object) = schema else {
        return;
    };
    object.remove("default");
    // The root carries its type's name as title; definitions are keyed by it.
    let title = object
        .get("title")
        .and_then(Value::as_str)
        .map(str::to_owned);
    tag_audit_line(title.as_deref(), object);
    if let Some(Value::Object(props)) = object.get_mut("properties")
        && let Some(Value::Object(version)) = props.get_mut("schema_version")
    {
        version.insert("const".into(), SCHEMA_VERSION.into());
    }
    for (keyword, value) in object.iter_mut() {
        match (keyword.as_str(), value) {
            ("$defs", Value::Object(map)) => {
                for (name, def) in map.iter_mut() {
                    if let Value::Object(def_object) = def {
                        tag_audit_line(Some(name), def_object);
                    }
                    refine(def);
                }
            }
            // Maps of name -> schema.
            ("properties" | "patternProperties", Value::Object(map)) => {
                map.values_mut().for_each(refine)
            }
            // Lists of schemas.
            ("prefixItems" | "anyOf" | "oneOf" | "allOf", Value::Array(list)) => {
                list.iter_mut().for_each(refine)
            }
            // One schema.
            ("items" | "additionalProperties" | "not" | "if" | "then" | "else", value) => {
                refine(value)
            }
            _ => {}
        }
    }
}

fn tag_audit_line(type_name: Option<&str>, object: &mut serde_json::Map<String, Value>) {
    let tag = match type_name {
        Some("AuditRecord") => "host",
        Some("AuditSummary") => "summary",
        Some("OutliersLine") => "outliers",
        Some("FleetReport") => "fleet_report",
        _ => return,
    };
    if let Some(Value::Object(props)) = object.get_mut("properties")
        && let Some(Value::Object(record_type)) = props.get_mut("type")
    {
        record_type.insert("const".into(), tag.into());
    }
}

fn schema_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/schema")
}

fn rendered(schema: &Value) -> String {
    let mut text = serde_json::to_string_pretty(schema).expect("serializable");
    text.push('\n');
    text
}

#[test]
fn committed_schemas_match_the_types() {
    let dir = schema_dir();
    let update = std::env::var_os("PROBE_UPDATE_SCHEMA").is_some_and(|v| v != "0");
    let docs = documents();
    let mut stale = Vec::new();
    for doc in &docs {
        let path = dir.join(format!("{}.schema.json", doc.name));
        let text = rendered(&doc.schema);
        let committed = std::fs::read_to_string(&path).unwrap_or_default();
        if committed == text {
            continue;
        }
        if update {
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(&path, &text).unwrap();
        } else {
            stale.push(path.display().to_string());
        }
    }
    // No schema file for a document that no longer exists.
    let expected: Vec<String> = docs
        .iter()
        .map(|d| format!("{}.schema.json", d.name))
        .collect();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().into_owned();
        if name.ends_with(".schema.json") && !expected.contains(&name) {
            stale.push(format!("{name} (no such document)"));
        }
    }
    assert!(
        stale.is_empty(),
        "docs/schema differs from the model types: {stale:?}; run \
         `PROBE_UPDATE_SCHEMA=1 cargo test -p probe-model --test schema` and commit the result"
    );
}

#[test]
fn schemas_are_valid_draft_2020_12() {
    for doc in documents() {
        assert_eq!(
            doc.schema["$schema"],
            "https://json-schema.org/draft/2020-12/schema"
        );
        if let Err(err) = jsonschema::meta::validate(&doc.schema) {
            panic!("{}: not a valid schema: {err}", doc.name);
        }
    }
}

fn validator(name: &str) -> jsonschema::Validator {
    let doc = documents()
        .into_iter()
        .find(|d| d.name == name)
        .expect("known document");
    jsonschema::validator_for(&doc.schema).expect("compiles")
}

fn errors(validator: &jsonschema::Validator, instance: &Value) -> Vec<String> {
    validator
        .iter_errors(instance)
        .map(|e| format!("{}: {e}", e.instance_path()))
        .collect()
}

/// A snapshot with the awkward parts filled in: metric points (tuples with an optional time),
/// free-form config values, launch options with typed values.
fn rich_snapshot() -> Snapshot {
    let mut snapshot = Snapshot {
        schema_version: SCHEMA_VERSION,
        id: "gpu7-1700000000-abcd".into(),
        target: "gpu7".into(),
        ..Snapshot::default()
    };
    let mut model = ModelConfig {
        model: "/mnt/models/m".into(),
        ..ModelConfig::default()
    };
    model.fields.insert("num_hidden_layers".into(), json!(46));
    model.fields.insert(
        "rope_scaling".into(),
        json!({"type": "yarn", "factor": 4.0}),
    );
    model.fields.insert("torch_dtype".into(), json!(null));
    snapshot.models.push(model);
    let mut log = probe_model::LogSource::default();
    log.metrics.push(MetricSeries {
        name: "gen_throughput".into(),
        unit: "tok/s".into(),
        points: vec![(Some(1_700_000_000), 812.5), (None, 790.0)],
        ..MetricSeries::default()
    });
    snapshot.logs.push(log);
    snapshot
}

#[test]
fn real_documents_validate_and_broken_ones_do_not() {
    let snapshot_validator = validator("snapshot");
    let value = serde_json::to_value(rich_snapshot()).unwrap();
    assert_eq!(errors(&snapshot_validator, &value), Vec::<String>::new());
    // A default (empty) snapshot is still a complete document.
    let empty = serde_json::to_value(Snapshot {
        schema_version: SCHEMA_VERSION,
        ..Snapshot::default()
    })
    .unwrap();
    assert_eq!(errors(&snapshot_validator, &empty), Vec::<String>::new());

    // Metric points are [time or null, number] pairs, nothing else.
    for bad_point in [
        json!([1_700_000_000, 1.0, 2.0]),
        json!([1_700_000_000]),
        json!(["yesterday", 1.0]),
        json!([null, "fast"]),
        json!({"time": 1, "value": 2.0}),
    ] {
        let mut broken = value.clone();
        broken["logs"][0]["metrics"][0]["points"][0] = bad_point.clone();
        assert!(
            !errors(&snapshot_validator, &broken).is_empty(),
            "accepted point {bad_point}"
        );
    }
    // Every field is written, so a missing one is an error; so is a wrong type or enum value.
    let mut missing = value.clone();
    missing["host"].as_object_mut().unwrap().remove("hostname");
    assert!(!errors(&snapshot_validator, &missing).is_empty());
    let mut wrong_type = value.clone();
    wrong_type["collected_at"] = json!("2026-11-20");
    assert!(!errors(&snapshot_validator, &wrong_type).is_empty());
    let mut wrong_enum = value.clone();
    wrong_enum["gpu"]["status"] = json!("on_fire");
    assert!(!errors(&snapshot_validator, &wrong_enum).is_empty());
    let mut wrong_version = value;
    wrong_version["schema_version"] = json!(SCHEMA_VERSION + 1);
    assert!(!errors(&snapshot_validator, &wrong_version).is_empty());
}

#[test]
fn launch_values_and_audit_tags() {
    let mut launch = LaunchConfig {
        engine: probe_model::Engine::LlamaCpp,
        model: Some("m.gguf".into()),
        ..LaunchConfig::default()
    };
    for (key, value) in [
        ("tp-size", json!(2)),
        ("enable-mixed-chunk", json!(true)),
        ("speculative-config", json!({"method": "mtp", "k": 3})),
        ("served-model-name", json!(["a", "b"])),
        ("dtype", json!("bfloat16")),
    ] {
        launch.options.insert(
            key.into(),
            LaunchOption {
                value,
                written: format!("--{key} ..."),
            },
        );
    }
    let items = json!([{
        "launch": serde_json::to_value(&launch).unwrap(),
        "common": {"engine": "llama.cpp", "tp": 2},
    }]);
    let launch_validator = validator("launch-output");
    assert_eq!(errors(&launch_validator, &items), Vec::<String>::new());
    let mut bad_engine = items.clone();
    bad_engine[0]["launch"]["engine"] = json!("llamacpp");
    assert!(!errors(&launch_validator, &bad_engine).is_empty());
    let mut no_common = items;
    no_common[0].as_object_mut().unwrap().remove("common");
    assert!(!errors(&launch_validator, &no_common).is_empty());

    let record = AuditRecord {
        schema_version: SCHEMA_VERSION,
        record_type: probe_model::RecordType::Host,
        host: "gpu7".into(),
        ..AuditRecord::default()
    };
    let summary = AuditSummary {
        schema_version: SCHEMA_VERSION,
        record_type: probe_model::RecordType::Summary,
        ..AuditSummary::default()
    };
    let record_validator = validator("audit-record");
    let summary_validator = validator("audit-summary");
    let record = serde_json::to_value(record).unwrap();
    let summary = serde_json::to_value(summary).unwrap();
    assert_eq!(errors(&record_validator, &record), Vec::<String>::new());
    assert_eq!(errors(&summary_validator, &summary), Vec::<String>::new());
    // A summary line is not a host record and vice versa.
    assert!(!errors(&record_validator, &summary).is_empty());
    assert!(!errors(&summary_validator, &record).is_empty());
    let report = json!({"hosts": [record], "summary": summary});
    assert_eq!(
        errors(&validator("audit-report"), &report),
        Vec::<String>::new()
    );

    // The report and diff documents accept what their types write.
    let report = HostReport {
        schema_version: SCHEMA_VERSION,
        vs_last_snapshot: Some(SnapshotDiff {
            schema_version: SCHEMA_VERSION,
            ..SnapshotDiff::default()
        }),
        running: vec![launch],
        ..HostReport::default()
    };
    let reports = serde_json::to_value(vec![report]).unwrap();
    assert_eq!(
        errors(&validator("host-report"), &reports),
        Vec::<String>::new()
    );
    assert!(!errors(&validator("host-report"), &reports[0]).is_empty());
    let timeline = serde_json::to_value(Timeline {
        schema_version: SCHEMA_VERSION,
        ..Timeline::default()
    })
    .unwrap();
    assert_eq!(
        errors(&validator("timeline"), &timeline),
        Vec::<String>::new()
    );
}
