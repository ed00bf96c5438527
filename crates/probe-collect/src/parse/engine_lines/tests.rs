//! Tests of the log lines definitions: the embedded file compiles, a bad entry fails naming
//! its part, every engine has its parts, and the fast number path reads what the capture reads.

use super::defs::Entry;
use super::load::compile;
use super::read::read_entry;
use super::values::value_of;
use super::*;

#[test]
fn the_embedded_file_compiles() {
    assert!(log_lines().entries.len() >= 20);
    assert!(
        log_lines()
            .entries
            .iter()
            .all(|e| !e.marker.is_empty() && !e.values.is_empty())
    );
}

#[test]
fn a_metric_needs_a_name_and_a_group_that_exists() {
    let bad = [
        "[[metric]]\nengine='llama.cpp'\nmarker='a'\npattern='a(1)'\nsample='a1'\nvalues=[{group=1, key='k'}]",
        "[[limit]]\nengine='llama.cpp'\nmarker='a'\npattern='a(1)'\nsample='a1'\nvalues=[{group=2, key='k'}]",
        "[[limit]]\nengine='llama.cpp'\nmarker='a'\npattern='a(1)'\nsample='a1'\nvalues=[{group=1, key='k', typo=1}]",
        "[[limit]]\nengine='llama.cpp'\nmarker='a'\npattern='a(1'\nsample='a1'\nvalues=[{group=1, key='k'}]",
        // An engine name that is no engine.
        "[[limit]]\nengine='lama.cpp'\nmarker='a'\npattern='a(1)'\nsample='a1'\nvalues=[{group=1, key='k'}]",
        // `repeated` is a limit's.
        "[[metric]]\nengine='llama.cpp'\nmarker='a'\npattern='a(1)'\nsample='a1'\nrepeated=false\nvalues=[{group=1, name='n'}]",
    ];
    let good = "[[limit]]\nengine='llama.cpp'\nmarker='a'\npattern='a(1)'\nsample='a1'\nvalues=[{group=1, key='k'}]";
    assert!(compile(good).is_ok());
    for text in bad {
        assert!(compile(text).is_err(), "{text}");
    }
}

/// A planted engine definition that lacks a part, or whose part does not read its own
/// sample line, does not load, and the message names what is wrong.
/// `(definition, words the error holds)`.
#[test]
fn a_definition_missing_a_part_fails_naming_it() {
    let cases: &[(&str, &[&str])] = &[
        (
            "[[metric]]\nengine='ollama'\nmarker='eval rate:'\npattern='eval rate: ([0-9]+)'\nvalues=[{group=1, name='n'}]",
            &["missing field `sample`"],
        ),
        (
            "[[metric]]\nengine='ollama'\nmarker='eval rate:'\npattern='eval rate: ([0-9]+)'\nsample='eval rate: fast'\nvalues=[{group=1, name='n'}]",
            &["ollama", "eval rate:", "sample"],
        ),
        (
            "[[version]]\nengine='vllm'\nmarker='server version '\npattern='server version ([0-9.]+)'\ngroup=1",
            &["missing field `sample`"],
        ),
        (
            "[[version]]\nengine='sglang'\nmarker='sglang'\nignore-case=true\nunless='server_args='\npattern='(?i)sglang==([0-9.]+)'\nsample='server_args=x sglang==0.5.9'\ngroup=1",
            &["sglang", "sample"],
        ),
        (
            "[[prefix]]\nengines=['vllm']\nplace='message'\npattern='(INFO) '\nsample='INFO x'",
            &["anchored"],
        ),
        (
            "[[prefix]]\nengines=['vllm']\nplace='message'\npattern='^INFO ([0-9]{2})-([0-9]{2}) '\ntime='month-day'\nsample='INFO 04-28 x'",
            &["5 groups"],
        ),
        (
            "[[prefix]]\nengines=[]\nplace='message'\npattern='^INFO '\nsample='INFO x'",
            &["no engine"],
        ),
        (
            "[[block]]\nengine='tgi'\nmarker='Args {'\nlogger='text_generation_launcher'\nholds='model_id:'\nsample='Args { x: 1 }'",
            &["tgi", "sample"],
        ),
        (
            "[[startup]]\nengine='sglang'\nmarker='server_args='\npattern='server_args=(.*)'\nsample='server_args=x'\ngroup=1\nversioned=true\n[[version]]\nengine='sglang'\nmarker='v'\npattern='v(1)'\nsample='v1'\ngroup=1\nversioned=true",
            &["only a start-up line is `versioned`"],
        ),
    ];
    for (text, words) in cases {
        let err = compile(text)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        for w in *words {
            assert!(err.contains(w), "{text}: {err:?} lacks {w:?}");
        }
    }
}

