//! `ssh_config` resolution with OpenSSH semantics (`ssh -G`).
//!
//! [`resolve`] reads the operator's client configuration the way OpenSSH 9.2 does and returns the
//! settings the transport needs as a [`ResolvedConfig`]; [`ResolvedConfig::ssh_g`] prints them in
//! the `key value` form of `ssh -G`. The differential test `tests/transport/ssh_config_diff.rs`
//! compares both against the real `ssh -G` over many configuration files.
//!
//! What is modelled, as OpenSSH does it:
//! * `Host` patterns (`*`, `?`, `!negation`, several per line, matched case-sensitively against the
//!   name as typed) and `Match host|originalhost|user|localuser|all|canonical|final` with `!`;
//!   `Match final`/`canonical` and `CanonicalizeHostname` trigger OpenSSH's second pass, in which
//!   `Host` matches the resolved host name.
//! * first value wins; `IdentityFile` (and the forwarding/env keywords kept in
//!   [`ResolvedConfig::other`]) accumulate; `Include` with globs (relative to `~/.ssh` for user
//!   configuration, `/etc/ssh` for the system file), nested, inside `Host`/`Match` blocks.
//! * `Key=Value`, tabs, quotes, comments, case-insensitive keywords; unknown keywords are an error
//!   unless `IgnoreUnknown` names them; known keywords we do not model are kept unvalidated.
//! * `HostName` with `%h`, lower-cased unless it is an address; `~`/`%` expansion of
//!   `UserKnownHostsFile` and `IdentityAgent` (as `ssh -G` prints them) and of identity files (when
//!   they are loaded, [`ResolvedConfig::expanded_identity_files`]).
//!
//! Not modelled: `Match exec` (never runs commands; treated as a failed command, with a warning),
//! `Match localnetwork` (treated as no match, with a warning), host name canonicalisation by DNS
//! (`CanonicalDomains`), and the validation of keywords we do not model (`Compression maybe` is
//! accepted here but refused by OpenSSH).

mod expand;
mod keywords;
mod lexer;
mod pattern;
mod printer;
mod reader;
mod resolver;
mod sys;

use std::path::{Path, PathBuf};

pub use resolver::resolve;

/// Where to read configuration from and whom we are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolveOptions {
    /// Like `ssh -F FILE`: read only this file (as user configuration), not the system file.
    /// `None`: `~/.ssh/config` then `/etc/ssh/ssh_config`.
    pub config_file: Option<PathBuf>,
    /// Home directory, for `~`, `%d` and relative `Include`s.
    pub home: PathBuf,
    /// Local user name (`%u`, `Match localuser`, default `User`).
    pub local_user: String,
}

impl ResolveOptions {
    /// Options for this process: `HOME` (else the passwd home), the user name from the passwd
    /// entry of the real uid (else `USER`).
    pub fn from_env(config_file: Option<PathBuf>) -> Self {
        let pw = sys::current_user();
        let home = std::env::var_os("HOME")
            .filter(|h| !h.is_empty())
            .map(PathBuf::from)
            .or_else(|| pw.as_ref().map(|p| p.dir.clone()))
            .unwrap_or_else(|| PathBuf::from("/"));
        let local_user = pw
            .map(|p| p.name)
            .or_else(|| std::env::var("USER").ok())
            .unwrap_or_default();
        ResolveOptions {
            config_file,
            home,
            local_user,
        }
    }
}

/// The configuration files OpenSSH reads without `-F`: `~/.ssh/config`, then `/etc/ssh/ssh_config`.
pub fn default_ssh_config_paths(home: &Path) -> Vec<PathBuf> {
    vec![
        home.join(".ssh").join("config"),
        PathBuf::from(SYSTEM_CONFIG),
    ]
}

const SYSTEM_CONFIG: &str = "/etc/ssh/ssh_config";
const SYSTEM_DIR: &str = "/etc/ssh";
const MAX_INCLUDE_DEPTH: usize = 16;
const MAX_IDENTITY_FILES: usize = 100;
const MAX_HOSTS_FILES: usize = 32;

/// `StrictHostKeyChecking`. `ssh -G` prints `true`, `false`, `ask`, `accept-new`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum StrictHostKeyChecking {
    /// `yes`/`true`: refuse unknown hosts.
    Yes,
    /// `no`/`false`/`off`: OpenSSH accepts unknown and even changed keys (probe: accept-new).
    No,
    /// `ask` (the default): prompt for unknown hosts.
    #[default]
    Ask,
    /// `accept-new`: add unknown hosts, refuse changed keys.
    AcceptNew,
}

