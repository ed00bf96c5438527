//! Engine option catalogs: what each engine's command line accepts, as data.
//!
//! The catalogs live in `configs/engines/<engine>.toml` and are embedded at build time. Each one
//! lists the engine's entry points (binaries, Python modules, container images), every option with
//! its aliases, arity, value type and units, default, cross-engine `common` key, category, and the
//! versions in which a spelling exists. [`catalog`] returns the catalog of one engine, narrowed to
//! one version when the installed version is known.

mod bench;
mod equal;

pub use bench::Bench;
pub use equal::{display, normalize, parse_bool, values_equal};

use std::collections::{BTreeMap, HashMap};
use std::sync::{LazyLock, Mutex, OnceLock};

use probe_model::Engine;
use serde::Deserialize;

/// Each engine's definition (`configs/engines/<engine>.toml`, embedded by probe-model).
fn sources() -> impl Iterator<Item = (Engine, &'static str)> {
    Engine::ALL.into_iter().map(|e| (e, e.definition()))
}

/// The type of an option's value, which also fixes its arity.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ValueKind {
    /// Takes no value (`store_true`, `--enable-x/--disable-x`, `--x/--no-x`).
    Bool,
    /// A boolean that may be followed by an explicit `true`/`false` (`--sharded false`, TRL).
    BoolOptional,
    Int,
    /// Integer with unit suffixes (vLLM `16k`/`16K`, SGLang `k`/`Ki`); see [`Catalog::units`].
    HumanInt,
    Float,
    Str,
    /// A string value that may be left out (`nargs='?'`, llama.cpp `-fa [on|off]`).
    OptionalStr,
    /// A JSON object (vLLM also takes dotted keys: `--speculative-config.method mtp`).
    Json,
    /// One or more values (`nargs='+'`).
    List,
    /// One value out of a fixed set (the set may be incomplete: values are not rejected).
    Choice(Vec<String>),
}

impl ValueKind {
    /// Whether the option never consumes the next token.
    pub fn takes_no_value(&self) -> bool {
        matches!(self, ValueKind::Bool)
    }
}

/// One option of one engine.
#[derive(Debug, Clone, PartialEq)]
pub struct OptionSpec {
    /// Canonical long name without leading dashes (`tp-size`).
    pub name: String,
    /// Other spellings, with their dashes as written on a command line (`--tensor-parallel-size`,
    /// `-tp`).
    pub aliases: Vec<String>,
    /// Spellings that set a boolean to false (`--disable-prefix-caching`, `--no-enforce-eager`).
    pub negations: Vec<String>,
    pub kind: ValueKind,
    pub default: Option<serde_json::Value>,
    /// Cross-engine key as in the corpus (`tensor_parallel`, `context_length`, ...).
    pub common: Option<String>,
    /// `speculative_decoding|parallelism|memory_kv_cache|batching_scheduling|kernels_backends|
    /// quantization_dtypes|model|other`.
    pub category: Option<String>,
    /// Older spellings and the version that introduced the current one.
    pub renamed_from: Vec<(String, Option<String>)>,
    /// Environment variable the engine reads for this option (`MODEL_ID`, `LLAMA_ARG_PORT`).
    pub env: Option<String>,
    /// The part of an address-valued variable (`OLLAMA_HOST=0.0.0.0:11434`) this option reads.
    pub env_part: Option<EnvPart>,
    /// Key of the normalised speculative settings this option feeds (`algorithm`, `num_steps`,
    /// `eagle_topk`, `num_draft_tokens`, `num_speculative_tokens`, `draft_model`).
    pub speculative: Option<String>,
    /// The start-up limit this option sets, as the engine's start-up log names it
    /// (`max_num_batched_tokens`, the key of [`probe_model::Run::limits`]): a change of the
    /// option and of that limit are one change.
    pub startup_limit: Option<String>,
    /// Mapping of written values to the `common` value (`--quant-policy 4` -> `int4`).
    pub value_map: BTreeMap<String, serde_json::Value>,
    /// First version with this spelling, when known.
    pub since: Option<String>,
    /// Last version with this spelling, when it is gone from newer ones.
    pub until: Option<String>,
    /// The option is deprecated (still accepted).
    pub deprecated: bool,
    /// How the option differed in older releases (read from the engines' parsers): in a catalog
    /// narrowed to a version the matching variant is already applied to the fields above.
    pub by_version: Vec<VersionVariant>,
    /// The newest release's default (what [`OptionSpec::default`] is without a version).
    newest_default: Option<serde_json::Value>,
}

