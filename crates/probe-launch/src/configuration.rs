//! Whether two launches run the same configuration, compared field by field on [`LaunchConfig`].
//!
//! The same engine, model, options and speculative settings, read with the engine's catalog:
//! typed (`0.9` is `0.90`), default-aware (`--tp 1` is no `--tp` when 1 is the default), and
//! speculative options compared on their normalised form. How the engine was entered (interpreter,
//! venv, entry point, working directory, wrappers), its version and its environment are
//! [`ConfigField::Detail`]s or not compared: they do not change what the engine runs with.
//!
//! This is not the analysis's ranked diff: nothing here is weighed or explained. The analysis
//! builds its diff on the same catalog primitives ([`default_of`], [`covered_by_speculative`],
//! [`speculative_leftover`]).

use std::collections::BTreeSet;

use probe_model::{ChangeKind, LaunchConfig, SourceKind};
use serde_json::Value;

use crate::catalog::{Catalog, OptionSpec, StartupArgs, ValueKind, catalog, values_equal};
use crate::speculative::{self, SpecView};

/// What differs between two launches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConfigField {
    /// They run different engines; nothing else is compared.
    Engine,
    Model,
    /// A normalised speculative setting: `algorithm`, `draft_model`, `num_steps`, `eagle_topk`,
    /// `num_draft_tokens`.
    Speculative(&'static str),
    /// An option (its canonical name) whose values differ once defaults are taken into account.
    Option(String),
    /// An option neither launch sets whose default differs between their engine versions.
    Default(String),
    /// A flag the catalog does not know, set on one side only.
    Unknown(String),
    /// How the engine was entered: `interpreter`, `venv`, `entrypoint`, `working_directory`,
    /// `wrappers`. Not part of the configuration.
    Detail(&'static str),
}

/// One field in which two launches differ, with each side's value (`None`: not set there).
#[derive(Debug, Clone, PartialEq)]
pub struct ConfigDifference {
    pub field: ConfigField,
    /// `Added`: only the second launch has it; `Removed`: only the first.
    pub kind: ChangeKind,
    pub before: Option<Value>,
    pub after: Option<Value>,
    /// The option as each side wrote it (`--tp 2`), where it was an option.
    pub before_written: Option<String>,
    pub after_written: Option<String>,
}

impl ConfigDifference {
    fn new(field: ConfigField, before: Option<Value>, after: Option<Value>) -> Self {
        let kind = match (&before, &after) {
            (None, Some(_)) => ChangeKind::Added,
            (Some(_), None) => ChangeKind::Removed,
            _ => ChangeKind::Changed,
        };
        ConfigDifference {
            field,
            kind,
            before,
            after,
            before_written: None,
            after_written: None,
        }
    }
}

/// Whether two launches run the same configuration: same engine, model, options and speculative
/// settings.
///
/// An engine's start-up log line may list values the engine resolved itself (SGLang's
/// `server_args=` holds every argument), so against a command line a field only such a log has
/// is unknown on the other side, not different ([`lists_resolved_values`]).
pub fn same_configuration(left: &LaunchConfig, right: &LaunchConfig) -> bool {
    let left_dump = lists_resolved_values(left);
    let right_dump = lists_resolved_values(right);
    let left_partial = engine_config_record(left);
    let right_partial = engine_config_record(right);
    configuration_differences(left, right)
        .iter()
        .all(|difference| {
            let only_in_log = (left_dump && !right_dump && difference.kind == ChangeKind::Removed)
                || (right_dump && !left_dump && difference.kind == ChangeKind::Added);
            // What an engine-config record cannot show (the model, the server's options).
            let unseen = (left_partial && difference.before.is_none())
                || (right_partial && difference.after.is_none());
            only_in_log || unseen || matches!(difference.field, ConfigField::Detail(_))
        })
}

/// Whether a launch was read from a start-up record of the engine's configuration object only
/// ([`StartupArgs::EngineConfig`]: LMDeploy's `TurbomindEngineConfig(...)`), which holds neither
/// the model nor the server's options.
pub fn engine_config_record(launch: &LaunchConfig) -> bool {
    launch.source.kind == SourceKind::Log
        && catalog(launch.engine, launch.engine_version.as_deref()).startup_args
            == StartupArgs::EngineConfig
}

/// Whether a launch was read from a start-up log line that lists every argument with the value
/// the engine resolved (its catalog's [`StartupArgs::All`]): an option only it shows is
/// unknown on a command line's side. vLLM's `non-default args:` lists only what was given, so an
/// option only it shows (a speculative config) is a difference.
pub fn lists_resolved_values(launch: &LaunchConfig) -> bool {
    launch.source.kind == SourceKind::Log
        && catalog(launch.engine, launch.engine_version.as_deref()).startup_args
            != StartupArgs::NonDefault
}

/// Every field in which `after` differs from `before`, in a fixed order: engine, model,
/// speculative settings, options (by name), changed defaults, unknown flags, details.
pub fn configuration_differences(
    before: &LaunchConfig,
    after: &LaunchConfig,
) -> Vec<ConfigDifference> {
    if before.engine != after.engine {
        let (b, a) = (before.engine.as_str(), after.engine.as_str());
        return vec![ConfigDifference::new(
            ConfigField::Engine,
            Some(Value::from(b)),
            Some(Value::from(a)),
        )];
    }
    let mut out = Vec::new();
    model(before, after, &mut out);
    let speculative_handled = before.speculative.is_some() || after.speculative.is_some();
    speculative_settings(before, after, &mut out);
    let sides = Sides {
        before,
        after,
        before_catalog: catalog(before.engine, before.engine_version.as_deref()),
        after_catalog: catalog(after.engine, after.engine_version.as_deref()),
        speculative_handled,
    };
    options(&sides, &mut out);
    changed_defaults(&sides, &mut out);
    out.extend(launch_details(before, after));
    out
}

struct Sides<'a> {
    before: &'a LaunchConfig,
    after: &'a LaunchConfig,
    before_catalog: &'static Catalog,
    after_catalog: &'static Catalog,
    speculative_handled: bool,
}

