//! Every entry of the public launch corpus (`corpus_file`: never skipped, a copy is in
//! `tests/data`) and of the extra corpus (`tests/data/launch-extra.jsonl`): reconstruct the text
//! and compare the cross-engine fields with EVERY key of the hand-labelled `expected` reading
//! (except `notes`). An entry whose `expected` is `null` is prose that holds no launch: nothing
//! may be read from it. An entry with a `dotenv` (`{"source": ..., "text": ...}`: the `.env`
//! file beside a compose file, cited like the text) is read with that file's variables, as
//! Compose interpolates them.

use std::path::PathBuf;
use std::time::Instant;

use probe_launch::common::common_fields;
use probe_launch::compose_env::dotenv;
use probe_launch::{ParseHints, reconstruct};
use serde_json::Value;

use crate::corpus_file;

/// Numbers compare by value (`0.9` = `0.90`, `1` = `1.0`); objects key by key.
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).map(|w| same(v, w)).unwrap_or(false))
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(v, w)| same(v, w))
        }
        _ => a == b,
    }
}

/// Reads every record of a JSONL corpus and compares each expected key with the reconstruction.
/// Returns (passed, total, failure descriptions).
fn score(text: &str) -> (usize, usize, Vec<String>) {
    let mut failures = Vec::new();
    let mut total = 0;
    let mut passed = 0;
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let rec: Value = serde_json::from_str(line).unwrap_or(Value::Null);
        let id = rec
            .get("id")
            .and_then(Value::as_str)
            .unwrap_or("?")
            .to_string();
        let body = rec.get("text").and_then(Value::as_str).unwrap_or("");
        let hints = ParseHints {
            env: rec
                .pointer("/dotenv/text")
                .and_then(Value::as_str)
                .map(dotenv)
                .unwrap_or_default(),
            ..ParseHints::default()
        };
        // `"expected": null`: prose that holds no launch; reading it must invent none.
        if rec.get("expected") == Some(&Value::Null) {
            total += 1;
            match reconstruct(body, &hints).first() {
                None => passed += 1,
                Some(l) => failures.push(format!(
                    "{id}: a launch invented from a text that holds none: {}",
                    common_fields(l)
                )),
            }
            continue;
        }
        let Some(Value::Object(expected)) = rec.get("expected") else {
            continue;
        };
        total += 1;
        let launches = reconstruct(body, &hints);
        let Some(first) = launches.first() else {
            failures.push(format!("{id}: no launch reconstructed"));
            continue;
        };
        let got = common_fields(first);
        let mut bad = Vec::new();
        for (k, want) in expected {
            if k == "notes" {
                continue;
            }
            let have = got.get(k).cloned().unwrap_or(Value::Null);
            if !same(&have, want) {
                bad.push(format!("  {k}: expected {want}, got {have}"));
            }
        }
        // Keys the text did not set must stay absent.
        if let Value::Object(g) = &got {
            for k in g.keys() {
                if !expected.contains_key(k) {
                    bad.push(format!(
                        "  {k}: not expected, got {}",
                        g.get(k).cloned().unwrap_or(Value::Null)
                    ));
                }
            }
        }
        if bad.is_empty() {
            passed += 1;
        } else {
            failures.push(format!("{id}:\n{}", bad.join("\n")));
        }
    }
    (passed, total, failures)
}

/// The public corpus as `corpus_file` finds it, and the copy kept in the repository when that is
/// another file: both are read and scored, so a fresh clone scores the same cases.
#[test]
fn public_corpus_matches_every_expected_field() {
    let kept = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/launch-public.jsonl");
    let mut paths = vec![corpus_file::public_corpus()];
    if paths[0] != kept {
        paths.push(kept);
    }
    for path in paths {
        let text = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("launch corpus {}: {e}", path.display()));
        let started = Instant::now();
        let (passed, total, failures) = score(&text);
        let elapsed = started.elapsed();
        // The score is part of the test's output (shown with --nocapture and on failure).
        #[allow(clippy::print_stderr)]
        {
            eprintln!(
                "launch corpus (public, {}): {passed}/{total} entries match ({elapsed:?})",
                path.display()
            );
        }
        assert!(
            total >= 40,
            "corpus at {} has {total} entries",
            path.display()
        );
        assert!(
            failures.is_empty(),
            "{}: {} of {total} corpus entries differ:\n{}",
            path.display(),
            failures.len(),
            failures.join("\n")
        );
    }
}

/// More real launch texts (public repositories and issues), labelled by the same rules
/// (`tests/data/launch-extra.jsonl`); kept apart from the public corpus so that its score is
/// reported on its own.
#[test]
fn extra_corpus_matches_every_expected_field() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/launch-extra.jsonl");
    let text = std::fs::read_to_string(&path).unwrap_or_default();
    let started = Instant::now();
    let (passed, total, failures) = score(&text);
    let elapsed = started.elapsed();
    #[allow(clippy::print_stderr)]
    {
        eprintln!("launch corpus (extra): {passed}/{total} entries match ({elapsed:?})");
    }
    assert!(
        failures.is_empty(),
        "{} of {total} extra corpus entries differ:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(
        total >= 110,
        "extra corpus at {} has {total} entries",
        path.display()
    );
}
