//! The embedded configuration: probe definitions and the pattern lists the parsers use.

use std::sync::LazyLock;

use regex::{Regex, RegexBuilder};
use serde::Deserialize;

const PROBES: &str = include_str!("../../../configs/probes.toml");
const SERVERS: &str = include_str!("../../../configs/servers.toml");
const PACKAGES: &str = include_str!("../../../configs/packages.toml");
const MODEL_KEYS: &str = include_str!("../../../configs/model_keys.toml");
const LOG_PLACES: &str = include_str!("../../../configs/log_places.toml");

/// Where people keep server output their own tools wrote (`configs/log_places.toml`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct LogPlaces {
    pub max_per_glob: u32,
    pub max_file_bytes: u64,
    pub max_dated_files: u32,
    pub pod_logs: String,
    pub max_pod_containers: u32,
    /// Scripts read at most: those a cron line or a service's `ExecStart=` runs.
    pub max_scripts: u32,
    /// Directories never read from.
    pub never: Vec<String>,
    /// Prefixes of directories never read from.
    pub never_under: Vec<String>,
    pub place: Vec<LogPlace>,
}

/// One kind of file that says where output goes, and where such files are.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LogPlace {
    pub kind: PlaceKind,
    pub globs: Vec<String>,
}

/// What a file of `configs/log_places.toml` is, and so how its text is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PlaceKind {
    /// A system crontab: 5 time fields (or `@daily`), a user, the command.
    Cron,
    /// A user's crontab: 5 time fields, the command.
    Crontab,
    /// A systemd timer (its service is read beside it).
    Timer,
    /// The service a timer starts: its `ExecStart=` lines.
    Service,
    /// A logrotate config.
    Logrotate,
    /// dockerd's `daemon.json`.
    Docker,
    /// A script cron or a service runs (`/etc/cron.daily/*`, or the path a cron line or an
    /// `ExecStart=` starts): every line is a shell command.
    Script,
}

impl PlaceKind {
    /// The word the script and the records carry.
    pub fn as_str(self) -> &'static str {
        match self {
            PlaceKind::Cron => "cron",
            PlaceKind::Crontab => "crontab",
            PlaceKind::Timer => "timer",
            PlaceKind::Service => "service",
            PlaceKind::Logrotate => "logrotate",
            PlaceKind::Docker => "docker",
            PlaceKind::Script => "script",
        }
    }

    pub fn from_word(w: &str) -> Option<PlaceKind> {
        [
            PlaceKind::Cron,
            PlaceKind::Crontab,
            PlaceKind::Timer,
            PlaceKind::Service,
            PlaceKind::Logrotate,
            PlaceKind::Docker,
            PlaceKind::Script,
        ]
        .into_iter()
        .find(|k| k.as_str() == w)
    }
}

fn parse_log_places(text: &str) -> Result<LogPlaces, ConfigError> {
    let p: LogPlaces = toml::from_str(text)?;
    let bad = p
        .place
        .iter()
        .flat_map(|pl| pl.globs.iter())
        .chain(std::iter::once(&p.pod_logs))
        .find(|g| !g.starts_with('/') || !g.chars().all(|c| c.is_ascii_graphic()));
    match bad {
        Some(g) => Err(ConfigError::Invalid(format!(
            "log place {g:?}: an absolute path without spaces or controls"
        ))),
        None => Ok(p),
    }
}

static LOG_PLACES_CONFIG: LazyLock<LogPlaces> =
    LazyLock::new(|| built_in("configs/log_places.toml", parse_log_places(LOG_PLACES)));

pub fn log_places() -> &'static LogPlaces {
    &LOG_PLACES_CONFIG
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Probes {
    pub prelude: String,
    /// How round 2 thins the server logs it reads whole (`crate::thin`).
    pub thinning: Thinning,
    #[serde(rename = "probe")]
    pub probes: Vec<Probe>,
}

/// `[thinning]` of `configs/probes.toml`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct Thinning {
    /// Metric lines kept an hour, per kind of line (a divisor of 60: the slots are minutes).
    pub metric_lines_per_hour: u32,
    /// Start-up, lifecycle and error lines kept an hour, and a run.
    pub keep_per_hour: u32,
    pub keep_per_run: u32,
    /// Lines kept whatever they are after a start (multi-line start-up blocks).
    pub startup_window: u32,
    /// The newest metric lines, all kept (a run started minutes ago keeps its samples).
    pub recent_metric_lines: u32,
    /// Bytes one log's kept lines may take.
    pub max_bytes: u64,
    /// More substrings of lines kept in full (errors, the engines' start-up lines beyond the
    /// readers' markers).
    pub keep: Vec<String>,
    /// Substrings of the lines that start a run (and its start-up window).
    pub start: Vec<String>,
    /// Substrings of a metric line logged while idle.
    pub idle: Vec<String>,
    /// The awk program, with `@MET@`, `@METS@`, `@KEEP@`, `@START@`, `@IDLE@`, `@MPH@`,
    /// `@KPH@`, `@KPR@`, `@WIN@`, `@RECENT@` and `@MAXB@` filled in here.
    pub program: String,
}