impl Sides<'_> {
    /// Whether an option is the model itself: compared once, as [`LaunchConfig::model`].
    fn is_model_option(&self, name: &str) -> bool {
        self.before_catalog.is_model_option(name) || self.after_catalog.is_model_option(name)
    }
}

/// A model path as compared: trimmed, without a trailing `/`.
pub fn trim_model(model: &str) -> &str {
    model.trim().trim_end_matches('/')
}

fn model(before: &LaunchConfig, after: &LaunchConfig, out: &mut Vec<ConfigDifference>) {
    let b = before.model.as_deref().map(trim_model);
    let a = after.model.as_deref().map(trim_model);
    if b != a {
        out.push(ConfigDifference::new(
            ConfigField::Model,
            b.map(Value::from),
            a.map(Value::from),
        ));
    }
}

fn speculative_settings(
    before: &LaunchConfig,
    after: &LaunchConfig,
    out: &mut Vec<ConfigDifference>,
) {
    let algorithm = |view: &SpecView| view.algorithm.clone().map(Value::from);
    match (speculative::view(before), speculative::view(after)) {
        (None, None) => {}
        (Some(view), None) => out.push(ConfigDifference::new(
            ConfigField::Speculative("algorithm"),
            algorithm(&view),
            None,
        )),
        (None, Some(view)) => out.push(ConfigDifference::new(
            ConfigField::Speculative("algorithm"),
            None,
            algorithm(&view),
        )),
        (Some(left), Some(right)) => speculative_views(&left, &right, out),
    }
}

/// The model's own MTP heads, as a draft model's value.
pub const OWN_MTP_HEADS: &str = "(the model's own MTP heads)";

fn speculative_views(left: &SpecView, right: &SpecView, out: &mut Vec<ConfigDifference>) {
    if !speculative::same_algorithm(left, right) {
        out.push(ConfigDifference {
            kind: ChangeKind::Changed,
            ..ConfigDifference::new(
                ConfigField::Speculative("algorithm"),
                left.algorithm.clone().map(Value::from),
                right.algorithm.clone().map(Value::from),
            )
        });
    }
    if left.draft_model != right.draft_model {
        let draft = |view: &SpecView| {
            Value::from(
                view.draft_model
                    .clone()
                    .unwrap_or_else(|| OWN_MTP_HEADS.to_string()),
            )
        };
        out.push(ConfigDifference::new(
            ConfigField::Speculative("draft_model"),
            Some(draft(left)),
            Some(draft(right)),
        ));
    }
    let numeric = [
        ("num_steps", &left.num_steps, &right.num_steps),
        ("eagle_topk", &left.eagle_topk, &right.eagle_topk),
        (
            "num_draft_tokens",
            &left.num_draft_tokens,
            &right.num_draft_tokens,
        ),
    ];
    for (name, b, a) in numeric {
        // One side leaves it to the engine, which picks it at start-up: unknown, not a change.
        if let (Some(b), Some(a)) = (b, a)
            && !values_equal(b, a, Some(&ValueKind::Int))
        {
            out.push(ConfigDifference::new(
                ConfigField::Speculative(name),
                Some(b.clone()),
                Some(a.clone()),
            ));
        }
    }
}

