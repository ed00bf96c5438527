//! Version-specific catalogs: the SGLang and vLLM catalogs narrowed to a release agree with that
//! release's real argument parser (the readings under `scripts/catalog-sources/`), and a few facts
//! that differ between releases are checked one by one.

use std::collections::BTreeMap;
use std::path::PathBuf;

use probe_launch::catalog::{Catalog, ValueKind, catalog, version_cmp};
use probe_launch::{ParseHints, reconstruct};
use probe_model::Engine;
use serde_json::json;

fn sglang(version: &str) -> &'static Catalog {
    catalog(Engine::Sglang, Some(version))
}

fn vllm(version: &str) -> &'static Catalog {
    catalog(Engine::Vllm, Some(version))
}

fn parse(text: &str, version: &str) -> probe_model::LaunchConfig {
    let hints = ParseHints {
        engine_version: Some(version.to_string()),
        ..ParseHints::default()
    };
    reconstruct(text, &hints)
        .into_iter()
        .next()
        .unwrap_or_default()
}

#[test]
fn option_absent_before_its_since() {
    // SGLang --dcp-size arrived in 0.5.15; vLLM --attention-backend in 0.12.0.
    assert!(sglang("0.5.9").get("dcp-size").is_none());
    assert!(sglang("0.5.14").get("dcp-size").is_none());
    assert!(sglang("0.5.15").get("dcp-size").is_some());
    assert!(sglang("0.5.23").get("dcp-size").is_some());
    assert!(vllm("0.11.0").get("attention-backend").is_none());
    assert!(vllm("0.33.0").get("attention-backend").is_some());
    // Gone after its until: vLLM --swap-space (last in 0.17.1).
    assert!(vllm("0.17.1").get("swap-space").is_some());
    assert!(vllm("0.18.0").get("swap-space").is_none());
    // The version-less catalog knows every release's options.
    assert!(catalog(Engine::Vllm, None).get("swap-space").is_some());
    // A post release is its base release.
    assert!(vllm("0.8.5.post1").get("swap-space").is_some());
}

#[test]
fn default_differs_between_releases() {
    let v11 = vllm("0.11.0").get("gpu-memory-utilization");
    let v33 = vllm("0.33.0").get("gpu-memory-utilization");
    assert_eq!(v11.and_then(|o| o.default.clone()), Some(json!(0.9)));
    assert_eq!(v33.and_then(|o| o.default.clone()), Some(json!(0.92)));
    // The version-less catalog says where it changed.
    let any = catalog(Engine::Vllm, None).get("gpu-memory-utilization");
    assert_eq!(
        any.and_then(|o| o.default_in(Some("0.19.1"))),
        Some(json!(0.9))
    );
    assert_eq!(
        any.and_then(|o| o.default_in(Some("0.20.0"))),
        Some(json!(0.92))
    );
    // vLLM --disable-log-requests: its own option, off by default up to 0.10.0, on (deprecated)
    // from 0.10.1, gone in 0.17; 0.33 reads the spelling as the negation of --enable-log-requests.
    let old = vllm("0.10.0").get("disable-log-requests");
    assert_eq!(old.and_then(|o| o.default.clone()), Some(json!(false)));
    let mid = vllm("0.11.0").get("disable-log-requests");
    assert_eq!(mid.and_then(|o| o.default.clone()), Some(json!(true)));
    assert!(mid.is_some_and(|o| o.deprecated));
    let new = vllm("0.33.0").lookup_exact("--disable-log-requests");
    assert_eq!(
        new.map(|(o, negated)| (o.name.as_str(), negated)),
        Some(("enable-log-requests", true))
    );
    // SGLang 0.5.9 --fp4-gemm-backend defaulted to flashinfer_cutlass, 0.5.10 to auto.
    let fp4 = |v: &str| {
        sglang(v)
            .get("fp4-gemm-backend")
            .and_then(|o| o.default.clone())
    };
    assert_eq!(fp4("0.5.9"), Some(json!("flashinfer_cutlass")));
    assert_eq!(fp4("0.5.10"), Some(json!("auto")));
}

