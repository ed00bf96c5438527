//! Property: a snapshot with a secret planted in every string field of every type (and in
//! free map keys) leaves no trace of it, after the one redaction pass, in the SQLite store
//! file, in an export, or in any output format (human, markdown, JSON, JSON Lines, Prometheus)
//! of a host report, a snapshot diff or an audit.
//!
//! The snapshot is generated from `docs/schema/snapshot.schema.json` (kept equal to the model
//! types by probe-model's schema test), so a field added to the model is covered without
//! touching this test: every field is present, every `Option` is `Some`, every list and map has
//! entries.

use std::path::Path;

use probe_cli::testing::{self as cli, Format, Printer};
use probe_collect::redact::{Redactor, redact_snapshot};
use probe_model::{AuditRecord, AuditStatus, AuditSummary, Snapshot};
use probe_store::SnapshotStore;
use proptest::prelude::*;
use serde_json::{Map, Value, json};

const STR: &str = "@@STR@@";
const KEY: &str = "@@KEY@@";

fn schema() -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/schema/snapshot.schema.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// A value for `s` with every field filled: strings are [`STR`], enums their first variant.
fn fill(s: &Value, defs: &Map<String, Value>) -> Value {
    if let Some(r) = s.get("$ref").and_then(Value::as_str) {
        let name = r.rsplit('/').next().unwrap();
        return fill(&defs[name], defs);
    }
    if let Some(c) = s.get("const") {
        return c.clone();
    }
    if let Some(e) = s.get("enum").and_then(Value::as_array) {
        return e[0].clone();
    }
    for alt in ["oneOf", "anyOf"] {
        if let Some(a) = s.get(alt).and_then(Value::as_array) {
            let pick = a
                .iter()
                .find(|x| x.get("type") != Some(&json!("null")))
                .unwrap();
            return fill(pick, defs);
        }
    }
    let ty = match s.get("type") {
        Some(Value::String(t)) => t.clone(),
        Some(Value::Array(ts)) => ts
            .iter()
            .filter_map(Value::as_str)
            .find(|t| *t != "null")
            .unwrap()
            .to_string(),
        _ => "any".into(),
    };
    match ty.as_str() {
        "string" => json!(STR),
        "integer" => json!(1),
        "number" => json!(1.5),
        "boolean" => json!(true),
        "array" => match s.get("prefixItems").and_then(Value::as_array) {
            Some(items) => Value::Array(items.iter().map(|x| fill(x, defs)).collect()),
            None => {
                let item = fill(s.get("items").unwrap_or(&json!(true)), defs);
                Value::Array(vec![item.clone(), item])
            }
        },
        "object" => {
            let mut m = Map::new();
            if let Some(props) = s.get("properties").and_then(Value::as_object) {
                for (k, x) in props {
                    m.insert(k.clone(), fill(x, defs));
                }
            }
            match s.get("additionalProperties") {
                Some(Value::Bool(true)) => {
                    m.insert(KEY.into(), json!(STR));
                    m.insert("PLAIN".into(), json!(STR));
                    m.insert(
                        "quantization_config".into(),
                        json!({"hub_api_key": STR, "url": STR, "bits": 8}),
                    );
                }
                Some(x @ Value::Object(_)) => {
                    for k in [KEY, "HF_TOKEN", "PLAIN"] {
                        m.insert(k.into(), fill(x, defs));
                    }
                }
                _ => {}
            }
            m
        }
        .into(),
        _ => json!(STR),
    }
}

/// Each planted string's content: a secret written the way operators write it, recognisable
/// from the string alone.
fn shapes(s: &str) -> Vec<String> {
    let up: String = format!("{}0000000000000000", s.to_ascii_uppercase())
        .chars()
        .take(16)
        .collect();
    vec![
        format!("hf_{s}aaaaaaaaaaaaaaaaaaaa"),
        format!("sk-{s}aaaaaaaaaaaaaaaaaaaa"),
        format!("sk-ant-api03-{s}aaaaaaaaaaaaaaaa"),
        format!("ghp_{s}aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"),
        format!("github_pat_{s}aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"),
        format!("xoxb-{s}-1234567890"),
        format!("AKIA{up}"),
        format!("glpat-{s}aaaaaaaaaaaaaaaa"),
        format!("eyJ{s}.eyJ{s}.{s}"),
        format!("HF_TOKEN={s}"),
        format!("Environment=MY_DB_PASSWORD={s}"),
        format!("Environment=\"OPENAI_API_KEY={s}\""),
        format!("--api-key {s}"),
        format!("--api-key -{s}"),
        format!("--api-key={s}"),
        format!("docker run --env=HF_TOKEN={s} img"),
        format!("mysql -uroot -p{s} db"),
        format!("docker login -u x -p {s} reg"),
        format!("sshpass -p {s} ssh h"),
        format!("curl -u admin:{s} https://h/"),
        format!("https://user:{s}@h/x"),
        format!("aws configure set aws_secret_access_key {s}"),
        format!("DB_PASS={s}"),
        format!("non-default args: {{'model': 'm', 'api_key': ['{s}']}}"),
        format!("{{\"password\": \"{s}\"}}"),
        format!("Authorization: Bearer {s}"),
    ]
}

