//! What a group's report shows besides the comparisons: the outliers ranked, and the baseline
//! (the reference's running launches, key packages, driver and GPUs).

use probe_model::{Change, Engine, HostDifferences, Impact, LaunchConfig, Snapshot};

use crate::compare::rank;

/// Packages named in the baseline besides the engines' own (each engine's definition's
/// `packages`, [`Engine::packages`]): the libraries a serving engine runs on.
const SERVING_LIBRARIES: &[&str] = &[
    "sgl-kernel",
    "torch",
    "transformers",
    "flashinfer-python",
    "triton",
    "xformers",
];

/// Whether the baseline names package `name`: an engine's (not [`Engine::Other`]'s, which is
/// no engine) or a serving library.
fn is_key_package(name: &str) -> bool {
    let engine = Engine::ALL
        .into_iter()
        .filter(|engine| *engine != Engine::Other)
        .any(|engine| engine.packages().iter().any(|package| package == name));
    engine || SERVING_LIBRARIES.contains(&name)
}

/// The hosts with differences, each one's ranked like a launch diff, the most severe first.
pub(super) fn ranked(per_host: Vec<Vec<Change>>, hosts: &[&str]) -> Vec<HostDifferences> {
    let mut outliers: Vec<HostDifferences> = per_host
        .into_iter()
        .zip(hosts)
        .filter(|(changes, _)| !changes.is_empty())
        .map(|(mut changes, host)| {
            rank(&mut changes);
            HostDifferences {
                host: host.to_string(),
                changes,
            }
        })
        .collect();
    outliers.sort_by(|a, b| {
        severity(&b.changes)
            .cmp(&severity(&a.changes))
            .then_with(|| a.host.cmp(&b.host))
    });
    outliers
}

/// (high, medium, low, count): more high-impact differences rank a host first.
fn severity(changes: &[Change]) -> (usize, usize, usize, usize) {
    // A consequence ranks with its cause and is not counted apart from it.
    let causes = || changes.iter().filter(|c| c.consequence_of.is_empty());
    let count = |impact: Impact| causes().filter(|c| c.impact == impact).count();
    (
        count(Impact::High),
        count(Impact::Medium),
        count(Impact::Low),
        causes().count(),
    )
}

/// One line per running launch, then key packages, then driver and GPUs.
pub(super) fn baseline(snapshot: &Snapshot, launches: &[LaunchConfig]) -> Vec<String> {
    let mut lines: Vec<String> = (launches.iter())
        .filter(|launch| launch.source.running)
        .map(launch_line)
        .collect();
    let packages = key_packages(snapshot);
    if !packages.is_empty() {
        lines.push(format!("packages: {}", packages.join(", ")));
    }
    let gpu = &snapshot.gpu;
    if let Some(driver) = &gpu.driver_version {
        lines.push(format!("driver {driver}"));
    }
    if let Some(name) = gpu.gpus.first().and_then(|first| first.name.as_deref()) {
        lines.push(format!("{} x {name}", gpu.gpus.len()));
    }
    lines
}

/// A running launch: engine, version, model and options.
fn launch_line(launch: &LaunchConfig) -> String {
    let mut line = launch.engine.as_str().to_string();
    if let Some(version) = &launch.engine_version {
        line.push_str(&format!(" {version}"));
    }
    if let Some(model) = &launch.model {
        line.push_str(&format!(", model {model}"));
    }
    let options: Vec<String> = launch
        .options
        .iter()
        .map(|(name, option)| format!("{name} {}", option.written))
        .collect();
    if !options.is_empty() {
        line.push_str(&format!(": {}", options.join(" ")));
    }
    line
}

/// The key packages of every environment (`name version`), in the order found, each once.
fn key_packages(snapshot: &Snapshot) -> Vec<String> {
    let mut packages: Vec<String> = Vec::new();
    for environment in &snapshot.python_envs {
        for package in &environment.packages {
            let entry = format!("{} {}", package.name, package.version);
            if is_key_package(&package.name) && !packages.contains(&entry) {
                packages.push(entry);
            }
        }
    }
    packages
}