/// One probe: a section of the remote script.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Probe {
    pub name: String,
    #[serde(default = "one")]
    pub round: u8,
    /// The exec channel: the sections of one group share one; `None`: its own.
    #[serde(default)]
    pub group: Option<String>,
    /// Inside its group, the sections of one lane run one after another and the lanes run
    /// alongside each other (`None`: the group's first lane). A `depends_on` within the group
    /// names a section of the same lane.
    #[serde(default)]
    pub lane: Option<String>,
    pub parser: ParserKind,
    pub timeout_s: u64,
    pub max_bytes: u64,
    #[serde(default)]
    pub sudo: bool,
    #[serde(default)]
    pub depends_on: Option<String>,
    pub command: String,
}

/// Which parser reads a probe's output: a closed set, so a name `configs/probes.toml`
/// misspells fails at load instead of leaving its section unread. Round-1 and round-2
/// parsers are apart, so each round's match lists exactly its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(untagged)]
pub enum ParserKind {
    Round1(Round1Parser),
    Round2(Round2Parser),
}

/// Parsers of round-1 sections.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Round1Parser {
    Host,
    History,
    Units,
    UnitState,
    Processes,
    Containers,
    GpuQuery,
    GpuApps,
    GpuTopo,
    KernelLog,
    PkgHistory,
    LogPlaces,
}

/// Parsers of round-2 sections (what round 1 named).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Round2Parser {
    Python,
    Models,
    Logs,
    ContainerLogs,
    GpuProcs,
    Journal,
    Benchmarks,
    LaunchFiles,
    FoundLogs,
    SelfInstalled,
}

impl ParserKind {
    pub fn round1(self) -> Option<Round1Parser> {
        match self {
            ParserKind::Round1(k) => Some(k),
            ParserKind::Round2(_) => None,
        }
    }

    pub fn round2(self) -> Option<Round2Parser> {
        match self {
            ParserKind::Round2(k) => Some(k),
            ParserKind::Round1(_) => None,
        }
    }

    /// The round whose sections this parser reads.
    pub fn round(self) -> u8 {
        match self {
            ParserKind::Round1(_) => 1,
            ParserKind::Round2(_) => 2,
        }
    }
}

fn one() -> u8 {
    1
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ServersToml {
    process_match: String,
    unit_exec_match: String,
    unit_name_globs: Vec<String>,
    container_match: String,
    engine: Vec<EngineToml>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
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
    /// EREs for the remote grep (each compiled at load too, so a broken one fails there).
    pub process_match: String,
    pub unit_exec_match: String,
    pub unit_name_globs: Vec<String>,
    pub container_re: Regex,
    pub wrappers: Vec<String>,
    pub engines: Vec<EnginePatterns>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Packages {
    pub system_match: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelKeys {
    pub nested: Vec<String>,
    pub max_value_bytes: usize,
    pub keys: Vec<String>,
}

/// Built-in data (an embedded `configs/` file, a pattern written in the source) as a value,
/// through the workspace's one loader of built-in data ([`probe_launch::embedded::load`]): the
/// one place the crate may stop on a broken input, because that input is part of the build,
/// never of a host or a user. Every caller sits behind one `LazyLock`, and the tests
/// (`every_embedded_config_parses` here, the pattern tests of the parsers) force each one.
pub(crate) use probe_launch::embedded::load as built_in;

/// Why built-in data (an embedded `configs/` file, a pattern written in the source) does not
/// load: the TOML, a pattern in it (each with its source error), or a rule the file breaks.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error(transparent)]
    Toml(#[from] toml::de::Error),
    #[error("bad pattern {pattern}: {source}")]
    Pattern {
        pattern: String,
        #[source]
        source: regex::Error,
    },
    #[error("{0}")]
    Invalid(String),
}

impl ConfigError {
    /// A pattern that does not compile, named.
    pub fn pattern(pattern: &str) -> impl FnOnce(regex::Error) -> ConfigError + '_ {
        move |source| ConfigError::Pattern {
            pattern: pattern.to_string(),
            source,
        }
    }
}

/// A case-insensitive pattern of a config file.
fn ci(p: &str) -> Result<Regex, ConfigError> {
    RegexBuilder::new(p)
        .case_insensitive(true)
        .build()
        .map_err(ConfigError::pattern(p))
}

fn parse_probes(text: &str) -> Result<Probes, ConfigError> {
    let p: Probes = toml::from_str(text)?;
    match p.probes.iter().find(|q| q.parser.round() != q.round) {
        Some(q) => Err(ConfigError::Invalid(format!(
            "probe {}: parser {:?} reads round {}, the probe runs in round {}",
            q.name,
            q.parser,
            q.parser.round(),
            q.round
        ))),
        None => Ok(p),
    }
}

fn parse_servers(text: &str) -> Result<Servers, ConfigError> {
    let t: ServersToml = toml::from_str(text)?;
    let engines = t
        .engine
        .iter()
        .map(|e| {
            Ok(EnginePatterns {
                name: e.name.clone(),
                matches: ci(&e.matches)?,
                worker: ci(&e.worker)?,
            })
        })
        .collect::<Result<_, ConfigError>>()?;
    ci(&t.process_match)?;
    ci(&t.unit_exec_match)?;
    Ok(Servers {
        container_re: ci(&t.container_match)?,
        engines,
        process_match: t.process_match,
        unit_exec_match: t.unit_exec_match,
        unit_name_globs: t.unit_name_globs,
        wrappers: probe_launch::wrappers::ancestor_names(),
    })
}

fn parse_packages(text: &str) -> Result<Packages, ConfigError> {
    let p: Packages = toml::from_str(text)?;
    ci(&p.system_match)?;
    Ok(p)
}

fn parse_model_keys(text: &str) -> Result<ModelKeys, ConfigError> {
    Ok(toml::from_str(text)?)
}

static PROBES_CONFIG: LazyLock<Probes> =
    LazyLock::new(|| built_in("configs/probes.toml", parse_probes(PROBES)));
static SERVERS_CONFIG: LazyLock<Servers> =
    LazyLock::new(|| built_in("configs/servers.toml", parse_servers(SERVERS)));
static PACKAGES_CONFIG: LazyLock<Packages> =
    LazyLock::new(|| built_in("configs/packages.toml", parse_packages(PACKAGES)));
static SYSTEM_PACKAGES: LazyLock<Regex> =
    LazyLock::new(|| built_in("configs/packages.toml", ci(&PACKAGES_CONFIG.system_match)));
static MODEL_KEYS_CONFIG: LazyLock<ModelKeys> =
    LazyLock::new(|| built_in("configs/model_keys.toml", parse_model_keys(MODEL_KEYS)));

pub fn probes() -> &'static Probes {
    &PROBES_CONFIG
}

pub fn servers() -> &'static Servers {
    &SERVERS_CONFIG
}

