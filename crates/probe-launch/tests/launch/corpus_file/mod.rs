//! Where the public launch corpus lives, for the corpus test and the launch benchmark:
//! `$PROBE_CORPUS` when set; else the project's shared copy, `../shared/corpus/launch-public.jsonl`
//! from the repository's root (it sits beside the checkouts and may be newer); else the copy
//! kept in the repository (`crates/probe-launch/tests/data/launch-public.jsonl`), so that a fresh clone always reads
//! a corpus and the test can never pass without reading a case.

use std::path::PathBuf;

/// The corpus to read. A path that does not exist is still returned: reading it then fails
/// loudly, naming it.
pub fn public_corpus() -> PathBuf {
    if let Some(p) = std::env::var_os("PROBE_CORPUS") {
        return PathBuf::from(p);
    }
    let crate_dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let shared = crate_dir.join("../../../shared/corpus/launch-public.jsonl");
    if shared.is_file() {
        return shared;
    }
    // `crates/<crate>/../probe-launch`: the same file from probe-launch's tests and probe-diff's bench.
    crate_dir.join("../probe-launch/tests/data/launch-public.jsonl")
}
