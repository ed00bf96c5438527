//! Resolved settings: command-line flags over the config file over defaults. Commands read
//! [`Settings`], never raw flags or the environment.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

use crate::args::{ColorChoice, FailOn, Format, GlobalArgs};
use crate::errors::{ExpectedError, Result};

/// The user config file (`--config FILE` or `$XDG_CONFIG_HOME/probe/config.toml`). Every key is
/// optional; see `configs/probe.example.toml`.
#[derive(Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields, rename_all = "kebab-case")]
pub struct ConfigFile {
    pub format: Option<Format>,
    pub color: Option<ColorChoice>,
    pub store: Option<PathBuf>,
    pub ssh_config: Option<PathBuf>,
    pub known_hosts: Option<PathBuf>,
    pub accept_new: Option<bool>,
    pub sudo: Option<bool>,
    pub redact: Option<bool>,
    /// Ask running model servers about themselves (`--no-ask-server` turns it off).
    pub ask_server: Option<bool>,
    pub units: Vec<String>,
    pub connect_timeout: Option<u64>,
    pub deadline: Option<u64>,
    /// Largest snapshot document read (`probe diff FILE`, `probe snapshots import`), in MiB.
    pub max_snapshot_mib: Option<u64>,
    pub audit: AuditConfig,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields, rename_all = "kebab-case")]
pub struct AuditConfig {
    pub jobs: Option<usize>,
    pub fail_on: Option<String>,
    pub prometheus: Option<PathBuf>,
}

/// Everything a command needs to know about how to run.
#[derive(Debug, Clone)]
pub struct Settings {
    pub format: Format,
    /// The format came from the config file, not `--format`: a default, which a command that
    /// cannot draw it (`sh` outside `probe diff`, `html` outside the paged commands) replaces with
    /// text for a terminal instead of refusing.
    pub format_is_default: bool,
    pub color: Option<ColorChoice>,
    pub store_path: Option<PathBuf>,
    pub ssh_config: Option<PathBuf>,
    pub known_hosts: Option<PathBuf>,
    pub accept_new: bool,
    pub sudo: bool,
    pub redact: bool,
    pub ask_server: bool,
    pub units: Vec<String>,
    pub connect_timeout: Option<Duration>,
    pub deadline: Duration,
    pub audit_jobs: usize,
    pub audit_fail_on: Option<FailOn>,
    pub audit_prometheus: Option<PathBuf>,
    /// Where snapshots that could not be stored are kept (`--spool`, else the XDG state
    /// directory's `probe/spool`; `None` when neither is known).
    pub spool: Option<PathBuf>,
    /// Largest snapshot document read from a file, in bytes.
    pub max_snapshot_bytes: u64,
}

/// Default cap on a snapshot document read from a file (a big host's snapshot is a few MiB).
pub const DEFAULT_MAX_SNAPSHOT_MIB: u64 = 256;

/// Default per-host deadline for a whole collection.
pub const DEFAULT_DEADLINE: Duration = Duration::from_secs(120);
/// Default audit concurrency: enough to hide SSH latency, few enough for an ops laptop.
pub const DEFAULT_JOBS: usize = 8;

impl Settings {
    /// Merges flags, the config file and defaults.
    pub fn resolve(global: &GlobalArgs) -> Result<Settings> {
        let config = match &global.config {
            Some(path) => load_config(path)?,
            None => match default_config_path().filter(|path| path.exists()) {
                Some(path) => load_config(&path)?,
                None => ConfigFile::default(),
            },
        };
        let mut units = config.units.clone();
        units.extend(global.units.iter().cloned());
        let fail_on = match config.audit.fail_on.as_deref() {
            None => None,
            Some("drift") => Some(FailOn::Drift),
            Some("error") => Some(FailOn::Error),
            Some("never") => Some(FailOn::Never),
            Some(other) => {
                return Err(ExpectedError::Config(format!(
                    "config: audit.fail-on must be drift, error or never, not {other:?}"
                )));
            }
        };
        Ok(Settings {
            format: global.format.or(config.format).unwrap_or(Format::Human),
            format_is_default: global.format.is_none(),
            color: global.color.or(config.color),
            store_path: global.store.clone().or(config.store),
            ssh_config: global.ssh_config.clone().or(config.ssh_config),
            known_hosts: global.known_hosts.clone().or(config.known_hosts),
            accept_new: global.accept_new || config.accept_new.unwrap_or(false),
            sudo: global.sudo || config.sudo.unwrap_or(false),
            redact: !global.no_redact && config.redact.unwrap_or(true),
            ask_server: !global.no_ask_server && config.ask_server.unwrap_or(true),
            units,
            connect_timeout: global
                .connect_timeout
                .or(config.connect_timeout)
                .map(Duration::from_secs),
            deadline: global
                .deadline
                .or(config.deadline)
                .map_or(DEFAULT_DEADLINE, Duration::from_secs),
            audit_jobs: config.audit.jobs.unwrap_or(DEFAULT_JOBS).max(1),
            audit_fail_on: fail_on,
            audit_prometheus: config.audit.prometheus,
            spool: global.spool.clone().or_else(default_spool_dir),
            max_snapshot_bytes: config
                .max_snapshot_mib
                .unwrap_or(DEFAULT_MAX_SNAPSHOT_MIB)
                .saturating_mul(1 << 20),
        })
    }