/// A part of an address written `[scheme://]host[:port]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EnvPart {
    Host,
    Port,
}

impl EnvPart {
    /// This part of `address`, when it has one.
    pub fn of(self, address: &str) -> Option<&str> {
        let a = address.trim();
        let a = a.split_once("://").map(|(_, r)| r).unwrap_or(a);
        let a = a.split('/').next().unwrap_or(a);
        // `[::1]:11434`, `0.0.0.0:11434`, `:8080`, `0.0.0.0`.
        let (host, port) = match a.strip_prefix('[') {
            Some(r) => match r.split_once(']') {
                Some((h, p)) => (h, p.strip_prefix(':')),
                None => (r, None),
            },
            None => match a.rsplit_once(':') {
                Some((h, p)) if !h.contains(':') => (h, Some(p)),
                _ => (a, None),
            },
        };
        match self {
            EnvPart::Host => Some(host).filter(|h| !h.is_empty()),
            EnvPart::Port => port.filter(|p| !p.is_empty()),
        }
    }
}

/// What an option looked like in a range of releases, where that differs from the newest one.
/// `None` fields are as in the newest release.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct VersionVariant {
    /// First release of the range (`None`: from the oldest release known).
    pub since: Option<String>,
    /// Last release of the range, inclusive.
    pub until: Option<String>,
    /// The option does not exist in these releases.
    pub absent: bool,
    pub kind: Option<ValueKind>,
    /// The default in these releases; `Some(Some(Null))`: None, resolved at start-up.
    pub default: Option<Option<serde_json::Value>>,
    pub aliases: Option<Vec<String>>,
    pub negations: Option<Vec<String>>,
    pub deprecated: Option<bool>,
}

impl VersionVariant {
    /// Whether `version` falls in this variant's range.
    pub fn covers(&self, version: &str) -> bool {
        in_range(Some(version), self.since.as_deref(), self.until.as_deref())
    }
}

impl OptionSpec {
    /// The default the option has in `version` (`None` when it has none there or it is resolved
    /// at start-up), from the per-version variants; without a version, the newest release's.
    pub fn default_in(&self, version: Option<&str>) -> Option<serde_json::Value> {
        let variant = version.and_then(|v| self.by_version.iter().find(|x| x.covers(v)));
        match variant.and_then(|x| x.default.clone()) {
            Some(default) => default,
            None => self.newest_default.clone(),
        }
        .filter(|d| !d.is_null())
    }
}

/// How an entry point is named: the closed set of `kind`s of a catalog's `[[entry]]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EntryKind {
    /// A program's basename (`vllm`, `llama-server`).
    #[default]
    Binary,
    /// A Python module run with `python -m`.
    Module,
    /// A container image repository.
    Image,
}

/// How a launch enters the engine.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct EntryPoint {
    pub kind: EntryKind,
    /// Binary basename (`vllm`, `llama-server`), Python module (`sglang.launch_server`) or image
    /// repository (`vllm/vllm-openai`, matched without registry host and tag).
    pub matches: String,
    /// Words that must follow the binary (`serve`, `serve api_server`).
    pub subcommand: Vec<String>,
    /// The first bare word is the model (`vllm serve MODEL`).
    pub positional_model: bool,
    /// For images: the image's own entrypoint, used when a container gives only arguments.
    pub image_entrypoint: Vec<String>,
    /// Engine label when it differs from the catalog's (`trl.scripts.vllm_serve` is `other`).
    pub engine: Option<Engine>,
}