impl StrictHostKeyChecking {
    fn parse(s: &str) -> Option<Self> {
        Some(match s.to_ascii_lowercase().as_str() {
            "yes" | "true" => Self::Yes,
            "no" | "false" | "off" => Self::No,
            "ask" => Self::Ask,
            "accept-new" => Self::AcceptNew,
            _ => return None,
        })
    }

    /// The word `ssh -G` prints.
    pub fn as_ssh_g(self) -> &'static str {
        match self {
            Self::Yes => "true",
            Self::No => "false",
            Self::Ask => "ask",
            Self::AcceptNew => "accept-new",
        }
    }
}

/// A configuration problem: file, line (0 when not tied to a line) and cause.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}:{line}: {message}", file.display())]
pub struct ConfigError {
    /// The file at fault.
    pub file: PathBuf,
    /// 1-based line number, 0 for the file as a whole.
    pub line: usize,
    /// What is wrong, one line.
    pub message: String,
}

/// The settings for one target after reading the configuration, as `ssh -G` reports them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolvedConfig {
    /// The host as typed (`%n`), after removing `user@` and `:port`.
    pub alias: String,
    /// Host to connect to: `HostName` with `%h` expanded, lower-cased unless an address.
    pub hostname: String,
    /// Remote user: from the target, else `User`, else the local user.
    pub user: String,
    /// Port: from the target, else `Port`, else 22.
    pub port: u16,
    /// `IdentityFile` values unexpanded, as `ssh -G` prints them; OpenSSH's defaults when unset.
    pub identity_files: Vec<String>,
    /// `IdentitiesOnly`.
    pub identities_only: bool,
    /// `IdentityAgent`, `~`/`%`/`${}` expanded (`none` and `SSH_AUTH_SOCK` kept as they are).
    pub identity_agent: Option<String>,
    /// `ProxyJump` as `ssh -G` prints it (`[addr]` for numeric hosts); `None` when unset or `none`.
    pub proxy_jump: Option<String>,
    /// `ProxyCommand` when set and no `ProxyJump` applies (`None` for unset or `none`).
    pub proxy_command: Option<String>,
    /// `ConnectTimeout` in seconds (`None`: OpenSSH's `none`, the system TCP timeout).
    pub connect_timeout: Option<u64>,
    /// `UserKnownHostsFile`, `~` and `%` expanded as `ssh -G` prints them.
    pub user_known_hosts_files: Vec<String>,
    /// `GlobalKnownHostsFile`, unexpanded as `ssh -G` prints them.
    pub global_known_hosts_files: Vec<String>,
    /// `StrictHostKeyChecking`.
    pub strict_host_key_checking: StrictHostKeyChecking,
    /// `ServerAliveInterval` seconds (0: off).
    pub server_alive_interval: u64,
    /// `ServerAliveCountMax`.
    pub server_alive_count_max: u64,
    /// `HostKeyAlias`, lower-cased as OpenSSH does.
    pub host_key_alias: Option<String>,
    /// `BatchMode`.
    pub batch_mode: bool,
    /// `HostKeyAlgorithms` expanded (`+`, `-`, `^`, wildcards) when configured; `None`: defaults.
    pub host_key_algorithms: Option<String>,
    /// Every other keyword that applied: lower-case key, arguments joined by one space. First
    /// value wins, except for keywords OpenSSH accumulates (`CertificateFile`, forwards, `SendEnv`,
    /// `SetEnv`), which appear once per line.
    pub other: Vec<(String, String)>,
    /// Things OpenSSH would do that we did not (e.g. `Match exec`), one line each.
    pub warnings: Vec<String>,
    /// Home directory used for `~` and `%d`.
    pub home: PathBuf,
    /// Local user name used for `%u`.
    pub local_user: String,
}

/// One `ProxyJump` hop as read.
#[derive(Debug, Clone)]
struct Jump {
    user: Option<String>,
    host: String,
    port: Option<u16>,
    extra: Option<String>,
}

/// A [`ConfigError`] at `file:line`.
fn cerr(file: &Path, line: usize, message: impl Into<String>) -> ConfigError {
    ConfigError {
        file: file.to_path_buf(),
        line,
        message: message.into(),
    }
}
