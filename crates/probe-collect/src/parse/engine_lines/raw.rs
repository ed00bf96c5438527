//! The shape of `configs/log_lines.toml` as written (`deny_unknown_fields`), before it is
//! compiled.

use serde::Deserialize;

use super::defs::{Place, TimeForm};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct LogLinesToml {
    #[serde(rename = "metric", default)]
    pub(super) metrics: Vec<EntryToml>,
    #[serde(rename = "limit", default)]
    pub(super) limits: Vec<EntryToml>,
    #[serde(rename = "version", default)]
    pub(super) versions: Vec<TextToml>,
    #[serde(rename = "startup", default)]
    pub(super) startups: Vec<TextToml>,
    #[serde(rename = "loaded", default)]
    pub(super) loaded: Vec<TextToml>,
    #[serde(rename = "prefix", default)]
    pub(super) prefixes: Vec<PrefixToml>,
    #[serde(rename = "block", default)]
    pub(super) blocks: Vec<BlockToml>,
    #[serde(default)]
    pub(super) keep: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct BlockToml {
    pub(super) engine: String,
    pub(super) marker: String,
    pub(super) logger: String,
    pub(super) holds: String,
    pub(super) sample: String,
}

/// What an engine writes before a message.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct PrefixToml {
    pub(super) engines: Vec<String>,
    pub(super) place: Place,
    pub(super) pattern: String,
    pub(super) sample: String,
    #[serde(default)]
    pub(super) time: Option<TimeForm>,
}

/// A line whose one group is text: the engine's version, or the settings it logs at start-up.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub(super) struct TextToml {
    pub(super) engine: String,
    pub(super) marker: String,
    #[serde(default)]
    pub(super) ignore_case: bool,
    #[serde(default)]
    pub(super) unless: Option<String>,
    pub(super) pattern: String,
    pub(super) sample: String,
    pub(super) group: usize,
    #[serde(default)]
    pub(super) versioned: bool,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub(super) struct EntryToml {
    pub(super) engine: String,
    pub(super) marker: String,
    #[serde(default)]
    pub(super) at_start: bool,
    #[serde(default)]
    pub(super) unless: Option<String>,
    #[serde(default)]
    pub(super) repeated: Option<bool>,
    pub(super) pattern: String,
    pub(super) sample: String,
    pub(super) values: Vec<ValueToml>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub(super) struct ValueToml {
    pub(super) group: usize,
    #[serde(default)]
    pub(super) name: Option<String>,
    #[serde(default)]
    pub(super) key: Option<String>,
    #[serde(default)]
    pub(super) unit: Option<String>,
    #[serde(default = "one")]
    pub(super) scale: f64,
    #[serde(default)]
    pub(super) duration: bool,
    #[serde(default)]
    pub(super) divide_by: Option<usize>,
}

fn one() -> f64 {
    1.0
}
