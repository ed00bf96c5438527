//! The configs embedded at build time, by every crate that embeds one (here `configs/engines/*.toml`
//! and `wrappers.toml`; the analysis's and the collector's own): each is parsed once, through one
//! `LazyLock` next to the code that reads it, by [`load`].
//!
//! They are our own files, compiled into the binary and parsed by
//! `tests::every_embedded_config_parses`: one that does not parse is a build defect, so it fails
//! loudly at first use instead of silently becoming an empty table (a broken `impact.toml` used to
//! lose every rule without a word).

use std::fmt::Display;

/// The parsed value of the embedded config (or built-in pattern) `file`; panics naming it when it
/// does not parse. The workspace's one loader of built-in data.
#[expect(
    clippy::panic,
    reason = "an embedded config is part of the build and checked by a test; it cannot fail on a user's input"
)]
pub fn load<T, E: Display>(file: &str, parsed: Result<T, E>) -> T {
    match parsed {
        Ok(value) => value,
        Err(e) => panic!("{file} (embedded at build time) does not parse: {e}"),
    }
}

#[cfg(test)]
mod tests {
    use probe_model::Engine;

    #[test]
    fn every_embedded_config_parses() {
        for e in Engine::ALL {
            assert!(
                !crate::catalog::catalog(e, None).entry_points.is_empty(),
                "configs/engines/{e}.toml has no entry points"
            );
        }
        assert!(
            !crate::wrappers::ancestor_names().is_empty(),
            "wrappers.toml"
        );
        let formats = crate::serving_formats::formats();
        assert!(
            !formats.kserve.model_formats.is_empty() && !formats.triton.entrypoint.is_empty(),
            "serving_formats.toml"
        );
    }

    #[test]
    fn a_broken_embedded_config_fails_loudly() {
        let r = std::panic::catch_unwind(|| {
            super::load("configs/x.toml", toml::from_str::<toml::Table>("[unclosed"))
        });
        assert!(r.is_err());
    }
}