/// Normalised speculative-decoding knowledge of an engine.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SpeculativeRules {
    /// JSON-valued option holding the whole speculative config (`speculative-config`).
    pub json_option: Option<String>,
    /// JSON key -> speculative key (`method` -> `algorithm`).
    pub json_keys: BTreeMap<String, String>,
    /// Algorithm as written (upper-cased) -> what actually runs (`NEXTN` -> `EAGLE`).
    pub effective: BTreeMap<String, String>,
    /// Values the engine fills in when the text leaves them out, for the algorithms listed in
    /// `implied_for`.
    pub implied: BTreeMap<String, serde_json::Value>,
    pub implied_for: Vec<String>,
}

/// All options of one engine (for one version when known).
#[derive(Debug, Clone)]
pub struct Catalog {
    engine: Engine,
    version: Option<String>,
    /// Versions the catalog data was read from, oldest first.
    pub known_versions: Vec<String>,
    /// The engine's human-readable integer convention.
    pub units: Units,
    /// vLLM and TRL turn `_` into `-` in option names.
    pub underscore_to_dash: bool,
    /// argparse-style unique-prefix abbreviations are accepted.
    pub prefix_match: bool,
    /// Options whose value is the model (`model-path`, `model-id`, `hf-repo`).
    pub model_options: Vec<String>,
    /// What the engine's own benchmark tool writes (`[bench]`), when it has one.
    pub bench: Option<Bench>,
    /// Option holding a YAML config file (`config`, `extra_llm_api_options`).
    pub config_options: Vec<String>,
    /// The config file's values override the command line's (TRT-LLM applies its
    /// `--extra_llm_api_options` YAML over the flags); otherwise the command line wins.
    pub config_file_wins: bool,
    /// What the engine's start-up arguments line lists.
    pub startup_args: StartupArgs,
    /// How a Python script starts the engine through its API (`[python]`).
    pub python: PythonApi,
    pub entry_points: Vec<EntryPoint>,
    pub speculative: SpeculativeRules,
    options: Vec<OptionSpec>,
    /// Every release named by a version bound of the data (`since`, `until`, variants, renames),
    /// sorted and distinct: two versions between the same bounds get the same catalog.
    bounds: Vec<String>,
    by_name: HashMap<String, usize>,
    /// Every spelling with dashes (`--tp-size`, `-tp`) -> (option index, negated).
    by_spelling: HashMap<String, (usize, bool)>,
}

impl Catalog {
    pub fn engine(&self) -> Engine {
        self.engine
    }

    /// The version the catalog was narrowed to. Versions between the same bounds of the data
    /// share one catalog, which names the first of them that was asked for.
    pub fn version(&self) -> Option<&str> {
        self.version.as_deref()
    }

    pub fn get(&self, canonical: &str) -> Option<&OptionSpec> {
        self.by_name
            .get(canonical)
            .and_then(|i| self.options.get(*i))
    }

    /// The first option carrying this cross-engine key.
    pub fn by_common(&self, common: &str) -> Option<&OptionSpec> {
        self.options
            .iter()
            .find(|o| o.common.as_deref() == Some(common))
    }

    /// Every option carrying this cross-engine key, in catalog order.
    pub fn all_by_common<'a>(&'a self, common: &'a str) -> impl Iterator<Item = &'a OptionSpec> {
        self.options
            .iter()
            .filter(move |o| o.common.as_deref() == Some(common))
    }

    pub fn options(&self) -> impl Iterator<Item = &OptionSpec> {
        self.options.iter()
    }

    /// Exact lookup of a spelling as written with its dashes (`--tp-size`, `-tp`,
    /// `--disable-prefix-caching`). Returns the option and whether the spelling negates it.
    pub fn lookup_exact(&self, spelling: &str) -> Option<(&OptionSpec, bool)> {
        self.by_spelling
            .get(spelling)
            .and_then(|(i, neg)| self.options.get(*i).map(|o| (o, *neg)))
    }