#[test]
fn kinds_and_aliases_follow_the_release() {
    // SGLang --context-length takes a human-readable int (`128k`) from 0.5.10 on only.
    let kind = |v: &str| sglang(v).get("context-length").map(|o| o.kind.clone());
    assert_eq!(kind("0.5.9"), Some(ValueKind::Int));
    assert_eq!(kind("0.5.10"), Some(ValueKind::HumanInt));
    assert_eq!(kind("0.5.23"), Some(ValueKind::HumanInt));
    let l = parse(
        "python -m sglang.launch_server --model-path m --context-length 128k",
        "0.5.23",
    );
    assert_eq!(
        l.options.get("context-length").map(|o| o.value.clone()),
        Some(json!(128000))
    );
    // vLLM `-O`: --compilation-config up to 0.11, --optimization-level from 0.12 (argv rewrite).
    let o = |v: &str| {
        vllm(v)
            .lookup_exact("-O")
            .map(|(spec, _)| spec.name.clone())
    };
    assert_eq!(o("0.11.0").as_deref(), Some("compilation-config"));
    assert_eq!(o("0.33.0").as_deref(), Some("optimization-level"));
    assert!(vllm("0.11.0").lookup_exact("-cc").is_none());
    assert!(vllm("0.33.0").lookup_exact("-cc").is_some());
    // Full choice lists where the parser has them.
    let attention = sglang("0.5.23")
        .get("attention-backend")
        .map(|o| o.kind.clone());
    assert!(
        matches!(&attention, Some(ValueKind::Choice(c)) if c.iter().any(|x| x == "fa3")),
        "{attention:?}"
    );
    // SGLang <= 0.5.13 spelt --tp-size first as --tensor-parallel-size: one option, one key.
    let tp = sglang("0.5.9").lookup_exact("--tensor-parallel-size");
    assert_eq!(
        tp.map(|(o, _)| (o.name.as_str(), o.common.as_deref())),
        Some(("tp-size", Some("tensor_parallel")))
    );
}

#[test]
fn renamed_prefix_becomes_ambiguous() {
    let text = "python -m sglang.launch_server --model-path m --cuda-graph-max-bs 8";
    // Before the rename the spelling is the option itself; 0.5.14-0.5.19 accept it as a
    // deprecated alias of --cuda-graph-max-bs-decode; from 0.5.20 it is only a prefix of
    // --cuda-graph-max-bs-decode and --cuda-graph-max-bs-prefill, which argparse rejects.
    for version in ["0.5.9", "0.5.14", "0.5.19"] {
        let l = parse(text, version);
        assert!(
            l.options.contains_key("cuda-graph-max-bs-decode"),
            "{version}: {:?}",
            l.options.keys().collect::<Vec<_>>()
        );
        assert!(
            !l.warnings.iter().any(|w| w.contains("ambiguous")),
            "{version}: {:?}",
            l.warnings
        );
    }
    for version in ["0.5.20", "0.5.21", "0.5.23"] {
        let l = parse(text, version);
        assert!(
            l.warnings.iter().any(|w| w.contains("ambiguous")),
            "{version}: {:?}",
            l.warnings
        );
        let candidates = sglang(version).prefix_candidates("--cuda-graph-max-bs");
        assert_eq!(candidates.len(), 2, "{version}");
    }
}

fn sources() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scripts/catalog-sources")
}

/// Every reading: (version, options), `same_as` stubs resolved.
fn readings(engine: &str) -> Vec<(String, Vec<toml::Table>)> {
    let mut docs: BTreeMap<String, toml::Table> = BTreeMap::new();
    let entries = std::fs::read_dir(sources()).expect("scripts/catalog-sources");
    for entry in entries.flatten() {
        let file = entry.file_name().to_string_lossy().to_string();
        let Some(version) = file
            .strip_prefix(&format!("{engine}-"))
            .and_then(|rest| rest.strip_suffix(".toml"))
        else {
            continue;
        };
        let text = std::fs::read_to_string(entry.path()).expect("reading");
        docs.insert(version.to_string(), text.parse().expect("toml"));
    }
    let mut versions: Vec<&String> = docs.keys().collect();
    versions.sort_by(|a, b| version_cmp(a, b));
    let mut out = Vec::new();
    for version in versions {
        let mut doc = &docs[version];
        if let Some(toml::Value::String(base)) = doc.get("same_as") {
            doc = &docs[base];
        }
        let options = match doc.get("option") {
            Some(toml::Value::Array(a)) => a.iter().filter_map(|o| o.as_table().cloned()).collect(),
            _ => Vec::new(),
        };
        out.push((version.clone(), options));
    }
    out
}

