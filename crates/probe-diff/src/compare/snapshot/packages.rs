//! The Python packages of the environments that serve, compared interpreter by interpreter,
//! each change with how the host says it was installed.

use std::collections::{BTreeMap, BTreeSet, HashSet};

use probe_model::{PythonEnv, Snapshot};
use serde_json::Value;

use super::collector::{Collector, kind_of};
use crate::impact::{Area, Subject, compare_versions};

fn serving_envs(snapshot: &Snapshot) -> Vec<&PythonEnv> {
    let serving: Vec<&PythonEnv> = snapshot
        .python_envs
        .iter()
        .filter(|env| !env.used_by.is_empty())
        .collect();
    if serving.is_empty() {
        snapshot.python_envs.iter().collect()
    } else {
        serving
    }
}

pub(super) fn compare_packages(before: &Snapshot, after: &Snapshot, collector: &mut Collector) {
    let pairs = paired_envs(&serving_envs(before), &serving_envs(after));
    let several = pairs.len() > 1;
    for (before_env, after_env) in pairs {
        compare_env(after, (before_env, after_env), several, collector);
    }
}

/// The environments of both sides paired by interpreter or prefix; when one is left on each
/// side, those two.
fn paired_envs<'a>(
    before_envs: &[&'a PythonEnv],
    after_envs: &[&'a PythonEnv],
) -> Vec<(&'a PythonEnv, &'a PythonEnv)> {
    let mut pairs: Vec<(&PythonEnv, &PythonEnv)> = Vec::new();
    let mut after_used: HashSet<usize> = HashSet::new();
    let mut before_left = Vec::new();
    for before_env in before_envs {
        let found = after_envs.iter().enumerate().find(|(index, after_env)| {
            !after_used.contains(index)
                && (after_env.interpreter == before_env.interpreter
                    || (before_env.prefix.is_some() && after_env.prefix == before_env.prefix))
        });
        match found {
            Some((index, after_env)) => {
                after_used.insert(index);
                pairs.push((before_env, after_env));
            }
            None => before_left.push(*before_env),
        }
    }
    let after_left: Vec<&PythonEnv> = after_envs
        .iter()
        .enumerate()
        .filter(|(index, _)| !after_used.contains(index))
        .map(|(_, env)| *env)
        .collect();
    if let ([only_before], [only_after]) = (before_left.as_slice(), after_left.as_slice()) {
        pairs.push((only_before, only_after));
    }
    pairs
}

fn versions_of(env: &PythonEnv) -> BTreeMap<&str, &str> {
    env.packages
        .iter()
        .map(|package| (package.name.as_str(), package.version.as_str()))
        .collect()
}

/// One pair of environments, package by package (`after` is the snapshot `envs.1` is of).
fn compare_env(
    after: &Snapshot,
    envs: (&PythonEnv, &PythonEnv),
    several: bool,
    collector: &mut Collector,
) {
    let (before_env, after_env) = envs;
    let before_packages = versions_of(before_env);
    let after_packages = versions_of(after_env);
    let names: BTreeSet<&str> = before_packages
        .keys()
        .chain(after_packages.keys())
        .copied()
        .collect();
    for name in names {
        let before_version = before_packages.get(name).copied();
        let after_version = after_packages.get(name).copied();
        if before_version == after_version {
            continue;
        }
        let kind = kind_of(&before_version, &after_version);
        let note = match (
            version_note(envs, before_version, after_version),
            after_version.and_then(|_| installed_by(after, after_env, name)),
        ) {
            (Some(n), Some(by)) => Some(format!("{n}, {by}")),
            (n, _) => n,
        };
        let before_value = before_version.map(Value::from);
        let after_value = after_version.map(Value::from);
        let subject = Subject::new(Area::Package, name, kind)
            .values(before_value.as_ref(), after_value.as_ref());
        let key = if several {
            format!("package:{name}@{}", after_env.interpreter)
        } else {
            format!("package:{name}")
        };
        collector.push(&subject, key, note);
    }
}

/// What happened to a package in its environment: upgraded, downgraded, rebuilt, installed or
/// gone.
fn version_note(
    (before_env, after_env): (&PythonEnv, &PythonEnv),
    before_version: Option<&str>,
    after_version: Option<&str>,
) -> Option<String> {
    match (before_version, after_version) {
        (Some(a), Some(b)) => Some(match compare_versions(a, b) {
            std::cmp::Ordering::Less => format!("upgraded in {}", after_env.interpreter),
            std::cmp::Ordering::Greater => format!("downgraded in {}", after_env.interpreter),
            std::cmp::Ordering::Equal => format!("rebuilt in {}", after_env.interpreter),
        }),
        (None, Some(_)) => Some(format!("installed in {}", after_env.interpreter)),
        (Some(_), None) => Some(format!("gone from {}", before_env.interpreter)),
        (None, None) => None,
    }
}

/// Seconds a history line's time may follow the dist-info it wrote (the line is stamped when
/// the command starts, the directory written as the install ends, or the line after).
const INSTALL_SLACK_S: i64 = 600;

/// How `name` came into `env` as far as the host says: its installer (the dist-info's
/// `INSTALLER`) and the newest history line that installs it, no later than the install
/// (`by pip, root's /root/.bash_history entry 41: pip install transformers==4.57.1`).
fn installed_by(snapshot: &Snapshot, env: &PythonEnv, name: &str) -> Option<String> {
    let package = env.packages.iter().find(|p| p.name == name)?;
    let line = snapshot
        .histories
        .iter()
        .flat_map(|h| h.entries.iter().map(move |e| (h, e)))
        .filter(|(_, e)| match (e.time, package.installed_at) {
            (Some(t), Some(at)) => t <= at + INSTALL_SLACK_S,
            _ => true,
        })
        // A line pinning another version installed that one, not this.
        .filter(|(_, e)| {
            probe_launch::package_install(&e.command, name)
                .is_some_and(|i| i.pinned.is_none_or(|v| package.version.starts_with(&v)))
        })
        .max_by_key(|(h, e)| (e.time, h.path.clone(), e.index));
    let line = line.map(|(h, e)| {
        let command = probe_model::text::clip(&probe_model::text::sanitize_line(&e.command), 160);
        format!("{}'s {} entry {}: {command}", h.user, h.path, e.index + 1)
    });
    match (&package.installer, line) {
        (Some(tool), Some(line)) => Some(format!("by {tool}, {line}")),
        (Some(tool), None) => Some(format!("by {tool}")),
        (None, Some(line)) => Some(format!("by {line}")),
        (None, None) => None,
    }
}
