//! Keeps the written-down architecture true: the crate dependency table in
//! `docs/ARCHITECTURE.md` must match the `[dependencies]` of every crate, and `.ci/run` must run the
//! README's test command; each crate has one integration-test binary.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// `crate -> allowed crates of ours`, read from the "Allowed dependencies" table.
fn documented_edges() -> BTreeMap<String, BTreeSet<String>> {
    let doc = std::fs::read_to_string(root().join("docs/ARCHITECTURE.md")).unwrap();
    let section = doc
        .split("## Allowed dependencies")
        .nth(1)
        .expect("section present");
    let mut edges = BTreeMap::new();
    for line in section.lines().skip_while(|l| !l.starts_with('|')) {
        if !line.starts_with('|') {
            break;
        }
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        let (Some(name), Some(deps)) = (cells.get(1), cells.get(2)) else {
            continue;
        };
        if !name.starts_with("probe-") {
            continue;
        }
        let deps: BTreeSet<String> = if deps.contains("all of the above") {
            [
                "probe-model",
                "probe-transport",
                "probe-launch",
                "probe-collect",
                "probe-diff",
                "probe-store",
            ]
            .into_iter()
            .map(String::from)
            .collect()
        } else {
            deps.split(',')
                .map(str::trim)
                .filter(|d| d.starts_with("probe-"))
                .map(String::from)
                .collect()
        };
        edges.insert(name.to_string(), deps);
    }
    edges
}

#[test]
fn crate_dependencies_match_architecture_doc() {
    let documented = documented_edges();
    let mut seen = BTreeSet::new();
    for entry in std::fs::read_dir(root().join("crates")).unwrap() {
        let dir = entry.unwrap().path();
        let manifest: toml::Table =
            toml::from_str(&std::fs::read_to_string(dir.join("Cargo.toml")).unwrap()).unwrap();
        let name = manifest["package"]["name"].as_str().unwrap().to_string();
        let actual: BTreeSet<String> = manifest
            .get("dependencies")
            .and_then(|d| d.as_table())
            .map(|t| {
                t.keys()
                    .filter(|k| k.starts_with("probe-"))
                    .cloned()
                    .collect()
            })
            .unwrap_or_default();
        let allowed = documented
            .get(&name)
            .unwrap_or_else(|| panic!("{name} is missing from docs/ARCHITECTURE.md"));
        assert_eq!(
            &actual, allowed,
            "{name}: [dependencies] differ from docs/ARCHITECTURE.md"
        );
        seen.insert(name);
    }
    let documented_names: BTreeSet<String> = documented.keys().cloned().collect();
    assert_eq!(
        seen, documented_names,
        "crates on disk vs crates documented"
    );
}

#[test]
fn ci_runs_the_readme_test_command() {
    let ci = std::fs::read_to_string(root().join(".ci/run")).unwrap();
    let test_command = ci
        .lines()
        .rev()
        .find(|l| l.starts_with("cargo test"))
        .expect(".ci/run runs cargo test");
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap_or_default();
    assert!(
        readme.contains(test_command),
        "README.md must show the test command `.ci/run` runs: {test_command}"
    );
}

/// Git keeps no empty directory, so a tree that passes here with one would differ on a fresh
/// clone: a fixture that writes into it works on the machine that made it and fails in CI.
#[test]
fn no_directory_in_the_sources_is_empty() {
    fn walk(dir: &std::path::Path, empty: &mut Vec<PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        let mut any = false;
        for entry in entries.flatten() {
            any = true;
            let path = entry.path();
            let is_dir = entry.file_type().map(|t| t.is_dir()).unwrap_or(false);
            if is_dir && entry.file_name() != "target" && entry.file_name() != ".git" {
                walk(&path, empty);
            }
        }
        if !any {
            empty.push(dir.to_path_buf());
        }
    }
    let mut empty = Vec::new();
    for top in ["crates", "configs", "docs", "benches", ".ci"] {
        walk(&root().join(top), &mut empty);
    }
    assert!(
        empty.is_empty(),
        "empty directories (git does not keep them; add a file or make them in prepare.sh): {empty:?}"
    );
}

/// ARCHITECTURE's "test layout": one integration-test binary per crate (`tests/NAME.rs` or
/// `tests/NAME/main.rs`, as Cargo finds them), so the crate and its dependencies link once; the
/// one exception is written down there with its reason.
#[test]
fn one_integration_test_binary_per_crate() {
    const EXCEPTIONS: &[&str] = &["probe-transport/tests/ssh_rss.rs"];
    let mut extra = Vec::new();
    for krate in std::fs::read_dir(root().join("crates")).unwrap().flatten() {
        let Ok(entries) = std::fs::read_dir(krate.path().join("tests")) else {
            continue;
        };
        let mut binaries: Vec<String> = entries
            .flatten()
            .filter(|e| {
                let path = e.path();
                path.extension().is_some_and(|x| x == "rs") || path.join("main.rs").is_file()
            })
            .map(|e| {
                format!(
                    "{}/tests/{}",
                    krate.file_name().to_string_lossy(),
                    e.file_name().to_string_lossy()
                )
            })
            .filter(|name| !EXCEPTIONS.contains(&name.as_str()))
            .collect();
        binaries.sort();
        if binaries.len() > 1 {
            extra.push(binaries);
        }
    }
    assert!(
        extra.is_empty(),
        "more than one integration-test binary in a crate (make them modules of one): {extra:?}"
    );
}
