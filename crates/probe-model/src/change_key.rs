//! What a [`crate::Change`] is about, typed: the area of its key (an option, a variable, a
//! package, a GPU field, ...) and the names in it. [`ChangeKey`]'s `Display` writes the key as
//! the JSON documents carry it (`env:VLLM_USE_V1`, `package:torch@/venv/bin/python`,
//! `gpu:1.power_cap`, `vllm:8000/max-num-seqs`), and [`ChangeKey::parse`] reads any key back,
//! so code asks a key its area instead of matching its text by prefix.

use std::fmt;

/// The area a change key is in, with how its key is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum KeyArea {
    /// A launch option, by its canonical name (`max-num-seqs`; `(unnamed option)` for a name
    /// lost in parsing).
    Option,
    /// `engine`: the engine itself.
    Engine,
    /// `engine_version`.
    EngineVersion,
    /// `model`: the model a launch serves.
    Model,
    /// `speculative.NAME`: a normalised speculative setting (`speculative.num_steps`).
    Speculative,
    /// How the engine was entered: `interpreter`, `venv`, `entrypoint`, `working_directory`,
    /// `wrappers`.
    Detail,
    /// A server's process: `pid`, `start_time`.
    Process,
    /// `unknown:FLAG`: a flag the catalog does not know.
    Unknown,
    /// `env:NAME`: an environment variable of a launch.
    Env,
    /// `limit:NAME`: a limit the engine resolved at start-up.
    Limit,
    /// `package:NAME`, or `package:NAME@INTERPRETER` when a host has several environments.
    Package,
    /// `model_config:NAME`, or `model_config[MODEL]:NAME` when several models are compared.
    ModelConfig,
    /// `model_config.NAME`: a model config field as two runs are compared.
    RunModelConfig,
    /// `metric:NAME`: a log metric, period against period.
    Metric,
    /// `host.NAME`: a fact of the host (`host.kernel`).
    Host,
    /// `gpu.NAME`: a fact of all the GPUs (`gpu.driver_version`, `gpu.count`).
    Gpus,
    /// `gpu:INDEX.FIELD`: one GPU's field (`gpu:1.power_cap`, `gpu:*.persistence_mode`).
    Gpu,
    /// `gpu-process:PID`: a process of another tenant on the GPUs.
    GpuProcess,
    /// `kernel:NAME`: a kernel GPU fault.
    Kernel,
    /// `lib:NAME`: a library loaded.
    Lib,
    /// `server:ADDRESS` or `server:IDENTITY`: a server, or what it said about itself
    /// (`server:127.0.0.1:8000.max_running_requests`).
    Server,
    /// `unit:NAME`: a systemd unit.
    Unit,
    /// `container:NAME.FIELD`: a container's field (`container:vllm.image`).
    Container,
}

impl KeyArea {
    /// Every area, for tables and tests.
    pub const ALL: [KeyArea; 23] = [
        KeyArea::Option,
        KeyArea::Engine,
        KeyArea::EngineVersion,
        KeyArea::Model,
        KeyArea::Speculative,
        KeyArea::Detail,
        KeyArea::Process,
        KeyArea::Unknown,
        KeyArea::Env,
        KeyArea::Limit,
        KeyArea::Package,
        KeyArea::ModelConfig,
        KeyArea::RunModelConfig,
        KeyArea::Metric,
        KeyArea::Host,
        KeyArea::Gpus,
        KeyArea::Gpu,
        KeyArea::GpuProcess,
        KeyArea::Kernel,
        KeyArea::Lib,
        KeyArea::Server,
        KeyArea::Unit,
        KeyArea::Container,
    ];

