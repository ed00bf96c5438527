//! The catalog's types: an engine's options, entry points and conventions, as the rest of the
//! crate reads them.

use std::collections::{BTreeMap, HashMap};

use probe_model::Engine;
use serde::Deserialize;

use super::versions::in_range;

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
    pub(super) newest_default: Option<serde_json::Value>,
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
    pub(super) engine: Engine,
    pub(super) version: Option<String>,
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
    pub bench: Option<super::Bench>,
    /// Option holding a YAML config file (`config`, `extra_llm_api_options`).
    pub config_options: Vec<String>,
    /// The config file's values override the command line's (TRT-LLM applies its
    /// `--extra_llm_api_options` YAML over the flags); otherwise the command line wins.
    pub config_file_wins: bool,
    /// What the engine's start-up arguments line lists.
    pub startup_args: StartupArgs,
    /// How a Python script starts the engine through its API (`[python]`).
    pub python: PythonApi,
    /// The environment that configures the engine's server (`[environment]`).
    pub environment: Environment,
    pub entry_points: Vec<EntryPoint>,
    pub speculative: SpeculativeRules,
    pub(super) options: Vec<OptionSpec>,
    /// Every release named by a version bound of the data (`since`, `until`, variants, renames),
    /// sorted and distinct: two versions between the same bounds get the same catalog.
    pub(super) bounds: Vec<String>,
    pub(super) by_name: HashMap<String, usize>,
    /// Every spelling with dashes (`--tp-size`, `-tp`) -> (option index, negated).
    pub(super) by_spelling: HashMap<String, (usize, bool)>,
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

/// The environment that configures an engine's server (a catalog's `[environment]`): a unit or
/// drop-in without `ExecStart=` that sets a variable named with `prefix` (`systemctl edit
/// ollama` writes one) configures the server its unit starts with the default entry point.
#[derive(Debug, Clone, Deserialize, Default, PartialEq, Eq)]
#[serde(default, deny_unknown_fields, rename_all = "kebab-case")]
pub struct Environment {
    /// What the server's own variables start with (`OLLAMA_`).
    pub prefix: Option<String>,
    /// The engine's name as people write it, for the words a report says (`Ollama`).
    pub label: Option<String>,
}
