//! TEMPORARY minimal stand-in for `crate::config`/`crate::target` until the config helper's
//! module lands. Only what the transport tests use: Host blocks with globs, first value wins.
#![allow(dead_code)]

use std::path::PathBuf;
use std::time::Duration;

#[derive(Debug, Clone)]
pub struct Target {
    pub user: Option<String>,
    pub host: String,
    pub port: Option<u16>,
}

pub fn parse_target(s: &str) -> Result<Target, String> {
    let (user, rest) = match s.rsplit_once('@') {
        Some((u, r)) => (Some(u.to_string()), r),
        None => (None, s),
    };
    let (host, port) = match rest.rsplit_once(':') {
        Some((h, p)) if !h.contains(':') => (h.to_string(), Some(p.parse::<u16>().map_err(|e| e.to_string())?)),
        _ => (rest.to_string(), None),
    };
    Ok(Target { user, host, port })
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StrictHostKeyChecking {
    Yes,
    No,
    Ask,
    AcceptNew,
}

pub struct ResolveOptions {
    pub config_file: Option<PathBuf>,
    pub home: PathBuf,
    pub local_user: String,
}

impl ResolveOptions {
    pub fn from_env(config_file: Option<PathBuf>) -> Self {
        ResolveOptions {
            config_file,
            home: std::env::var_os("HOME").map(PathBuf::from).unwrap_or_else(|| "/root".into()),
            local_user: std::env::var("USER").unwrap_or_else(|_| "root".into()),
        }
    }
}

#[derive(Debug, Clone)]
pub struct ResolvedConfig {
    pub alias: String,
    pub hostname: String,
    pub user: String,
    pub port: u16,
    pub identity_files: Vec<String>,
    pub identities_only: bool,
    pub identity_agent: Option<String>,
    pub proxy_jump: Option<String>,
    pub connect_timeout: Option<Duration>,
    pub user_known_hosts_files: Vec<String>,
    pub global_known_hosts_files: Vec<PathBuf>,
    pub strict_host_key_checking: StrictHostKeyChecking,
    pub server_alive_interval: Option<Duration>,
    pub server_alive_count_max: Option<u32>,
    pub host_key_alias: Option<String>,
    pub batch_mode: bool,
    home: PathBuf,
}

impl ResolvedConfig {
    fn exp(&self, p: &str) -> PathBuf {
        let p = p.replace("%h", &self.hostname).replace("%r", &self.user).replace("%p", &self.port.to_string());
        match p.strip_prefix("~/") {
            Some(r) => self.home.join(r),
            None => PathBuf::from(p),
        }
    }
    pub fn expanded_identity_files(&self) -> Vec<PathBuf> {
        if self.identity_files.is_empty() {
            return ["id_ed25519", "id_ecdsa", "id_rsa"].iter().map(|f| self.home.join(".ssh").join(f)).collect();
        }
        self.identity_files.iter().map(|p| self.exp(p)).collect()
    }
    pub fn expanded_known_hosts_files(&self) -> Vec<PathBuf> {
        if self.user_known_hosts_files.is_empty() {
            return vec![self.home.join(".ssh/known_hosts"), self.home.join(".ssh/known_hosts2")];
        }
        self.user_known_hosts_files.iter().map(|p| self.exp(p)).collect()
    }
    pub fn jump_hosts(&self) -> Result<Vec<Target>, String> {
        match self.proxy_jump.as_deref() {
            None | Some("none") => Ok(vec![]),
            Some(j) => j.split(',').map(parse_target).collect(),
        }
    }
}

pub fn resolve(t: &Target, o: &ResolveOptions) -> Result<ResolvedConfig, String> {
    let text = match &o.config_file {
        Some(f) => std::fs::read_to_string(f).map_err(|e| format!("{}: {e}", f.display()))?,
        None => std::fs::read_to_string(o.home.join(".ssh/config")).unwrap_or_default(),
    };
    let mut vals: Vec<(String, String)> = Vec::new();
    let mut active = true;
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (k, v) = line.split_once([' ', '=', '\t']).unwrap_or((line, ""));
        let (k, v) = (k.to_ascii_lowercase(), v.trim().to_string());
        if k == "host" {
            let mut pos = false;
            for p in v.split_whitespace() {
                if let Some(n) = p.strip_prefix('!') {
                    if crate::known_hosts::glob_match(n.as_bytes(), t.host.as_bytes()) {
                        pos = false;
                        break;
                    }
                } else if crate::known_hosts::glob_match(p.as_bytes(), t.host.as_bytes()) {
                    pos = true;
                }
            }
            active = pos;
            continue;
        }
        if active {
            vals.push((k, v));
        }
    }
    let get = |k: &str| vals.iter().find(|(kk, _)| kk == k).map(|(_, v)| v.clone());
    let all = |k: &str| vals.iter().filter(|(kk, _)| kk == k).map(|(_, v)| v.clone()).collect::<Vec<_>>();
    let yes = |k: &str| get(k).is_some_and(|v| v.eq_ignore_ascii_case("yes"));
    let hostname = get("hostname").unwrap_or_else(|| t.host.clone());
    Ok(ResolvedConfig {
        alias: t.host.clone(),
        hostname,
        user: t.user.clone().or_else(|| get("user")).unwrap_or_else(|| o.local_user.clone()),
        port: t.port.or_else(|| get("port").and_then(|p| p.parse().ok())).unwrap_or(22),
        identity_files: all("identityfile"),
        identities_only: yes("identitiesonly"),
        identity_agent: get("identityagent"),
        proxy_jump: get("proxyjump"),
        connect_timeout: get("connecttimeout").and_then(|v| v.parse().ok()).map(Duration::from_secs),
        user_known_hosts_files: get("userknownhostsfile").map(|v| v.split_whitespace().map(String::from).collect()).unwrap_or_default(),
        global_known_hosts_files: vec![],
        strict_host_key_checking: match get("stricthostkeychecking").as_deref() {
            Some("no") | Some("off") => StrictHostKeyChecking::No,
            Some("accept-new") => StrictHostKeyChecking::AcceptNew,
            Some("ask") => StrictHostKeyChecking::Ask,
            _ => StrictHostKeyChecking::Yes,
        },
        server_alive_interval: get("serveraliveinterval").and_then(|v| v.parse().ok()).map(Duration::from_secs),
        server_alive_count_max: get("serveralivecountmax").and_then(|v| v.parse().ok()),
        host_key_alias: get("hostkeyalias"),
        batch_mode: yes("batchmode"),
        home: o.home.clone(),
    })
}