pub fn packages() -> &'static Packages {
    &PACKAGES_CONFIG
}

/// `system_match` of `configs/packages.toml`, compiled (case-insensitive).
pub fn system_packages() -> &'static Regex {
    &SYSTEM_PACKAGES
}

pub fn model_keys() -> &'static ModelKeys {
    &MODEL_KEYS_CONFIG
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_embedded_config_parses() {
        let errors = [
            ("probes.toml", parse_probes(PROBES).err()),
            ("log_places.toml", parse_log_places(LOG_PLACES).err()),
            ("servers.toml", parse_servers(SERVERS).err()),
            ("packages.toml", parse_packages(PACKAGES).err()),
            ("model_keys.toml", parse_model_keys(MODEL_KEYS).err()),
        ];
        for (name, err) in errors {
            assert!(err.is_none(), "configs/{name}: {err:?}");
        }
        // And each through its `LazyLock`, the configs other modules embed included.
        assert!(!probes().probes.is_empty());
        assert!(!servers().engines.is_empty());
        assert!(system_packages().is_match("cuda-toolkit-12-4"));
        assert!(!model_keys().keys.is_empty());
        assert!(!crate::server::endpoints::endpoints().engines.is_empty());
        assert!(crate::redact::Redactor::builtin().is_secret_key("HF_TOKEN"));
        assert!(!crate::parse::engine_lines::read("offloaded 3/4 layers to GPU").is_empty());
    }

    const THINNING: &str = "[thinning]\nmetric-lines-per-hour = 12\nkeep-per-hour = 1\nkeep-per-run = 1\nstartup-window = 1\nrecent-metric-lines = 1\nmax-bytes = 1\nkeep = []\nstart = []\nidle = []\nprogram = \"\"\n";

    /// A typo in `configs/probes.toml` fails at load instead of skipping a section.
    #[test]
    fn probe_typos_fail_at_load() {
        let probe = |extra: &str| {
            format!(
                "prelude = \"\"\n{THINNING}[[probe]]\nname = \"h\"\ntimeout_s = 1\nmax_bytes = 1\ncommand = \"true\"\n{extra}"
            )
        };
        let host = parse_probes(&probe("parser = \"host\"")).map(|p| p.probes);
        assert_eq!(
            host.ok().map(|p| p.first().map(|p| p.parser)),
            Some(Some(ParserKind::Round1(Round1Parser::Host)))
        );
        for bad in [
            "parser = \"hots\"",
            "parser = \"host\"\ntimeot_s = 1",
            "parser = \"journal\"",
            "parser = \"host\"\nround = 2",
        ] {
            assert!(parse_probes(&probe(bad)).is_err(), "{bad}");
        }
    }

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
        let process_re = ci(&s.process_match).unwrap();
        assert!(process_re.is_match("python3 -m sglang.launch_server"));
        assert!(
            s.engines
                .iter()
                .any(|e| e.name == "vllm" && e.worker.is_match("VLLM::Worker_TP0"))
        );
        assert!(
            model_keys()
                .keys
                .contains(&"num_nextn_predict_layers".to_string())
        );
        assert_eq!(normalize_dist("Flash_Attn"), "flash-attn");
    }
}