/// Whether an option is one of those the normalised speculative settings cover.
pub fn covered_by_speculative(catalog: &Catalog, spec: Option<&OptionSpec>, name: &str) -> bool {
    if spec.is_some_and(|spec| spec.speculative.is_some()) {
        return true;
    }
    if catalog.speculative.json_option.as_deref() == Some(name) {
        return true;
    }
    matches!(
        name,
        "speculative-algorithm"
            | "speculative-num-steps"
            | "speculative-eagle-topk"
            | "speculative-num-draft-tokens"
            | "speculative-draft-model-path"
            | "speculative-config"
            | "speculative-model"
            | "num-speculative-tokens"
            | "spec-method"
            | "spec-model"
            | "spec-tokens"
    )
}

/// The part of a JSON speculative config the normalised form does not cover.
pub fn speculative_leftover(catalog: &Catalog, value: &Value) -> Option<Value> {
    let parsed;
    let object = match value {
        Value::Object(object) => object,
        Value::String(text) => {
            parsed = serde_json::from_str::<Value>(text).ok()?;
            parsed.as_object()?
        }
        _ => return None,
    };
    let covered: BTreeSet<&str> = catalog
        .speculative
        .json_keys
        .keys()
        .map(String::as_str)
        .chain(["method", "model", "num_speculative_tokens"])
        .collect();
    let leftover: serde_json::Map<String, Value> = object
        .iter()
        .filter(|(key, _)| !covered.contains(key.as_str()))
        .map(|(key, value)| (key.clone(), value.clone()))
        .collect();
    Some(Value::Object(leftover))
}

/// The value an option takes when the launch leaves it out, if the catalog knows it.
pub fn default_of(spec: Option<&OptionSpec>) -> Option<Value> {
    let spec = spec?;
    match (&spec.default, &spec.kind) {
        (Some(Value::Null), _) => None,
        (Some(value), _) => Some(value.clone()),
        (None, ValueKind::Bool) => Some(Value::Bool(false)),
        (None, _) => None,
    }
}

/// Whether a launch's option is set to the value the engine takes when it is left out (an
/// engine's start-up log lists every value it resolved, most of them defaults).
pub fn option_at_default(launch: &LaunchConfig, name: &str) -> bool {
    let engine_catalog = catalog(launch.engine, launch.engine_version.as_deref());
    let spec = engine_catalog.get(name);
    match (launch.options.get(name), default_of(spec)) {
        (Some(option), Some(default)) => {
            values_equal(&option.value, &default, spec.map(|s| &s.kind))
        }
        _ => false,
    }
}

/// A JSON speculative config's leftover that holds nothing.
fn empty_leftover(value: &Option<Value>) -> bool {
    value
        .as_ref()
        .is_none_or(|v| v.as_object().is_some_and(|o| o.is_empty()))
}

/// The options set on either side (the model and the speculative ones left out), each compared
/// against the other side's value or, where it is not set, the engine's default.
fn options(sides: &Sides<'_>, out: &mut Vec<ConfigDifference>) {
    let names: BTreeSet<&str> = (sides.before.options.keys())
        .chain(sides.after.options.keys())
        .map(String::as_str)
        .collect();
    for name in names {
        if sides.is_model_option(name) {
            continue;
        }
        let before_spec = sides.before_catalog.get(name);
        let after_spec = sides.after_catalog.get(name);
        let mut b = sides.before.options.get(name).map(|o| o.value.clone());
        let mut a = sides.after.options.get(name).map(|o| o.value.clone());
        if sides.speculative_handled
            && covered_by_speculative(sides.after_catalog, after_spec.or(before_spec), name)
        {
            // Only what the normalised form leaves out of a JSON speculative config is compared.
            if sides.after_catalog.speculative.json_option.as_deref() != Some(name) {
                continue;
            }
            b = b.and_then(|v| speculative_leftover(sides.before_catalog, &v));
            a = a.and_then(|v| speculative_leftover(sides.after_catalog, &v));
            if empty_leftover(&b) && empty_leftover(&a) {
                continue;
            }
        }
        let kind = after_spec.or(before_spec).map(|spec| &spec.kind);
        let differs =
            match (&b, &a) {
                (None, None) => false,
                (Some(b), Some(a)) => !values_equal(b, a, kind),
                (Some(b), None) => default_of(after_spec.or(before_spec))
                    .is_none_or(|d| !values_equal(b, &d, kind)),
                (None, Some(a)) => default_of(before_spec.or(after_spec))
                    .is_none_or(|d| !values_equal(a, &d, kind)),
            };
        if differs {
            out.push(ConfigDifference {
                before_written: sides.before.options.get(name).map(|o| o.written.clone()),
                after_written: sides.after.options.get(name).map(|o| o.written.clone()),
                ..ConfigDifference::new(ConfigField::Option(name.to_string()), b, a)
            });
        }
    }
}

