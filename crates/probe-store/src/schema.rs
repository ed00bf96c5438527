//! What both stores stand on: the versions of the table layout (each store writes its own SQL
//! for them, `MIGRATIONS[n]` bringing version n to n + 1) and the indexed values a snapshot's
//! row carries.

use std::collections::{BTreeMap, BTreeSet};

use probe_model::Snapshot;

/// Version of the store's own table layout (not of the snapshot documents).
pub const STORE_SCHEMA_VERSION: u32 = 6;

/// The layout version that keeps documents as content-addressed sections: migrating to it moves
/// every stored document into sections (`content::split`) before its column is dropped.
pub(crate) const SECTIONS_VERSION: u32 = 3;

/// The layout version that keeps a snapshot as slots (`content::Slot`): its layout and what
/// changed since its host's bases in a frame of its own, the rest as counted references to
/// shared sections, and its indexed versions as a reference to a set of versions.
pub(crate) const SLOTS_VERSION: u32 = 4;

/// The layout version that keeps each snapshot's configuration fingerprint
/// ([`crate::Fingerprint`]); snapshots stored before it have theirs computed when read.
pub(crate) const FINGERPRINT_VERSION: u32 = 5;

/// Packages whose versions are indexed besides the engines' own (what engines are built on).
const BUILT_ON: &[&str] = &[
    "sgl-kernel",
    "torch",
    "transformers",
    "flashinfer-python",
    "triton",
];

/// Whether a package's version is indexed: an engine's (its definition's `packages`,
/// [`probe_model::Engine::packages`]) or one of [`BUILT_ON`].
fn is_indexed_package(name: &str) -> bool {
    BUILT_ON.contains(&name)
        || probe_model::Engine::ALL
            .into_iter()
            .any(|e| e.packages().iter().any(|p| p == name))
}

/// Engines and versions that get indexed columns.
pub(crate) fn indexed_values(snapshot: &Snapshot) -> (BTreeSet<String>, BTreeMap<String, String>) {
    let mut engines = BTreeSet::new();
    for process in &snapshot.processes {
        if let Some(engine) = process.engine {
            engines.insert(engine.as_str().to_string());
        }
    }
    for log in &snapshot.logs {
        for startup in &log.startups {
            if startup.engine != probe_model::Engine::Other {
                engines.insert(startup.engine.as_str().to_string());
            }
        }
    }
    let mut versions = BTreeMap::new();
    for environment in &snapshot.python_envs {
        for package in &environment.packages {
            if is_indexed_package(&package.name) {
                versions
                    .entry(package.name.clone())
                    .or_insert_with(|| package.version.clone());
            }
        }
    }
    if let Some(driver) = &snapshot.gpu.driver_version {
        versions.insert("nvidia-driver".into(), driver.clone());
    }
    if let Some(cuda) = &snapshot.gpu.cuda_version {
        versions.insert("cuda".into(), cuda.clone());
    }
    (engines, versions)
}

const _: () = assert!(
    SECTIONS_VERSION < SLOTS_VERSION
        && SLOTS_VERSION < FINGERPRINT_VERSION
        && FINGERPRINT_VERSION <= STORE_SCHEMA_VERSION
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_stores_migrate_to_the_same_layout_version() {
        assert_eq!(
            crate::sqlite::migrate::MIGRATIONS.len(),
            STORE_SCHEMA_VERSION as usize
        );
        assert_eq!(
            crate::postgres::migrate::MIGRATIONS.len(),
            STORE_SCHEMA_VERSION as usize
        );
    }
}
