//! Where the public launch corpus lives, for the corpus test and the launch benchmark:
//! `$PROBE_CORPUS` when set, else `../shared/corpus/launch-public.jsonl` from the repository's
//! root (the project's shared material sits beside its checkouts), found from
//! `CARGO_MANIFEST_DIR` so that it holds wherever the repository is.

use std::path::PathBuf;

/// `Ok(path)` to read; `Err(path)` when nothing is there (the only case a caller may skip).
/// A path named by `$PROBE_CORPUS`, or one whose existence cannot be checked, is `Ok`: reading
/// it then fails loudly.
pub fn public_corpus() -> Result<PathBuf, PathBuf> {
    if let Some(p) = std::env::var_os("PROBE_CORPUS") {
        return Ok(PathBuf::from(p));
    }
    let repo = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let path = repo.join("../shared/corpus/launch-public.jsonl");
    match path.try_exists() {
        Ok(false) => Err(path),
        _ => Ok(path),
    }
}
