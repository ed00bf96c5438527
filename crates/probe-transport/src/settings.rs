//! The per-host settings the SSH transport needs, taken from the `ssh_config` resolution.

use std::path::PathBuf;
use std::time::Duration;

use crate::error::{ErrorKind, TransportError};

/// How unknown host keys are treated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Strict {
    Yes,
    AcceptNew,
    /// `StrictHostKeyChecking no`: treated as accept-new, with a warning notice.
    No,
}

#[derive(Debug, Clone)]
pub(crate) struct HostSettings {
    /// Name as typed (alias), for messages.
    pub alias: String,
    pub hostname: String,
    pub user: String,
    pub port: u16,
    /// Expanded identity files, defaults included when none configured.
    pub identity_files: Vec<PathBuf>,
    /// Whether identity files came from the configuration (not the defaults).
    pub identities_configured: bool,
    pub identities_only: bool,
    /// `None`: `SSH_AUTH_SOCK`; `Some(None)`: disabled; `Some(Some(path))`.
    pub identity_agent: Option<Option<PathBuf>>,
    /// ProxyJump hops, outermost first, as target strings.
    pub jumps: Vec<String>,
    pub connect_timeout: Option<Duration>,
    pub user_known_hosts: Vec<PathBuf>,
    pub global_known_hosts: Vec<PathBuf>,
    pub strict: Strict,
    pub server_alive_interval: Option<Duration>,
    pub server_alive_count_max: Option<usize>,
    pub host_key_alias: Option<String>,
    pub batch_mode: bool,
    /// `HostKeyAlgorithms` names in order when configured; `None`: OpenSSH's default (known
    /// algorithms for the host first).
    pub host_key_algorithms: Option<Vec<String>>,
}

/// Resolves `target` through the ssh_config module. Config warnings go to `warnings`.
pub(crate) fn resolve(
    target: &str,
    config_file: Option<&PathBuf>,
    warnings: &mut Vec<String>,
) -> Result<HostSettings, TransportError> {
    use crate::config::{self, StrictHostKeyChecking};
    let cfg_err = |e: String| TransportError::new(target, ErrorKind::Config(e));
    let parsed = crate::target::parse_target(target).map_err(|e| cfg_err(e.to_string()))?;
    let opts = config::ResolveOptions::from_env(config_file.cloned());
    let rc = config::resolve(&parsed, &opts).map_err(|e| cfg_err(e.to_string()))?;
    if rc.proxy_command.is_some() {
        return Err(cfg_err(
            "ProxyCommand is not supported; use ProxyJump".into(),
        ));
    }
    let jumps = rc
        .jump_hosts()
        .map_err(|e| cfg_err(e.to_string()))?
        .iter()
        .map(|t| t.to_string())
        .collect();
    warnings.extend(rc.warnings.iter().map(|w| format!("{}: {w}", rc.alias)));
    let identity_files = rc.expanded_identity_files();
    // OpenSSH's defaults are all `~/.ssh/id_*`; anything else was configured.
    let identities_configured = rc
        .identity_files
        .iter()
        .any(|f| !f.starts_with("~/.ssh/id_"));
    let identity_agent = match rc.identity_agent.as_deref() {
        None | Some("SSH_AUTH_SOCK") => None,
        Some(a) if a.eq_ignore_ascii_case("none") => Some(None),
        Some(a) => Some(Some(expand_tilde(a, &rc.home))),
    };
    let user_known_hosts: Vec<PathBuf> = rc
        .user_known_hosts_files
        .iter()
        .filter(|f| !f.eq_ignore_ascii_case("none"))
        .map(|f| expand_tilde(f, &rc.home))
        .collect();
    let global_known_hosts = rc
        .expanded_known_hosts_files()
        .into_iter()
        .filter(|f| !user_known_hosts.contains(f))
        .collect();
    Ok(HostSettings {
        alias: rc.alias.clone(),
        hostname: rc.hostname.clone(),
        user: rc.user.clone(),
        port: rc.port,
        identity_files,
        identities_configured,
        identities_only: rc.identities_only,
        identity_agent,
        jumps,
        connect_timeout: rc.connect_timeout.map(Duration::from_secs),
        user_known_hosts,
        global_known_hosts,
        strict: match rc.strict_host_key_checking {
            StrictHostKeyChecking::Yes | StrictHostKeyChecking::Ask => Strict::Yes,
            StrictHostKeyChecking::AcceptNew => Strict::AcceptNew,
            StrictHostKeyChecking::No => Strict::No,
        },
        server_alive_interval: Some(Duration::from_secs(rc.server_alive_interval)),
        server_alive_count_max: usize::try_from(rc.server_alive_count_max).ok(),
        host_key_alias: rc.host_key_alias.clone(),
        batch_mode: rc.batch_mode,
        host_key_algorithms: rc.host_key_algorithms.as_ref().map(|list| {
            list.split(',')
                .filter(|a| !a.is_empty())
                .map(str::to_string)
                .collect()
        }),
    })
}

fn expand_tilde(p: &str, home: &std::path::Path) -> PathBuf {
    match p.strip_prefix("~/") {
        Some(rest) => home.join(rest),
        None if p == "~" => home.to_path_buf(),
        None => PathBuf::from(p),
    }
}