/// Options neither launch sets whose default differs between the two engine versions: the
/// launches read the same but run differently (vLLM's `--gpu-memory-utilization` went from 0.9
/// to 0.92).
fn changed_defaults(sides: &Sides<'_>, out: &mut Vec<ConfigDifference>) {
    let (Some(before_version), Some(after_version)) = (
        sides.before.engine_version.as_deref(),
        sides.after.engine_version.as_deref(),
    ) else {
        return;
    };
    if before_version.trim() == after_version.trim() {
        return;
    }
    for after_spec in sides.after_catalog.options() {
        let name = after_spec.name.as_str();
        if sides.is_model_option(name)
            || sides.before.options.contains_key(name)
            || sides.after.options.contains_key(name)
            || (sides.speculative_handled
                && covered_by_speculative(sides.after_catalog, Some(after_spec), name))
        {
            continue;
        }
        let before_default = default_of(sides.before_catalog.get(name));
        if let (Some(b), Some(a)) = (before_default, default_of(Some(after_spec)))
            && !values_equal(&b, &a, Some(&after_spec.kind))
        {
            out.push(ConfigDifference::new(
                ConfigField::Default(name.to_string()),
                Some(b),
                Some(a),
            ));
        }
    }
}

/// How the engine was entered ([`ConfigField::Detail`]) and the flags the catalog does not
/// know ([`ConfigField::Unknown`]); the analysis ranks these same differences. A start-up log
/// line shows neither, so against one there are none.
pub fn launch_details(before: &LaunchConfig, after: &LaunchConfig) -> Vec<ConfigDifference> {
    let mut out = Vec::new();
    if before.source.kind == SourceKind::Log || after.source.kind == SourceKind::Log {
        return out;
    }
    let before_unknown: BTreeSet<&String> = before.unknown.iter().collect();
    let after_unknown: BTreeSet<&String> = after.unknown.iter().collect();
    for flag in before_unknown.difference(&after_unknown) {
        let value = Value::from(flag.as_str());
        out.push(ConfigDifference {
            before_written: Some(flag.to_string()),
            ..ConfigDifference::new(ConfigField::Unknown(flag.to_string()), Some(value), None)
        });
    }
    for flag in after_unknown.difference(&before_unknown) {
        let value = Value::from(flag.as_str());
        out.push(ConfigDifference {
            after_written: Some(flag.to_string()),
            ..ConfigDifference::new(ConfigField::Unknown(flag.to_string()), None, Some(value))
        });
    }
    let pairs = [
        ("interpreter", &before.interpreter, &after.interpreter),
        ("venv", &before.venv, &after.venv),
        ("entrypoint", &before.entrypoint, &after.entrypoint),
        (
            "working_directory",
            &before.working_directory,
            &after.working_directory,
        ),
    ];
    for (name, b, a) in pairs {
        // Unknown on one side is not a difference.
        if let (Some(b), Some(a)) = (b, a)
            && b.trim() != a.trim()
        {
            out.push(ConfigDifference::new(
                ConfigField::Detail(name),
                Some(Value::from(b.as_str())),
                Some(Value::from(a.as_str())),
            ));
        }
    }
    if before.wrappers != after.wrappers {
        out.push(ConfigDifference::new(
            ConfigField::Detail("wrappers"),
            Some(Value::from(before.wrappers.join(" > "))),
            Some(Value::from(after.wrappers.join(" > "))),
        ));
    }
    out
}