/// Every entry of the embedded file has a sample, and the file has every kind of entry
/// for the engines whose logs probe reads start to end.
#[test]
fn every_engine_has_its_parts() {
    let samples = samples();
    assert!(samples.iter().all(|s| !s.line.is_empty()));
    let has = |engine: &str, f: &dyn Fn(&Reads) -> bool| {
        samples.iter().any(|s| s.engine == engine && f(&s.reads))
    };
    for engine in ["sglang", "vllm", "ollama"] {
        assert!(has(engine, &|r| *r == Reads::Version), "{engine}: version");
        assert!(has(engine, &|r| *r == Reads::Startup), "{engine}: start-up");
        assert!(
            has(engine, &|r| matches!(r, Reads::Limits(_))),
            "{engine}: limits"
        );
        assert!(
            has(engine, &|r| matches!(r, Reads::Metrics(_))),
            "{engine}: metrics"
        );
    }
    for engine in ["llama.cpp", "tgi", "lmdeploy", "trtllm"] {
        assert!(
            has(engine, &|r| matches!(
                r,
                Reads::Metrics(_) | Reads::Limits(_)
            )),
            "{engine}: metric or limit lines"
        );
    }
}

/// The engines read end to end through their own start-up and speed lines (issue 32 item
/// 3): LMDeploy logs no version line (its version is its package's) but its engine config
/// at each start; TensorRT-LLM logs its version and resolved limits, its options being the
/// command line and the options file. Each has a time-stamped prefix of its own.
#[test]
fn lmdeploy_and_trtllm_have_their_parts() {
    let samples = samples();
    let has = |engine: &str, f: &dyn Fn(&Reads) -> bool| {
        samples.iter().any(|s| s.engine == engine && f(&s.reads))
    };
    assert!(has("lmdeploy", &|r| *r == Reads::Startup));
    assert!(has("trtllm", &|r| *r == Reads::Version));
    assert!(has("trtllm", &|r| matches!(r, Reads::Limits(_))));
    for engine in ["lmdeploy", "trtllm"] {
        assert!(has(engine, &|r| matches!(r, Reads::Metrics(_))), "{engine}");
        assert!(
            has(engine, &|r| matches!(r, Reads::Prefix { time: true, .. })),
            "{engine}: a time-stamped prefix"
        );
    }
}

/// An entry read by a plain `find` (its value the number its match ends with) reads what
/// the capture reads, on every sample line and on numbers that are not plain.
#[test]
fn the_plain_number_path_reads_what_the_capture_reads() {
    let l = log_lines();
    let fast: Vec<&'static Entry> = l.entries.iter().filter(|e| e.suffix.is_some()).collect();
    // SGLang's decode and prefill lines and most of vLLM's.
    assert!(fast.len() >= 15, "{}", fast.len());
    let mut lines: Vec<String> = l.entries.iter().map(|e| e.sample.clone()).collect();
    lines.extend(
        [
            "Decode batch, #running-req: 1.2.3, accept len: 07, gen throughput (token/s): 1e5",
            "Avg prompt throughput: .5 tokens/s, Running: 3.5 reqs, GPU KV cache usage: 9.%",
            "Decode batch, #queue-req: 99999999999999999999999999999999999999999",
        ]
        .map(String::from),
    );
    for e in fast {
        let mut loc = e.pattern.capture_locations();
        for line in &lines {
            let mut got = Vec::new();
            read_entry(e, &mut loc, line, &mut got);
            let slow = e.pattern.captures(line).and_then(|c| {
                e.values
                    .first()
                    .and_then(|v| value_of(|g| c.get(g).map(|m| m.as_str()), v))
            });
            let fast_value = got.first().map(|f| match f {
                Found::Metric { value, .. } | Found::Limit { value, .. } => *value,
            });
            assert_eq!(fast_value, slow, "{}: {line}", e.pattern.as_str());
        }
    }
}

#[test]
fn durations() {
    let cases: &[(&str, Option<f64>)] = &[
        ("49.697663ms", Some(49.697663)),
        ("1.194364886s", Some(1194.364886)),
        ("67.59µs", Some(0.06759)),
        ("67.59us", Some(0.06759)),
        ("3ns", Some(0.000003)),
        ("2m", Some(120_000.0)),
        ("12", None),
        ("ms", None),
        ("1.2.3ms", None),
    ];
    for (text, want) in cases {
        let got = duration_ms(text);
        match (got, want) {
            (Some(g), Some(w)) => assert!((g - w).abs() < 1e-9, "{text}: {g}"),
            _ => assert_eq!(got, *want, "{text}"),
        }
    }
}
