//! Versions as catalogs order them: by release numbers, a range of releases.

/// Compares versions on their release numbers in PEP 440 terms ([`crate::version`]): a
/// catalog is per release, so a pre-release reads the catalog of its release (`0.10.1rc2` has
/// the flags of `0.10.1`), and `1.0` = `1.0.0`; the local part (`+cu128`) is ignored.
pub fn version_cmp(a: &str, b: &str) -> std::cmp::Ordering {
    version_key(a).cmp(&version_key(b))
}

/// The release numbers of a version, trailing zeros dropped (`v0.9.1rc1+cu124` -> 0, 9, 1).
pub(super) fn version_key(v: &str) -> Vec<u64> {
    crate::version::Version::parse(v).release().to_vec()
}

pub(super) fn in_range(version: Option<&str>, since: Option<&str>, until: Option<&str>) -> bool {
    let Some(v) = version else { return true };
    if let Some(s) = since
        && version_cmp(v, s).is_lt()
    {
        return false;
    }
    if let Some(u) = until
        && version_cmp(v, u).is_gt()
    {
        return false;
    }
    true
}
