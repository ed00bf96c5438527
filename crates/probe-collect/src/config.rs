//! The embedded configuration: probe definitions and the pattern lists the parsers use.

use std::sync::OnceLock;

use regex::{Regex, RegexBuilder};
use serde::Deserialize;

const PROBES: &str = include_str!("../../../configs/probes.toml");
const SERVERS: &str = include_str!("../../../configs/servers.toml");
const PACKAGES: &str = include_str!("../../../configs/packages.toml");
const MODEL_KEYS: &str = include_str!("../../../configs/model_keys.toml");

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Probes {
    pub prelude: String,
    #[serde(rename = "probe")]
    pub probes: Vec<Probe>,
}

/// One probe: a section of the remote script.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Probe {
    pub name: String,
    #[serde(default = "one")]
    pub round: u8,
    /// Sections of one group run one after another on one exec channel; `None`: its own.
    #[serde(default)]
    pub group: Option<String>,
    pub parser: String,
    pub timeout_s: u64,
    pub max_bytes: u64,
    #[serde(default)]
    pub sudo: bool,
    #[serde(default)]
    pub depends_on: Option<String>,
    pub command: String,
}

fn one() -> u8 {
    1
}

#[derive(Debug, Deserialize)]
struct ServersToml {
    process_match: String,
    unit_exec_match: String,
    unit_name_globs: Vec<String>,
    container_match: String,
    engine: Vec<EngineToml>,
}

#[derive(Debug, Deserialize)]
struct EngineToml {
    name: String,
    #[serde(rename = "match")]
    matches: String,
    worker: String,
}

#[derive(Debug)]
pub struct EnginePatterns {
    pub name: String,
    pub matches: Regex,
    pub worker: Regex,
}

#[derive(Debug)]
pub struct Servers {
    /// ERE for the remote grep (also compiled locally as `process_re`).
    pub process_match: String,
    pub process_re: Regex,
    pub unit_exec_match: String,
    pub unit_exec_re: Regex,
    pub unit_name_globs: Vec<String>,
    pub container_re: Regex,
    pub wrappers: Vec<String>,
    pub engines: Vec<EnginePatterns>,
}

#[derive(Debug, Deserialize)]
pub struct Packages {
    pub python: Vec<String>,
    pub python_prefixes: Vec<String>,
    pub system_match: String,
}

#[derive(Debug, Deserialize)]
pub struct ModelKeys {
    pub nested: Vec<String>,
    pub max_value_bytes: usize,
    pub keys: Vec<String>,
}

fn ci(p: &str) -> Regex {
    RegexBuilder::new(p)
        .case_insensitive(true)
        .build()
        .unwrap_or_else(|e| panic!("configs: bad pattern {p}: {e}"))
}

pub fn probes() -> &'static Probes {
    static P: OnceLock<Probes> = OnceLock::new();
    P.get_or_init(|| toml::from_str(PROBES).unwrap_or_else(|e| panic!("configs/probes.toml: {e}")))
}

pub fn servers() -> &'static Servers {
    static S: OnceLock<Servers> = OnceLock::new();
    S.get_or_init(|| {
        let t: ServersToml =
            toml::from_str(SERVERS).unwrap_or_else(|e| panic!("configs/servers.toml: {e}"));
        Servers {
            process_re: ci(&t.process_match),
            unit_exec_re: ci(&t.unit_exec_match),
            container_re: ci(&t.container_match),
            engines: t
                .engine
                .iter()
                .map(|e| EnginePatterns {
                    name: e.name.clone(),
                    matches: ci(&e.matches),
                    worker: ci(&e.worker),
                })
                .collect(),
            process_match: t.process_match,
            unit_exec_match: t.unit_exec_match,
            unit_name_globs: t.unit_name_globs,
            wrappers: probe_diff::launch::wrappers::ancestor_names(),
        }
    })
}

pub fn packages() -> &'static Packages {
    static P: OnceLock<Packages> = OnceLock::new();
    P.get_or_init(|| {
        toml::from_str(PACKAGES).unwrap_or_else(|e| panic!("configs/packages.toml: {e}"))
    })
}

pub fn model_keys() -> &'static ModelKeys {
    static M: OnceLock<ModelKeys> = OnceLock::new();
    M.get_or_init(|| {
        toml::from_str(MODEL_KEYS).unwrap_or_else(|e| panic!("configs/model_keys.toml: {e}"))
    })
}

/// PEP 503 normalisation: lower case, runs of `-_.` become `-`.
pub fn normalize_dist(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut dash = false;
    for c in name.trim().chars() {
        if matches!(c, '-' | '_' | '.') {
            dash = true;
        } else {
            if dash && !out.is_empty() {
                out.push('-');
            }
            dash = false;
            out.push(c.to_ascii_lowercase());
        }
    }
    out
}

/// Whether a distribution is one the collector keeps.
pub fn wanted_package(normalized: &str) -> bool {
    let p = packages();
    p.python.iter().any(|n| normalize_dist(n) == normalized)
        || p.python_prefixes
            .iter()
            .any(|pre| normalized.starts_with(pre.as_str()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn configs_load_and_are_valid() {
        let p = probes();
        assert!(p.probes.len() >= 10);
        for pr in &p.probes {
            assert!(
                pr.name
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_'),
                "{}",
                pr.name
            );
            assert!(pr.timeout_s > 0 && pr.max_bytes > 0);
            if let Some(d) = &pr.depends_on {
                assert!(p.probes.iter().any(|q| &q.name == d), "{d}");
            }
        }
        let s = servers();
        assert!(s.process_re.is_match("python3 -m sglang.launch_server"));
        assert!(
            s.engines
                .iter()
                .any(|e| e.name == "vllm" && e.worker.is_match("VLLM::Worker_TP0"))
        );
        assert!(!packages().python.is_empty());
        assert!(
            model_keys()
                .keys
                .contains(&"num_nextn_predict_layers".to_string())
        );
        assert_eq!(normalize_dist("Flash_Attn"), "flash-attn");
        assert!(wanted_package("nvidia-nccl-cu12"));
        assert!(wanted_package("sgl-kernel"));
        assert!(!wanted_package("requests"));
    }
}
