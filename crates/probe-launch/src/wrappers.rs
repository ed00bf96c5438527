//! The wrapper table (`configs/wrappers.toml`): programs that run another program, and the names
//! that tell an engine. probe-launch's reader unwraps them; probe-collect reads
//! [`ancestor_names`] to keep the running ones above a launcher as its wrappers.

use std::sync::LazyLock;

use probe_model::Engine;
use serde::Deserialize;

const WRAPPERS_TOML: &str = include_str!("../../../configs/wrappers.toml");

/// How the launch reader gets past a wrapper (see the comments in `configs/wrappers.toml`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Read {
    Prefix,
    Keyword,
    Scan,
    Shell,
    Eval,
    Module,
    Container,
    Interpreter,
    Ancestor,
}

/// One `[[wrapper]]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct Wrapper {
    pub names: Vec<String>,
    pub read: Read,
    #[serde(default)]
    pub subcommand: Option<String>,
    #[serde(default)]
    pub label: Option<String>,
    #[serde(default)]
    pub labelled: bool,
    #[serde(default)]
    pub label_next: Option<String>,
    #[serde(default)]
    pub value_flags: Vec<String>,
    #[serde(default)]
    pub venv_flags: Vec<String>,
    #[serde(default = "yes")]
    pub ancestor: bool,
}

fn yes() -> bool {
    true
}

/// One `[[engine-hint]]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EngineHint {
    pub engine: Engine,
    pub contains: Vec<String>,
}

/// The whole file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct Wrappers {
    /// Words a scanning wrapper's own arguments use that start no launch there (`apptainer exec
    /// IMAGE cmd`).
    pub scan_skip: Vec<String>,
    pub wrapper: Vec<Wrapper>,
    pub engine_hint: Vec<EngineHint>,
}

/// The embedded table, parsed once.
pub fn table() -> &'static Wrappers {
    static T: LazyLock<Wrappers> = LazyLock::new(|| {
        crate::embedded::load("configs/wrappers.toml", toml::from_str(WRAPPERS_TOML))
    });
    &T
}

impl Wrapper {
    /// The label a launch lists for this wrapper, given the word after its name.
    pub fn label_for(&self, name: &str, next: Option<&str>) -> Option<String> {
        let label = if self.labelled {
            name
        } else {
            self.label.as_deref()?
        };
        Some(match &self.label_next {
            Some(default) => {
                let word = next.filter(|n| !n.starts_with('-')).unwrap_or(default);
                format!("{label} {word}")
            }
            None => label.to_string(),
        })
    }

    /// Whether this wrapper can start a launch on its own (shell keywords and runtime shims
    /// cannot).
    pub fn starts_launch(&self) -> bool {
        !matches!(self.read, Read::Keyword | Read::Ancestor)
    }
}

/// The wrapper named `base` (an argv[0] basename).
pub fn wrapper(base: &str) -> Option<&'static Wrapper> {
    table()
        .wrapper
        .iter()
        .find(|w| w.names.iter().any(|n| n == base))
}

/// Whether `base` names a Python interpreter (`python`, `python3.12`, `python.exe`).
pub fn is_python(base: &str) -> bool {
    let b = base.strip_suffix(".exe").unwrap_or(base);
    table()
        .wrapper
        .iter()
        .filter(|w| w.read == Read::Interpreter)
        .flat_map(|w| &w.names)
        .any(|n| {
            b == n
                || b.strip_prefix(n.as_str()).is_some_and(|v| {
                    v.starts_with('.') && v.chars().all(|c| c.is_ascii_digit() || c == '.')
                })
        })
        || b.strip_prefix("python")
            .is_some_and(|v| !v.is_empty() && v.chars().all(|c| c.is_ascii_digit() || c == '.'))
}

/// The argv[0] basenames probe-collect keeps as wrappers when they run above a launcher.
pub fn ancestor_names() -> Vec<String> {
    table()
        .wrapper
        .iter()
        .filter(|w| w.ancestor)
        .flat_map(|w| w.names.iter().cloned())
        .collect()
}

/// The engine a program, unit or image name suggests (`run-sglang.sh`, `my-vllm-server`).
pub fn guess_engine_from_name(s: &str) -> Option<Engine> {
    let l = s.to_ascii_lowercase();
    table()
        .engine_hint
        .iter()
        .find(|h| h.contains.iter().any(|c| l.contains(c.as_str())))
        .map(|h| h.engine)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_parses_and_names_each_wrapper_once() {
        let mut seen = std::collections::BTreeSet::new();
        for w in &table().wrapper {
            for n in &w.names {
                assert!(seen.insert(n.clone()), "{n} is listed twice");
            }
        }
        assert!(toml::from_str::<Wrappers>(&format!("{WRAPPERS_TOML}\ntypo = 1")).is_err());
    }

    #[test]
    fn python_names() {
        for yes in ["python", "python3", "python3.12", "pypy3", "python.exe"] {
            assert!(is_python(yes), "{yes}");
        }
        for no in ["pythonista", "py", "python-config"] {
            assert!(!is_python(no), "{no}");
        }
    }
}
