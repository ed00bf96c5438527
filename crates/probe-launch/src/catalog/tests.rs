use super::*;

#[test]
fn every_catalog_parses_and_has_entry_points() {
    for (e, text) in sources() {
        let raw: Result<RawCatalog, _> = toml::from_str(text);
        assert!(raw.is_ok(), "{e}: {:?}", raw.err());
        assert!(
            toml::from_str::<RawCatalog>(&format!("{text}\nno_such_key = 1")).is_err(),
            "{e}: unknown keys must fail"
        );
        let c = catalog(e, None);
        assert_eq!(c.engine(), e);
        assert!(!c.entry_points.is_empty(), "{e} has no entry points");
    }
}

#[test]
fn version_order_is_numeric() {
    assert!(version_cmp("0.5.9", "0.5.16").is_lt());
    assert!(version_cmp("0.33.0", "0.8.5").is_gt());
    assert!(version_cmp("2.9.1+cu128", "2.9.1").is_eq());
    // Trailing zeros do not count; a number after them does.
    for (a, b, want) in [
        ("1.0", "1.0.0", std::cmp::Ordering::Equal),
        ("v1", "1.0.0", std::cmp::Ordering::Equal),
        ("1.0", "1.0.0.1", std::cmp::Ordering::Less),
        ("0.10.1rc2", "0.10.1", std::cmp::Ordering::Equal),
        ("0.9", "0.10", std::cmp::Ordering::Less),
        ("", "0", std::cmp::Ordering::Equal),
    ] {
        assert_eq!(version_cmp(a, b), want, "{a} vs {b}");
        assert_eq!(version_cmp(b, a), want.reverse(), "{b} vs {a}");
    }
}

/// Every engine's own benchmark tool is in exactly one definition's `[bench]`, with a name and
/// the backends its results name that engine's servers by; `[bench]` refuses unknown keys.
#[test]
fn every_engine_benchmark_tool_has_one_definition() {
    use probe_model::BenchmarkTool;
    for tool in [
        BenchmarkTool::SglangBenchServing,
        BenchmarkTool::VllmBenchServe,
    ] {
        let owners: Vec<Engine> = Engine::ALL
            .into_iter()
            .filter(|&e| {
                catalog(e, None)
                    .bench
                    .as_ref()
                    .is_some_and(|b| b.tool == tool)
            })
            .collect();
        assert_eq!(owners.len(), 1, "{tool:?} is defined by {owners:?}");
        let b = catalog(owners[0], None).bench.clone().unwrap();
        assert!(!b.name.is_empty() && !b.backends.is_empty(), "{b:?}");
    }
    let cases: &[(&str, bool)] = &[
        ("tool = \"vllm_bench_serve\"\nname = \"x\"", true),
        (
            "tool = \"vllm_bench_serve\"\nname = \"x\"\nbackend = [\"x\"]",
            false,
        ),
        ("tool = \"no_such_tool\"\nname = \"x\"", false),
    ];
    for (text, ok) in cases {
        assert_eq!(toml::from_str::<Bench>(text).is_ok(), *ok, "{text}");
    }
}