    /// All long spellings (`--...`) that start with `prefix`, deduplicated by option.
    pub fn prefix_candidates(&self, prefix: &str) -> Vec<(&str, &OptionSpec, bool)> {
        let mut seen: Vec<usize> = Vec::new();
        let mut out = Vec::new();
        let mut spellings: Vec<(&String, &(usize, bool))> = self
            .by_spelling
            .iter()
            .filter(|(s, _)| s.starts_with("--") && s.starts_with(prefix))
            .collect();
        spellings.sort_by(|a, b| a.0.len().cmp(&b.0.len()).then(a.0.cmp(b.0)));
        for (s, (i, neg)) in spellings {
            if seen.contains(i) {
                continue;
            }
            seen.push(*i);
            if let Some(o) = self.options.get(*i) {
                out.push((s.as_str(), o, *neg));
            }
        }
        out
    }

    /// Option names whose spelling in a YAML config or a dotted key may use `_` for `-`.
    /// Whether an option's value is the model itself (`model`, `model-path`, `model-id`, vLLM's
    /// logged `model_tag`): it is [`probe_model::LaunchConfig::model`], not an option.
    pub fn is_model_option(&self, name: &str) -> bool {
        let dashed = name.trim_start_matches('-').replace('_', "-");
        self.model_options.contains(&dashed)
            || matches!(
                dashed.as_str(),
                "model" | "model-path" | "model-id" | "model-tag"
            )
    }

    pub fn lookup_name_loose(&self, name: &str) -> Option<&OptionSpec> {
        let dashed = name.replace('_', "-");
        let underscored = name.replace('-', "_");
        for cand in [name, dashed.as_str(), underscored.as_str()] {
            if let Some(o) = self.get(cand) {
                return Some(o);
            }
            if let Some((o, false)) = self.lookup_exact(&format!("--{cand}")) {
                return Some(o);
            }
        }
        None
    }
}

// ---------------------------------------------------------------------------------------------
// TOML form

/// How an engine reads integers with unit suffixes (`--max-model-len 16k`). A catalog names
/// one; a name that is none of these fails at load.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Units {
    /// Plain integers only.
    #[default]
    None,
    /// vLLM's `human_readable_int`: `k`/`m`/`g`/`t` are powers of 1000, `K`/`M`/`G`/`T` of 1024.
    Vllm,
    /// SGLang's: `k`/`M`/`G`/`T` are powers of 1000, `Ki`/`Mi`/`Gi`/`Ti` of 1024.
    Sglang,
}

/// What an engine's start-up arguments line (`server_args=`, `non-default args:`, `Args {`)
/// lists, which says whether an option only that line shows differs from a command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum StartupArgs {
    /// Every argument with the value the engine resolved (SGLang's `ServerArgs(...)`, TGI's
    /// `Args { ... }`): an option only it shows is unknown on a command line's side.
    #[default]
    All,
    /// Only what was given away from its default (vLLM's `non-default args:`): an option only
    /// it shows was given, and differs from a command line without it.
    NonDefault,
    /// Every setting of the environment in effect, unset ones at the defaults the engine prints
    /// (Ollama's `server config` line): an option only it shows is unknown on a command line's
    /// side where it is at the catalog's default, and was set where it is away from it.
    Environment,
    /// The engine's own configuration object, resolved (LMDeploy's `updated
    /// backend_config=TurbomindEngineConfig(...)`): every engine setting, but neither the model
    /// nor the server's options (backend, port, log level): what only the other side shows is
    /// unknown on the record's side, and an option only the record shows is unknown on a command
    /// line's side, as for [`StartupArgs::All`].
    EngineConfig,
}