    /// The text a key of this area starts with (after a server's `IDENTITY/`).
    fn prefix(self) -> &'static str {
        match self {
            KeyArea::Option | KeyArea::Detail | KeyArea::Process => "",
            KeyArea::Engine => "engine",
            KeyArea::EngineVersion => "engine_version",
            KeyArea::Model => "model",
            KeyArea::Speculative => "speculative.",
            KeyArea::Unknown => "unknown:",
            KeyArea::Env => "env:",
            KeyArea::Limit => "limit:",
            KeyArea::Package => "package:",
            KeyArea::ModelConfig => "model_config",
            KeyArea::RunModelConfig => "model_config.",
            KeyArea::Metric => "metric:",
            KeyArea::Host => "host.",
            KeyArea::Gpus => "gpu.",
            KeyArea::Gpu => "gpu:",
            KeyArea::GpuProcess => "gpu-process:",
            KeyArea::Kernel => "kernel:",
            KeyArea::Lib => "lib:",
            KeyArea::Server => "server:",
            KeyArea::Unit => "unit:",
            KeyArea::Container => "container:",
        }
    }

    /// Areas a key of the whole snapshot is in (never under a server's `IDENTITY/`), longest
    /// prefix first where one prefix starts another.
    const SNAPSHOT: [KeyArea; 13] = [
        KeyArea::Package,
        KeyArea::RunModelConfig,
        KeyArea::ModelConfig,
        KeyArea::Metric,
        KeyArea::Host,
        KeyArea::Gpus,
        KeyArea::GpuProcess,
        KeyArea::Gpu,
        KeyArea::Kernel,
        KeyArea::Lib,
        KeyArea::Server,
        KeyArea::Unit,
        KeyArea::Container,
    ];

    /// Areas of a launch's own keys that have a prefix.
    const LAUNCH: [KeyArea; 4] = [
        KeyArea::Speculative,
        KeyArea::Unknown,
        KeyArea::Env,
        KeyArea::Limit,
    ];

    /// Whether keys of this area name one thing: the whole key is the prefix.
    fn is_fixed(self) -> bool {
        matches!(
            self,
            KeyArea::Engine | KeyArea::EngineVersion | KeyArea::Model
        )
    }
}

/// The launch details' names ([`KeyArea::Detail`]).
const DETAILS: [&str; 5] = [
    "interpreter",
    "venv",
    "entrypoint",
    "working_directory",
    "wrappers",
];

/// The server-process names ([`KeyArea::Process`]).
const PROCESS: [&str; 2] = ["pid", "start_time"];

/// A change key, typed. `Display` writes it as the documents carry it; [`ChangeKey::parse`]
/// reads it back.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ChangeKey {
    /// The server a launch-level key belongs to when a snapshot has several (`vllm:8000` in
    /// `vllm:8000/max-num-seqs`).
    pub server: Option<String>,
    pub area: KeyArea,
    /// The name within the area: the option, variable, package, field (empty for the fixed
    /// keys `engine`, `engine_version`, `model`).
    pub name: String,
    /// What the name is of, where a key says it: a package's interpreter (`@...`), a model
    /// config's model (`[...]`), a GPU (`gpu:1`), a container (`container:vllm`).
    pub of: Option<String>,
}

impl ChangeKey {
    /// A key of `area` named `name`.
    pub fn new(area: KeyArea, name: impl Into<String>) -> ChangeKey {
        ChangeKey {
            server: None,
            area,
            name: name.into(),
            of: None,
        }
    }

    /// One of the keys that name one thing: `engine`, `engine_version`, `model`.
    pub fn fixed(area: KeyArea) -> ChangeKey {
        ChangeKey::new(area, String::new())
    }

    /// The same key, of `of` (a package's interpreter, a model, a GPU, a container).
    pub fn of(mut self, of: impl Into<String>) -> ChangeKey {
        self.of = Some(of.into());
        self
    }

    /// The same key, of the server `identity` (`vllm:8000/...`).
    pub fn on_server(mut self, identity: impl Into<String>) -> ChangeKey {
        self.server = Some(identity.into());
        self
    }

    /// Reads a key as [`Display`](fmt::Display) writes it. Every text is some key: one that no
    /// area's prefix starts is an option's name.
    pub fn parse(key: &str) -> ChangeKey {
        let parts = KeyParts::of(key);
        ChangeKey {
            server: parts.server.map(str::to_string),
            area: parts.area,
            name: parts.name.to_string(),
            of: parts.of.map(str::to_string),
        }
    }

    /// The area of a key as written, without copying it.
    pub fn area_of(key: &str) -> KeyArea {
        KeyParts::of(key).area
    }

    /// The name of a key as written when it is in `area` (`VLLM_USE_V1` of `env:VLLM_USE_V1`),
    /// without copying it.
    pub fn name_in(key: &str, area: KeyArea) -> Option<&str> {
        let parts = KeyParts::of(key);
        (parts.area == area).then_some(parts.name)
    }

    /// Whether the key is about speculative decoding: a normalised speculative setting, or an
    /// option whose first word is `speculative` (`speculative-token-map`, `speculative_config`).
    pub fn is_speculative(&self) -> bool {
        self.area == KeyArea::Speculative
            || (self.area == KeyArea::Option
                && self.name.split(['-', '_', '.']).next() == Some("speculative"))
    }
}

impl fmt::Display for ChangeKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(server) = &self.server {
            write!(f, "{server}/")?;
        }
        match (self.area, &self.of) {
            (KeyArea::Package, Some(of)) => write!(f, "package:{}@{of}", self.name),
            (KeyArea::ModelConfig, Some(of)) => write!(f, "model_config[{of}]:{}", self.name),
            (KeyArea::ModelConfig, None) => write!(f, "model_config:{}", self.name),
            (KeyArea::Gpu | KeyArea::Container, Some(of)) => {
                write!(f, "{}{of}.{}", self.area.prefix(), self.name)
            }
            (area, _) => write!(f, "{}{}", area.prefix(), self.name),
        }
    }
}