/// Replaces every [`STR`] (and [`KEY`]) by the next planted text.
fn plant(v: &mut Value, next: &mut dyn FnMut() -> String) {
    match v {
        Value::String(s) if s == STR => *s = next(),
        Value::Array(a) => a.iter_mut().for_each(|x| plant(x, next)),
        Value::Object(m) => {
            let old = std::mem::take(m);
            for (k, mut x) in old {
                plant(&mut x, next);
                // A key can only hold a shape that needs no context: a token.
                let k = if k == KEY {
                    let t = next();
                    let tail = t.split("SEKRIT").nth(1).unwrap_or("x");
                    let tail: String = tail
                        .chars()
                        .take_while(char::is_ascii_alphanumeric)
                        .collect();
                    format!("hf_SEKRIT{tail}aaaaaaaaaaaaaaaaaaaa")
                } else {
                    k
                };
                m.insert(k, x);
            }
        }
        _ => {}
    }
}

fn leaks(what: &str, text: &str) -> Result<(), TestCaseError> {
    let lower = text.to_ascii_lowercase();
    if let Some(i) = lower.find("sekrit") {
        let from = i.saturating_sub(80);
        let ctx = String::from_utf8_lossy(&text.as_bytes()[from..(i + 40).min(text.len())]);
        return Err(TestCaseError::fail(format!("{what} leaks: ...{ctx}...")));
    }
    Ok(())
}

fn printer(format: Format) -> Printer {
    Printer {
        format,
        color: false,
        stderr_color: false,
        stdout_tty: false,
        stderr_tty: false,
    }
}

#[test]
fn template_covers_every_field() {
    let s = schema();
    let v = fill(&s, s["$defs"].as_object().unwrap());
    let snap: Snapshot = serde_json::from_value(v.clone()).expect("template reads as a Snapshot");
    // Round trip keeps every planted string (nothing was dropped by serde defaults).
    let back = serde_json::to_value(&snap).unwrap();
    let count = |v: &Value| v.to_string().matches(STR).count();
    assert_eq!(count(&back), count(&v));
    assert!(count(&v) > 150, "{}", count(&v));
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, .. ProptestConfig::default() })]
    #[test]
    fn no_planted_secret_survives(
        seeds in proptest::collection::vec(("[a-z0-9]{10,14}", 0usize..26), 64),
    ) {
        let s = schema();
        let mut v = fill(&s, s["$defs"].as_object().unwrap());
        let mut i = 0usize;
        let mut next = || {
            let (tail, shape) = &seeds[i % seeds.len()];
            i += 1;
            let secret = format!("SEKRIT{tail}");
            let all = shapes(&secret);
            format!("w{i} {} end", all[(shape + i) % all.len()])
        };
        plant(&mut v, &mut next);
        let mut snap: Snapshot = serde_json::from_value(v).unwrap();
        snap.id = format!("planted-{i}");
        redact_snapshot(&mut snap, Redactor::builtin());

        // The store file and an export.
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("s.db");
        let store = probe_store::SqliteStore::open(&db).unwrap();
        store.put(&snap).unwrap();
        let export = store.export(&snap.id).unwrap();
        leaks("export", &export)?;
        drop(store);
        for entry in std::fs::read_dir(dir.path()).unwrap() {
            let bytes = std::fs::read(entry.unwrap().path()).unwrap();
            leaks("store file", &String::from_utf8_lossy(&bytes))?;
        }

        // Every output format of a host report, a diff and an audit.
        let before = Snapshot { id: "before".into(), ..Snapshot::default() };
        let host = cli::host_report(&snap, Some(&before), true, Vec::new());
        let diff = probe_diff::compare_snapshots(&before, &snap, &probe_diff::CompareOptions::default());
        for format in [Format::Human, Format::Markdown] {
            let p = printer(format);
            leaks("report", &cli::text(&cli::host_report_doc(&host), &p))?;
            leaks("diff", &cli::text(&cli::snapshot_diff_doc(&diff), &p))?;
        }
        leaks("report json", &cli::json_pretty(&host))?;
        leaks("diff json", &cli::json_pretty(&diff))?;
        let record = AuditRecord {
            record_type: probe_model::RecordType::Host,
            host: snap.target.clone(),
            target: snap.target.clone(),
            status: AuditStatus::Changed,
            changes: diff.changes.len(),
            top_changes: diff.changes.iter().take(5).map(cli::change_summary).collect(),
            snapshot_id: Some(snap.id.clone()),
            engines: Vec::new(),
            ..AuditRecord::default()
        };
        let summary = AuditSummary::default();
        leaks("audit jsonl", &cli::json_line(&record))?;
        leaks("audit human", &cli::text(&cli::audit_doc(std::slice::from_ref(&record), &summary), &printer(Format::Human)))?;
        leaks("prometheus", &cli::prometheus(std::slice::from_ref(&record), &summary))?;
    }
}
