//! Engine option catalogs: what each engine's command line accepts, as data.
//!
//! The catalogs live in `configs/engines/<engine>.toml` and are embedded at build time. Each one
//! lists the engine's entry points (binaries, Python modules, container images), every option with
//! its aliases, arity, value type and units, default, cross-engine `common` key, category, and the
//! versions in which a spelling exists. [`catalog`] returns the catalog of one engine, narrowed to
//! one version when the installed version is known.

mod bench;
mod equal;
mod narrow;
mod raw;
mod spec;
mod versions;

pub use bench::Bench;
pub use equal::{display, normalize, parse_bool, values_equal};
pub use spec::{
    Catalog, EntryKind, EntryPoint, EnvPart, Environment, OptionSpec, PythonApi, SpeculativeRules,
    StartupArgs, Units, ValueKind, VersionVariant,
};
pub use versions::version_cmp;

use std::collections::HashMap;
use std::sync::{LazyLock, Mutex, OnceLock};

use probe_model::Engine;

use narrow::build;
use raw::RawCatalog;

/// Each engine's definition (`configs/engines/<engine>.toml`, embedded by probe-model).
fn sources() -> impl Iterator<Item = (Engine, &'static str)> {
    Engine::ALL.into_iter().map(|e| (e, e.definition()))
}

/// The embedded catalogs, parsed once ([`crate::embedded::load`]: a broken one fails loudly
/// instead of silently leaving an engine without options).
static RAW: LazyLock<Vec<(Engine, RawCatalog)>> = LazyLock::new(|| {
    sources()
        .map(|(e, text)| {
            let file = format!("configs/engines/{e}.toml");
            (e, crate::embedded::load(&file, toml::from_str(text)))
        })
        .collect()
});

fn source(engine: Engine) -> RawCatalog {
    RAW.iter()
        .find(|(e, _)| *e == engine)
        .map(|(_, r)| r.clone())
        .unwrap_or_default()
}

/// Version-less catalogs: every spelling any known version accepts.
fn base_catalogs() -> &'static HashMap<Engine, &'static Catalog> {
    static BASE: OnceLock<HashMap<Engine, &'static Catalog>> = OnceLock::new();
    BASE.get_or_init(|| {
        Engine::ALL
            .into_iter()
            .map(|e| {
                let c: &'static Catalog = Box::leak(Box::new(build(e, source(e), None)));
                (e, c)
            })
            .collect()
    })
}

/// Narrowed catalogs, by engine and position of the version among the catalog's bounds (versions
/// below, versions below or equal: at most two per bound plus one), and the version strings
/// already placed, so a version asked again (every log line of a server asks) costs one lookup,
/// not two comparisons with every bound.
#[derive(Default)]
struct VersionCache {
    by_position: HashMap<(Engine, usize, usize), &'static Catalog>,
    by_string: HashMap<(Engine, String), &'static Catalog>,
}

/// Versions come from remote hosts: bound how many catalogs and strings are kept.
const MAX_VERSIONED: usize = 4096;

/// The catalog of `engine`, narrowed to `version` when it is given (options added later or dropped
/// earlier are left out, renamed spellings follow the version).
pub fn catalog(engine: Engine, version: Option<&str>) -> &'static Catalog {
    static VERSIONED: OnceLock<Mutex<VersionCache>> = OnceLock::new();
    let base = base_catalogs();
    let fallback = || -> &'static Catalog {
        match base.get(&engine) {
            Some(c) => c,
            None => Box::leak(Box::new(build(engine, RawCatalog::default(), None))),
        }
    };
    let Some(v) = version
        .map(str::trim)
        .filter(|v| !v.is_empty() && v.len() < 64)
    else {
        return fallback();
    };
    // Only narrow to a version when the version string looks like one.
    if !v
        .trim_start_matches(['v', 'V'])
        .starts_with(|c: char| c.is_ascii_digit())
    {
        return fallback();
    }
    let cache = VERSIONED.get_or_init(|| Mutex::new(VersionCache::default()));
    let Ok(mut cache) = cache.lock() else {
        return fallback();
    };
    if let Some(c) = cache.by_string.get(&(engine, v.to_string())) {
        return c;
    }
    let bounds = fallback().bounds.as_slice();
    let below = bounds.iter().filter(|b| version_cmp(b, v).is_lt()).count();
    let at_or_below = bounds.iter().filter(|b| version_cmp(b, v).is_le()).count();
    let key = (engine, below, at_or_below);
    let c = match cache.by_position.get(&key) {
        Some(c) => *c,
        None if cache.by_position.len() >= MAX_VERSIONED => return fallback(),
        None => {
            let c: &'static Catalog = Box::leak(Box::new(build(engine, source(engine), Some(v))));
            cache.by_position.insert(key, c);
            c
        }
    };
    if cache.by_string.len() < MAX_VERSIONED {
        cache.by_string.insert((engine, v.to_string()), c);
    }
    c
}

#[cfg(test)]
mod tests;