/// How a Python script starts the engine through its API (a catalog's `[python]`): the module
/// whose import marks the script as the engine's, the calls that start it (by the name written
/// before `(`, the last dotted part: `serve`, `pipeline`), the keyword that takes the engine
/// config object, the classes of that object, and the keywords that name the model. Every other
/// keyword of the call and of the config object is an option of the catalog (`cache_max_entry_count`
/// is `--cache-max-entry-count`).
#[derive(Debug, Clone, Deserialize, Default, PartialEq, Eq)]
#[serde(default, deny_unknown_fields, rename_all = "kebab-case")]
pub struct PythonApi {
    pub modules: Vec<String>,
    pub calls: Vec<String>,
    pub config_keyword: Option<String>,
    pub config_classes: Vec<String>,
    pub model_keywords: Vec<String>,
    /// Keywords of the call that are no option (a chat template object, a log level given to
    /// Python's logging).
    pub ignore: Vec<String>,
}

#[derive(Debug, Clone, Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
struct RawCatalog {
    engine: String,
    /// Read by `Engine::packages` (probe-model), where probe-store reaches it too.
    packages: Vec<String>,
    versions: Vec<String>,
    units: Units,
    underscore_to_dash: bool,
    prefix_match: bool,
    model_options: Vec<String>,
    bench: Option<Bench>,
    config_options: Vec<String>,
    config_file_wins: bool,
    startup_args: StartupArgs,
    python: PythonApi,
    entry: Vec<RawEntry>,
    speculative: RawSpeculative,
    option: Vec<RawOption>,
}

#[derive(Debug, Clone, Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
struct RawEntry {
    kind: EntryKind,
    #[serde(rename = "match")]
    matches: String,
    subcommand: Vec<String>,
    positional_model: bool,
    image_entrypoint: Vec<String>,
    engine: Option<Engine>,
}

#[derive(Debug, Clone, Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
struct RawSpeculative {
    json_option: Option<String>,
    json_keys: BTreeMap<String, String>,
    effective: BTreeMap<String, String>,
    implied: BTreeMap<String, toml::Value>,
    implied_for: Vec<String>,
}

#[derive(Debug, Clone, Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
struct RawRename {
    old: String,
    since: Option<String>,
    /// First version without the old spelling.
    dropped: Option<String>,
}

#[derive(Debug, Clone, Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
struct RawOption {
    name: String,
    aliases: Vec<String>,
    negations: Vec<String>,
    kind: RawKind,
    choices: Vec<String>,
    default: Option<toml::Value>,
    common: Option<String>,
    category: Option<String>,
    renamed_from: Vec<RawRename>,
    env: Option<String>,
    env_part: Option<EnvPart>,
    speculative: Option<String>,
    startup_limit: Option<String>,
    value_map: BTreeMap<String, toml::Value>,
    since: Option<String>,
    until: Option<String>,
    deprecated: bool,
    /// The default is None (resolved at start-up), said where older releases had a value: kept
    /// as JSON null so no "default changed" is claimed against a value nobody knows.
    no_default: bool,
    by_version: Vec<RawVariant>,
}

/// One entry of an option's `by_version` list (see [`VersionVariant`]).
#[derive(Debug, Clone, Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
struct RawVariant {
    since: Option<String>,
    until: Option<String>,
    absent: bool,
    kind: Option<RawKind>,
    choices: Option<Vec<String>>,
    default: Option<toml::Value>,
    no_default: bool,
    aliases: Option<Vec<String>>,
    negations: Option<Vec<String>>,
    deprecated: Option<bool>,
}