    /// The store: `--store` (or `PROBE_STORE`), the config's `store`, or the XDG default file;
    /// a SQLite path or a PostgreSQL URL / connection string.
    pub fn store_location(&self) -> Result<String> {
        let path = self.store_path()?;
        path.to_str().map(str::to_string).ok_or_else(|| {
            ExpectedError::Config(format!("store path {} is not valid UTF-8", path.display()))
        })
    }

    /// The store file: `--store`, the config's `store`, or the XDG default.
    pub fn store_path(&self) -> Result<PathBuf> {
        self.store_path
            .clone()
            .or_else(probe_store::default_store_path)
            .ok_or_else(|| {
                ExpectedError::Config(
                    "no store location: set HOME or XDG_DATA_HOME, or pass --store PATH".into(),
                )
            })
    }
}

/// `$XDG_STATE_HOME/probe/spool`, else `~/.local/state/probe/spool`: unstored snapshots are
/// state of this machine's runs, not data the user curates.
pub fn default_spool_dir() -> Option<PathBuf> {
    Some(
        xdg_base("XDG_STATE_HOME", &[".local", "state"])?
            .join("probe")
            .join("spool"),
    )
}

/// `$XDG_CONFIG_HOME/probe/config.toml`, else `~/.config/probe/config.toml`.
pub fn default_config_path() -> Option<PathBuf> {
    Some(
        xdg_base("XDG_CONFIG_HOME", &[".config"])?
            .join("probe")
            .join("config.toml"),
    )
}

/// An XDG base directory: `$VAR` when it is set to an absolute path, else `$HOME/FALLBACK`.
fn xdg_base(var: &str, fallback: &[&str]) -> Option<PathBuf> {
    std::env::var_os(var)
        .filter(|value| !value.is_empty())
        .map(PathBuf::from)
        .filter(|path| path.is_absolute())
        .or_else(|| {
            std::env::var_os("HOME")
                .filter(|value| !value.is_empty())
                .map(|home| fallback.iter().fold(PathBuf::from(home), |p, s| p.join(s)))
        })
}

fn load_config(path: &Path) -> Result<ConfigFile> {
    let text = read_local(path, probe_transport::local_file::CONFIG_CAP)?;
    parse_config(&text, path)
}

/// Reads a local file the operator named: a regular file of at most `cap` bytes (see
/// [`probe_transport::local_file`]), else one error line naming it (exit 2).
pub fn read_local(path: &Path, cap: u64) -> Result<String> {
    probe_transport::local_file::read_bounded_text(path, cap)
        .map_err(|err| ExpectedError::file(path, err.kind))
}

pub fn parse_config(text: &str, path: &Path) -> Result<ConfigFile> {
    toml::from_str(text).map_err(|err| {
        let line = err
            .span()
            .map(|span| text.get(..span.start).unwrap_or("").matches('\n').count() + 1);
        let message = err.message().to_string();
        match line {
            Some(line) => ExpectedError::Config(format!("{}:{line}: {message}", path.display())),
            None => ExpectedError::Config(format!("{}: {message}", path.display())),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn example_config_parses() {
        let text = include_str!("../../../configs/probe.example.toml");
        let config = parse_config(text, Path::new("probe.example.toml")).unwrap();
        assert_eq!(config.audit.jobs, Some(8));
        assert_eq!(config.max_snapshot_mib, Some(DEFAULT_MAX_SNAPSHOT_MIB));
    }

    #[test]
    fn bad_key_names_file_and_line() {
        let err = parse_config("format = \"human\"\n\nbogus = 1\n", Path::new("c.toml"))
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("c.toml:3:"), "{err}");
    }
}
