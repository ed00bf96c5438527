//! A catalog file as written (`configs/engines/<engine>.toml`), read with `deny_unknown_fields`.

use std::collections::BTreeMap;

use probe_model::Engine;
use serde::Deserialize;

use super::spec::{
    EntryKind, EnvPart, Environment, PythonApi, StartupArgs, Units, ValueKind, VersionVariant,
};

#[derive(Debug, Clone, Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
pub(super) struct RawCatalog {
    pub(super) engine: String,
    /// Read by `Engine::packages` (probe-model), where probe-store reaches it too.
    pub(super) packages: Vec<String>,
    pub(super) versions: Vec<String>,
    pub(super) units: Units,
    pub(super) underscore_to_dash: bool,
    pub(super) prefix_match: bool,
    pub(super) model_options: Vec<String>,
    pub(super) bench: Option<super::Bench>,
    pub(super) config_options: Vec<String>,
    pub(super) config_file_wins: bool,
    pub(super) startup_args: StartupArgs,
    pub(super) python: PythonApi,
    pub(super) environment: Environment,
    pub(super) entry: Vec<RawEntry>,
    pub(super) speculative: RawSpeculative,
    pub(super) option: Vec<RawOption>,
}

#[derive(Debug, Clone, Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
pub(super) struct RawEntry {
    pub(super) kind: EntryKind,
    #[serde(rename = "match")]
    pub(super) matches: String,
    pub(super) subcommand: Vec<String>,
    pub(super) positional_model: bool,
    pub(super) image_entrypoint: Vec<String>,
    pub(super) engine: Option<Engine>,
}

#[derive(Debug, Clone, Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
pub(super) struct RawSpeculative {
    pub(super) json_option: Option<String>,
    pub(super) json_keys: BTreeMap<String, String>,
    pub(super) effective: BTreeMap<String, String>,
    pub(super) implied: BTreeMap<String, toml::Value>,
    pub(super) implied_for: Vec<String>,
}

#[derive(Debug, Clone, Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
pub(super) struct RawRename {
    pub(super) old: String,
    pub(super) since: Option<String>,
    /// First version without the old spelling.
    pub(super) dropped: Option<String>,
}

#[derive(Debug, Clone, Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
pub(super) struct RawOption {
    pub(super) name: String,
    pub(super) aliases: Vec<String>,
    pub(super) negations: Vec<String>,
    pub(super) kind: RawKind,
    pub(super) choices: Vec<String>,
    pub(super) default: Option<toml::Value>,
    pub(super) common: Option<String>,
    pub(super) category: Option<String>,
    pub(super) renamed_from: Vec<RawRename>,
    pub(super) env: Option<String>,
    pub(super) env_part: Option<EnvPart>,
    pub(super) speculative: Option<String>,
    pub(super) startup_limit: Option<String>,
    pub(super) value_map: BTreeMap<String, toml::Value>,
    pub(super) since: Option<String>,
    pub(super) until: Option<String>,
    pub(super) deprecated: bool,
    /// The default is None (resolved at start-up), said where older releases had a value: kept
    /// as JSON null so no "default changed" is claimed against a value nobody knows.
    pub(super) no_default: bool,
    pub(super) by_version: Vec<RawVariant>,
}

/// One entry of an option's `by_version` list (see [`VersionVariant`]).
#[derive(Debug, Clone, Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
pub(super) struct RawVariant {
    pub(super) since: Option<String>,
    pub(super) until: Option<String>,
    pub(super) absent: bool,
    pub(super) kind: Option<RawKind>,
    pub(super) choices: Option<Vec<String>>,
    pub(super) default: Option<toml::Value>,
    pub(super) no_default: bool,
    pub(super) aliases: Option<Vec<String>>,
    pub(super) negations: Option<Vec<String>>,
    pub(super) deprecated: Option<bool>,
}

impl RawVariant {
    pub(super) fn into_variant(
        self,
        base_kind: RawKind,
        base_choices: &[String],
    ) -> VersionVariant {
        let kind = match (&self.kind, &self.choices) {
            (None, None) => None,
            (k, c) => Some(parse_kind(
                k.unwrap_or(base_kind),
                c.clone().unwrap_or_else(|| base_choices.to_vec()),
            )),
        };
        let default = if self.no_default {
            Some(Some(serde_json::Value::Null))
        } else {
            self.default.as_ref().map(|d| Some(toml_to_json(d)))
        };
        VersionVariant {
            since: self.since,
            until: self.until,
            absent: self.absent,
            kind,
            default,
            aliases: self.aliases,
            negations: self.negations,
            deprecated: self.deprecated,
        }
    }
}

pub(super) fn toml_to_json(v: &toml::Value) -> serde_json::Value {
    serde_json::to_value(v).unwrap_or(serde_json::Value::Null)
}

/// An option's `kind` as written in a catalog (a typo fails at load).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(super) enum RawKind {
    Bool,
    BoolOpt,
    Int,
    IntHr,
    Float,
    Opt,
    Json,
    List,
    Choice,
    #[default]
    Str,
}

pub(super) fn parse_kind(kind: RawKind, choices: Vec<String>) -> ValueKind {
    match kind {
        RawKind::Bool => ValueKind::Bool,
        RawKind::BoolOpt => ValueKind::BoolOptional,
        RawKind::Int => ValueKind::Int,
        RawKind::IntHr => ValueKind::HumanInt,
        RawKind::Float => ValueKind::Float,
        RawKind::Opt => ValueKind::OptionalStr,
        RawKind::Json => ValueKind::Json,
        RawKind::List => ValueKind::List,
        RawKind::Choice => ValueKind::Choice(choices),
        RawKind::Str => ValueKind::Str,
    }
}