impl RawVariant {
    fn into_variant(self, base_kind: RawKind, base_choices: &[String]) -> VersionVariant {
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

fn toml_to_json(v: &toml::Value) -> serde_json::Value {
    serde_json::to_value(v).unwrap_or(serde_json::Value::Null)
}

/// An option's `kind` as written in a catalog (a typo fails at load).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "snake_case")]
enum RawKind {
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

fn parse_kind(kind: RawKind, choices: Vec<String>) -> ValueKind {
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

/// Compares versions on their release numbers in PEP 440 terms ([`crate::version`]): a
/// catalog is per release, so a pre-release reads the catalog of its release (`0.10.1rc2` has
/// the flags of `0.10.1`), and `1.0` = `1.0.0`; the local part (`+cu128`) is ignored.
pub fn version_cmp(a: &str, b: &str) -> std::cmp::Ordering {
    version_key(a).cmp(&version_key(b))
}

/// The release numbers of a version, trailing zeros dropped (`v0.9.1rc1+cu124` -> 0, 9, 1).
fn version_key(v: &str) -> Vec<u64> {
    crate::version::Version::parse(v).release().to_vec()
}

fn in_range(version: Option<&str>, since: Option<&str>, until: Option<&str>) -> bool {
    let Some(v) = version else { return true };
    if let Some(s) = since
        && version_cmp(v, s).is_lt()
    {
        return false;
    }
    if let Some(u) = until
        && version_cmp(v, u).is_gt()
    {
        return false;
    }
    true
}

fn build(engine: Engine, raw: RawCatalog, version: Option<&str>) -> Catalog {
    let bounds = version_bounds(&raw.option);
    let mut options: Vec<OptionSpec> = Vec::new();
    let mut by_name = HashMap::new();
    let mut old: Vec<Vec<String>> = Vec::new();
    for o in raw.option {
        let Some((spec, old_spellings)) = option_spec(o, version) else {
            continue;
        };
        by_name.entry(spec.name.clone()).or_insert(options.len());
        old.push(old_spellings);
        options.push(spec);
    }
    let by_spelling = spellings(&options, &old, version);
    Catalog {
        engine,
        version: version.map(str::to_string),
        known_versions: raw.versions,
        units: raw.units,
        underscore_to_dash: raw.underscore_to_dash,
        prefix_match: raw.prefix_match,
        model_options: raw.model_options,
        bench: raw.bench,
        config_options: raw.config_options,
        config_file_wins: raw.config_file_wins,
        startup_args: raw.startup_args,
        python: raw.python,
        entry_points: raw.entry.into_iter().map(entry_point).collect(),
        speculative: speculative_rules(raw.speculative),
        options,
        bounds,
        by_name,
        by_spelling,
    }
}

/// Every version at which some spelling, default or kind changes, in order.
fn version_bounds(raw: &[RawOption]) -> Vec<String> {
    let mut bounds: Vec<String> = Vec::new();
    for o in raw {
        let variant_bounds = o
            .by_version
            .iter()
            .flat_map(|v| [v.since.as_ref(), v.until.as_ref()]);
        let rename_bounds = o
            .renamed_from
            .iter()
            .flat_map(|r| [r.since.as_ref(), r.dropped.as_ref()]);
        for b in [o.since.as_ref(), o.until.as_ref()]
            .into_iter()
            .chain(variant_bounds)
            .chain(rename_bounds)
            .flatten()
        {
            bounds.push(b.clone());
        }
    }
    bounds.sort_by_cached_key(|b| version_key(b));
    bounds.dedup_by_key(|b| version_key(b));
    bounds
}

/// One option as `version` has it (`None` when that version lacks it), with the old spellings
/// of a renamed option that version still understands.
fn option_spec(mut o: RawOption, version: Option<&str>) -> Option<(OptionSpec, Vec<String>)> {
    if o.name.is_empty() || !in_range(version, o.since.as_deref(), o.until.as_deref()) {
        return None;
    }
    let by_version: Vec<VersionVariant> = std::mem::take(&mut o.by_version)
        .into_iter()
        .map(|v| v.into_variant(o.kind, &o.choices))
        .collect();
    let variant = version.and_then(|v| by_version.iter().find(|x| x.covers(v)));
    if variant.is_some_and(|x| x.absent) {
        return None;
    }
    let mut renamed_from = Vec::new();
    let mut old_spellings = Vec::new();
    for r in &o.renamed_from {
        renamed_from.push((r.old.clone(), r.since.clone()));
        // The old spelling is still understood unless the version is known to have dropped it.
        let dropped = match (version, r.dropped.as_deref()) {
            (Some(v), Some(d)) => version_cmp(v, d).is_ge(),
            _ => false,
        };
        if !dropped {
            old_spellings.push(format!("--{}", r.old.trim_start_matches('-')));
        }
    }
    let default = match (&o.default, o.no_default) {
        (Some(d), _) => Some(toml_to_json(d)),
        (None, true) => Some(serde_json::Value::Null),
        (None, false) => None,
    };
    let mut spec = OptionSpec {
        name: o.name,
        aliases: o.aliases,
        negations: o.negations,
        kind: parse_kind(o.kind, o.choices),
        newest_default: default.clone(),
        default,
        common: o.common,
        category: o.category,
        renamed_from,
        env: o.env,
        env_part: o.env_part,
        speculative: o.speculative,
        startup_limit: o.startup_limit,
        value_map: o
            .value_map
            .iter()
            .map(|(k, v)| (k.clone(), toml_to_json(v)))
            .collect(),
        since: o.since,
        until: o.until,
        deprecated: o.deprecated,
        by_version: Vec::new(),
    };
    if let Some(x) = variant {
        apply_variant(&mut spec, x);
    }
    spec.by_version = by_version;
    Some((spec, old_spellings))
}

/// What a version's `by_version` entry changes in an option.
fn apply_variant(spec: &mut OptionSpec, x: &VersionVariant) {
    if let Some(kind) = &x.kind {
        spec.kind = kind.clone();
    }
    if let Some(default) = &x.default {
        spec.default = default.clone();
    }
    if let Some(aliases) = &x.aliases {
        spec.aliases = aliases.clone();
    }
    if let Some(negations) = &x.negations {
        spec.negations = negations.clone();
    }
    if let Some(deprecated) = x.deprecated {
        spec.deprecated = deprecated;
    }
}

/// Every spelling to (option index, negated). Canonical names first, then aliases and
/// negations, then old spellings of renamed options: an option's own name always wins over
/// another option's alias. Without a version, the spellings of options the newest release still
/// has come before those of removed options (vLLM 0.33 `--disable-log-requests` negates
/// `--enable-log-requests`; before 0.17 it was an option of its own).
fn spellings(
    options: &[OptionSpec],
    old: &[Vec<String>],
    version: Option<&str>,
) -> HashMap<String, (usize, bool)> {
    let mut by_spelling: HashMap<String, (usize, bool)> = HashMap::new();
    let current = |spec: &OptionSpec| version.is_some() || spec.until.is_none();
    type Tier<'o> = Vec<(usize, &'o OptionSpec)>;
    let (now, removed): (Tier<'_>, Tier<'_>) =
        options.iter().enumerate().partition(|(_, s)| current(s));
    for tier in [now, removed] {
        for (idx, spec) in &tier {
            by_spelling
                .entry(format!("--{}", spec.name))
                .or_insert((*idx, false));
        }
        for (idx, spec) in &tier {
            for a in &spec.aliases {
                by_spelling.entry(a.clone()).or_insert((*idx, false));
            }
            for n in &spec.negations {
                by_spelling.entry(n.clone()).or_insert((*idx, true));
            }
        }
    }
    for (idx, olds) in old.iter().enumerate() {
        for a in olds {
            by_spelling.entry(a.clone()).or_insert((idx, false));
        }
    }
    by_spelling
}

fn entry_point(e: RawEntry) -> EntryPoint {
    EntryPoint {
        kind: e.kind,
        matches: e.matches,
        subcommand: e.subcommand,
        positional_model: e.positional_model,
        image_entrypoint: e.image_entrypoint,
        engine: e.engine,
    }
}

fn speculative_rules(raw: RawSpeculative) -> SpeculativeRules {
    SpeculativeRules {
        json_option: raw.json_option,
        json_keys: raw.json_keys,
        effective: raw.effective,
        implied: raw
            .implied
            .iter()
            .map(|(k, v)| (k.clone(), toml_to_json(v)))
            .collect(),
        implied_for: raw.implied_for,
    }
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
