//! Small helpers the benchmarks share: summary statistics and finding a peer program.

/// (median, min, max) of the samples; NaN for none.
pub fn median_min_max(v: &[f64]) -> (f64, f64, f64) {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    (
        v.get(v.len() / 2).copied().unwrap_or(f64::NAN),
        v.first().copied().unwrap_or(f64::NAN),
        v.last().copied().unwrap_or(f64::NAN),
    )
}

/// The `ansible` program: `$PROBE_BENCH_ANSIBLE`, else the first on the PATH.
pub fn ansible() -> Option<String> {
    if let Ok(p) = std::env::var("PROBE_BENCH_ANSIBLE") {
        return Some(p);
    }
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|d| d.join("ansible"))
            .find(|p| p.is_file())
            .map(|p| p.display().to_string())
    })
}
