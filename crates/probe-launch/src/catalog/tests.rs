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