impl std::str::FromStr for ChangeKey {
    type Err = std::convert::Infallible;

    fn from_str(key: &str) -> Result<ChangeKey, Self::Err> {
        Ok(ChangeKey::parse(key))
    }
}

impl crate::Change {
    /// This change's key, typed.
    pub fn parsed_key(&self) -> ChangeKey {
        ChangeKey::parse(&self.key)
    }

    /// The area of this change's key.
    pub fn key_area(&self) -> KeyArea {
        ChangeKey::area_of(&self.key)
    }

    /// The name in this change's key when it is in `area` (`VLLM_USE_V1` of `env:VLLM_USE_V1`).
    pub fn key_name(&self, area: KeyArea) -> Option<&str> {
        ChangeKey::name_in(&self.key, area)
    }
}

/// A key's parts, borrowed from its text.
struct KeyParts<'a> {
    server: Option<&'a str>,
    area: KeyArea,
    name: &'a str,
    of: Option<&'a str>,
}

impl<'a> KeyParts<'a> {
    fn of(key: &'a str) -> KeyParts<'a> {
        let snapshot = KeyArea::SNAPSHOT.into_iter().find_map(|area| {
            let rest = key.strip_prefix(area.prefix())?;
            KeyParts::snapshot(area, rest)
        });
        if let Some(parts) = snapshot {
            return parts;
        }
        // A launch's key, under its server's identity when a snapshot has several (the
        // identity may hold `/`, as a model name does; a launch key never does).
        let (server, body) = match key.rsplit_once('/') {
            Some((server, body)) => (Some(server), body),
            None => (None, key),
        };
        let mut parts = KeyParts::launch(body);
        parts.server = server;
        parts
    }

    /// A key of the whole snapshot; `None` when the prefix is only the start of a name
    /// (`model_configs`).
    fn snapshot(area: KeyArea, rest: &'a str) -> Option<KeyParts<'a>> {
        let plain = KeyParts {
            server: None,
            area,
            name: rest,
            of: None,
        };
        let split = match area {
            KeyArea::Package => rest.split_once('@').map(|(name, of)| (of, name)),
            KeyArea::ModelConfig => {
                if let Some(name) = rest.strip_prefix(':') {
                    return Some(KeyParts { name, ..plain });
                }
                // Not a model config key after all (`model_configs`) without `[MODEL]:`.
                Some(rest.strip_prefix('[')?.rsplit_once("]:")?)
            }
            KeyArea::Gpu | KeyArea::Container => rest.rsplit_once('.'),
            _ => None,
        };
        Some(match split {
            Some((of, name)) => KeyParts {
                name,
                of: Some(of),
                ..plain
            },
            None => plain,
        })
    }

    fn launch(body: &'a str) -> KeyParts<'a> {
        for area in KeyArea::LAUNCH {
            if let Some(name) = body.strip_prefix(area.prefix()) {
                return KeyParts::launch_plain(area, name);
            }
        }
        if let Some(area) = KeyArea::ALL
            .into_iter()
            .find(|area| area.is_fixed() && area.prefix() == body)
        {
            return KeyParts::launch_plain(area, "");
        }
        let area = if DETAILS.contains(&body) {
            KeyArea::Detail
        } else if PROCESS.contains(&body) {
            KeyArea::Process
        } else {
            KeyArea::Option
        };
        KeyParts::launch_plain(area, body)
    }

    fn launch_plain(area: KeyArea, name: &'a str) -> KeyParts<'a> {
        KeyParts {
            server: None,
            area,
            name,
            of: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{ChangeKey, KeyArea};

    /// One key of every area, as the documents carry it, with its parts.
    fn table() -> Vec<(&'static str, ChangeKey)> {
        use KeyArea::*;
        vec![
            ("max-num-seqs", ChangeKey::new(Option, "max-num-seqs")),
            (
                "(unnamed option)",
                ChangeKey::new(Option, "(unnamed option)"),
            ),
            ("engine", ChangeKey::fixed(Engine)),
            ("engine_version", ChangeKey::fixed(EngineVersion)),
            ("model", ChangeKey::fixed(Model)),
            (
                "speculative.num_steps",
                ChangeKey::new(Speculative, "num_steps"),
            ),
            (
                "working_directory",
                ChangeKey::new(Detail, "working_directory"),
            ),
            ("pid", ChangeKey::new(Process, "pid")),
            ("unknown:--foo", ChangeKey::new(Unknown, "--foo")),
            ("env:VLLM_USE_V1", ChangeKey::new(Env, "VLLM_USE_V1")),
            (
                "env:(login session)",
                ChangeKey::new(Env, "(login session)"),
            ),
            (
                "limit:max_total_num_tokens",
                ChangeKey::new(Limit, "max_total_num_tokens"),
            ),
            ("package:torch", ChangeKey::new(Package, "torch")),
            (
                "package:torch@/opt/venv/bin/python",
                ChangeKey::new(Package, "torch").of("/opt/venv/bin/python"),
            ),
            (
                "model_config:num_hidden_layers",
                ChangeKey::new(ModelConfig, "num_hidden_layers"),
            ),
            (
                "model_config[Qwen/Qwen3-8B]:num_hidden_layers",
                ChangeKey::new(ModelConfig, "num_hidden_layers").of("Qwen/Qwen3-8B"),
            ),
            (
                "model_config.torch_dtype",
                ChangeKey::new(RunModelConfig, "torch_dtype"),
            ),
            (
                "metric:gen_throughput",
                ChangeKey::new(Metric, "gen_throughput"),
            ),
            ("host.kernel", ChangeKey::new(Host, "kernel")),
            ("gpu.driver_version", ChangeKey::new(Gpus, "driver_version")),
            ("gpu:1.power_cap", ChangeKey::new(Gpu, "power_cap").of("1")),
            (
                "gpu:0000:17:00.0.ecc",
                ChangeKey::new(Gpu, "ecc").of("0000:17:00.0"),
            ),
            (
                "gpu:*.persistence_mode",
                ChangeKey::new(Gpu, "persistence_mode").of("*"),
            ),
            ("gpu-process:4242", ChangeKey::new(GpuProcess, "4242")),
            (
                "kernel:xid_79_on_0000:17:00.0",
                ChangeKey::new(Kernel, "xid_79_on_0000:17:00.0"),
            ),
            ("lib:libnccl.so.2", ChangeKey::new(Lib, "libnccl.so.2")),
            (
                "server:127.0.0.1:8000.lifetime:gen_throughput",
                ChangeKey::new(Server, "127.0.0.1:8000.lifetime:gen_throughput"),
            ),
            ("server:vllm:8000", ChangeKey::new(Server, "vllm:8000")),
            ("unit:vllm.service", ChangeKey::new(Unit, "vllm.service")),
            (
                "container:vllm.image",
                ChangeKey::new(Container, "image").of("vllm"),
            ),
            (
                "vllm:8000/max-num-seqs",
                ChangeKey::new(Option, "max-num-seqs").on_server("vllm:8000"),
            ),
            (
                "sglang:Qwen/Qwen3-8B/env:NCCL_P2P_DISABLE",
                ChangeKey::new(Env, "NCCL_P2P_DISABLE").on_server("sglang:Qwen/Qwen3-8B"),
            ),
            (
                "vllm.service/engine_version",
                ChangeKey::fixed(EngineVersion).on_server("vllm.service"),
            ),
            (
                "vllm.service/pid",
                ChangeKey::new(Process, "pid").on_server("vllm.service"),
            ),
        ]
    }

    #[test]
    fn every_area_round_trips_through_display_and_parse() {
        let table = table();
        for area in KeyArea::ALL {
            assert!(
                table.iter().any(|(_, key)| key.area == area),
                "{area:?} has no row"
            );
        }
        for (written, key) in table {
            assert_eq!(key.to_string(), written, "{key:?}");
            assert_eq!(ChangeKey::parse(written), key, "{written}");
            assert_eq!(ChangeKey::area_of(written), key.area, "{written}");
            assert_eq!(
                ChangeKey::name_in(written, key.area),
                Some(key.name.as_str()),
                "{written}"
            );
        }
    }

    #[test]
    fn any_text_reads_back_as_written() {
        for text in [
            "",
            "model_configs",
            "gpu:",
            "package:",
            "a/b/c",
            "server:",
            "model_config[x",
        ] {
            assert_eq!(ChangeKey::parse(text).to_string(), text);
        }
    }

    #[test]
    fn speculative_keys() {
        let cases = [
            ("speculative.algorithm", true),
            ("speculative-token-map", true),
            ("speculative_config", true),
            ("vllm:8000/speculative.num_steps", true),
            ("speculatively", false),
            ("env:SPECULATIVE", false),
            ("max-num-seqs", false),
        ];
        for (key, expected) in cases {
            assert_eq!(ChangeKey::parse(key).is_speculative(), expected, "{key}");
        }
    }
}