fn arity(kind: &ValueKind) -> &'static str {
    match kind {
        ValueKind::Bool => "none",
        ValueKind::List => "one-or-more",
        ValueKind::OptionalStr | ValueKind::BoolOptional => "optional",
        _ => "one",
    }
}

fn reading_arity(kind: &str) -> &'static str {
    match kind {
        "bool" => "none",
        "list" => "one-or-more",
        "opt" | "bool_opt" => "optional",
        _ => "one",
    }
}

/// The catalog narrowed to each release read accepts exactly that release's spellings, with the
/// same arity and default.
#[test]
fn narrowed_catalogs_match_every_reading() {
    for (engine, label) in [(Engine::Sglang, "sglang"), (Engine::Vllm, "vllm")] {
        let all = readings(label);
        assert!(all.len() >= 20, "{label}: {} readings", all.len());
        for (version, options) in &all {
            let cat = catalog(engine, Some(version));
            let mut spellings = Vec::new();
            for o in options {
                let name = o.get("name").and_then(|v| v.as_str()).unwrap_or("");
                let kind = o.get("kind").and_then(|v| v.as_str()).unwrap_or("str");
                let spelling = format!("--{name}");
                let Some((spec, false)) = cat.lookup_exact(&spelling) else {
                    panic!("{label} {version}: {spelling} not in the catalog");
                };
                assert_eq!(
                    arity(&spec.kind),
                    reading_arity(kind),
                    "{label} {version}: arity of {spelling}"
                );
                if spec.name == name
                    && let Some(default) = o.get("default")
                    && !default.is_array()
                {
                    let want = serde_json::to_value(default).unwrap_or_default();
                    let got = spec.default.clone().unwrap_or_default();
                    let same = match (want.as_f64(), got.as_f64()) {
                        (Some(a), Some(b)) => a == b,
                        _ => want == got,
                    };
                    assert!(
                        same,
                        "{label} {version}: default of {spelling}: {want} vs {got}"
                    );
                }
                spellings.push(spelling.clone());
                for key in ["aliases", "negations"] {
                    if let Some(toml::Value::Array(a)) = o.get(key) {
                        for s in a.iter().filter_map(|s| s.as_str()) {
                            assert!(
                                cat.lookup_exact(s).is_some(),
                                "{label} {version}: {s} ({key} of {spelling})"
                            );
                            spellings.push(s.to_string());
                        }
                    }
                }
            }
            // And nothing more: every option of the narrowed catalog is spelt in the reading
            // (hand-added spellings older than every release read have an `until` before it).
            for spec in cat.options() {
                let own = format!("--{}", spec.name);
                let known = spellings.contains(&own)
                    || spec.aliases.iter().any(|a| spellings.contains(a))
                    || spec
                        .renamed_from
                        .iter()
                        .any(|(old, _)| spellings.contains(&format!("--{old}")));
                assert!(
                    known,
                    "{label} {version}: catalog has {own}, the parser does not"
                );
            }
        }
    }
}

#[test]
fn default_changes_between_releases_are_reported_from_the_data() {
    let keys = |before: &str, after: &str| -> Vec<(String, Option<String>)> {
        let old = parse("vllm serve m", before);
        let new = parse("vllm serve m", after);
        probe_diff::compare_launches(&old, &new)
            .changes
            .into_iter()
            .filter(|c| c.key != "engine_version")
            .map(|c| (c.key, c.note))
            .collect()
    };
    // 0.19.1 -> 0.20.0: --gpu-memory-utilization 0.9 -> 0.92, said as a default change.
    let changes = keys("0.19.1", "0.20.0");
    let gpu = changes.iter().find(|(k, _)| k == "gpu-memory-utilization");
    assert!(
        gpu.and_then(|(_, note)| note.as_deref())
            .is_some_and(|n| n.contains("default changed") && n.contains("0.92")),
        "{changes:?}"
    );
    // 0.31 -> 0.33: --disable-cascade-attn went from true to None (resolved at start-up): not a
    // known change, so not claimed.
    let changes = keys("0.31.0", "0.33.0");
    assert!(
        !changes.iter().any(|(k, _)| k == "disable-cascade-attn"),
        "{changes:?}"
    );
    let spec = catalog(Engine::Vllm, None).get("disable-cascade-attn");
    assert_eq!(
        spec.and_then(|o| o.default_in(Some("0.31.0"))),
        Some(json!(true))
    );
    assert_eq!(spec.and_then(|o| o.default_in(Some("0.33.0"))), None);
}
