//! `ssh_config` resolution with OpenSSH semantics (`ssh -G`).
//!
//! [`resolve`] reads the operator's client configuration the way OpenSSH 9.2 does and returns the
//! settings the transport needs as a [`ResolvedConfig`]; [`ResolvedConfig::ssh_g`] prints them in
//! the `key value` form of `ssh -G`. The differential test `tests/ssh_config_diff.rs` compares both
//! against the real `ssh -G` over many configuration files.
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
mod sys;

use std::fmt;
use std::path::{Path, PathBuf};

use crate::target::{Target, TargetError, parse_target};

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

#[derive(Debug, Clone)]
struct Jump {
    user: Option<String>,
    host: String,
    port: Option<u16>,
    extra: Option<String>,
}

/// Options as OpenSSH's `Options` struct holds them while reading: `None` = unset.
#[derive(Debug, Default)]
struct State {
    user: Option<String>,
    hostname: Option<(String, PathBuf, usize)>,
    port: Option<u16>,
    identity_files: Vec<String>,
    identities_only: Option<bool>,
    identity_agent: Option<String>,
    jump: Option<Option<Jump>>, // Some(None) = `ProxyJump none`
    proxy_command: Option<String>,
    connect_timeout: Option<u64>,
    user_known_hosts: Vec<String>,
    global_known_hosts: Vec<String>,
    strict: Option<StrictHostKeyChecking>,
    server_alive_interval: Option<u64>,
    server_alive_count_max: Option<i64>,
    host_key_alias: Option<String>,
    batch_mode: Option<bool>,
    host_key_algorithms: Option<String>,
    ignore_unknown: Option<String>,
    canonicalize_hostname: Option<bool>,
    other: Vec<(String, String)>,
    warnings: Vec<String>,
}

#[derive(Clone, Copy)]
struct Flags {
    user_conf: bool,
    never_match: bool,
}

struct Reader<'a> {
    opts: &'a ResolveOptions,
    /// Host that `Host` lines match: as typed in the first pass, the resolved name in the final.
    host: String,
    original_host: String,
    final_pass: bool,
    want_final: bool,
    st: State,
}

fn cerr(file: &Path, line: usize, message: impl Into<String>) -> ConfigError {
    ConfigError {
        file: file.to_path_buf(),
        line,
        message: message.into(),
    }
}

/// Resolves `target` against the configuration, as `ssh -G [-F FILE] [-l USER] [-p PORT] HOST`.
pub fn resolve(target: &Target, opts: &ResolveOptions) -> Result<ResolvedConfig, ConfigError> {
    let mut r = Reader {
        opts,
        host: target.host.clone(),
        original_host: target.host.clone(),
        final_pass: false,
        want_final: false,
        st: State {
            user: target.user.clone(),
            port: target.port,
            ..State::default()
        },
    };
    r.read_all()?;

    // ssh.c: take HostName into use (`%h` = the host as typed), lower-case unless an address.
    let mut host = match &r.st.hostname {
        Some((hn, file, line)) => expand_hostname(hn, &target.host)
            .map_err(|m| cerr(file, *line, format!("HostName: {m}")))?,
        None => target.host.clone(),
    };
    if !is_addr(&host) {
        host = host.to_ascii_lowercase();
    }
    if r.want_final || r.st.canonicalize_hostname == Some(true) {
        let src =
            r.st.hostname
                .as_ref()
                .map(|(_, f, l)| (f.clone(), *l))
                .unwrap_or_default();
        r.st.hostname = Some((host.clone(), src.0, src.1));
        r.host = host.clone();
        r.final_pass = true;
        r.read_all()?;
    }
    let st = r.st;

    let user = st.user.unwrap_or_else(|| opts.local_user.clone());
    let port = st.port.unwrap_or(22);
    let mut identity_files = st.identity_files;
    if identity_files.is_empty() {
        identity_files = [
            "id_rsa",
            "id_ecdsa",
            "id_ecdsa_sk",
            "id_ed25519",
            "id_ed25519_sk",
            "id_xmss",
            "id_dsa",
        ]
        .iter()
        .map(|f| format!("~/.ssh/{f}"))
        .collect();
    }
    let mut user_known = st.user_known_hosts;
    if user_known.is_empty() {
        user_known = vec!["~/.ssh/known_hosts".into(), "~/.ssh/known_hosts2".into()];
    }
    let mut global_known = st.global_known_hosts;
    if global_known.is_empty() {
        global_known = vec![
            "/etc/ssh/ssh_known_hosts".into(),
            "/etc/ssh/ssh_known_hosts2".into(),
        ];
    }
    let jump = st.jump.flatten();
    // ssh.c: a ProxyJump whose (last) hop is the destination itself is fatal ("jumphost loop
    // via HOST"). Host compared exactly, an unset hop port as 22, an unset hop user as any.
    if let Some(j) = jump.as_ref().filter(|j| {
        j.host == host && j.port.unwrap_or(22) == port && j.user.as_ref().is_none_or(|u| *u == user)
    }) {
        let file = opts
            .config_file
            .clone()
            .unwrap_or_else(|| opts.home.join(".ssh/config"));
        return Err(cerr(
            &file,
            0,
            format!(
                "jumphost loop via {} (ProxyJump names the destination itself)",
                j.host
            ),
        ));
    }
    let proxy_command = match (&jump, st.proxy_command) {
        (None, Some(pc)) if !pc.eq_ignore_ascii_case("none") => Some(pc),
        _ => None,
    };
    let host_key_alias = st.host_key_alias.map(|a| a.to_ascii_lowercase());
    let mut cfg = ResolvedConfig {
        alias: target.host.clone(),
        hostname: host,
        user,
        port,
        identity_files,
        identities_only: st.identities_only.unwrap_or(false),
        identity_agent: None,
        proxy_jump: jump.as_ref().map(format_jump),
        proxy_command,
        connect_timeout: st.connect_timeout,
        user_known_hosts_files: Vec::new(),
        global_known_hosts_files: global_known,
        strict_host_key_checking: st.strict.unwrap_or_default(),
        // readconf.c: "in batch mode, default is 5mins".
        server_alive_interval: st
            .server_alive_interval
            .unwrap_or(if st.batch_mode == Some(true) { 300 } else { 0 }),
        server_alive_count_max: u64::try_from(st.server_alive_count_max.unwrap_or(3)).unwrap_or(0),
        host_key_alias,
        batch_mode: st.batch_mode.unwrap_or(false),
        host_key_algorithms: st.host_key_algorithms.map(|a| assemble_host_key_algs(&a)),
        other: st.other,
        warnings: st.warnings,
        home: opts.home.clone(),
        local_user: opts.local_user.clone(),
    };
    // ssh.c expands these before `-G` prints them; a bad token is fatal there too.
    let file = opts
        .config_file
        .clone()
        .unwrap_or_else(|| opts.home.join(".ssh/config"));
    for f in user_known {
        let e = cfg
            .expand_path(&f)
            .map_err(|m| cerr(&file, 0, format!("UserKnownHostsFile {f}: {m}")))?;
        cfg.user_known_hosts_files.push(e);
    }
    if let Some(a) = st.identity_agent {
        let e = cfg
            .expand_path(&a)
            .map_err(|m| cerr(&file, 0, format!("IdentityAgent {a}: {m}")))?;
        cfg.identity_agent = Some(e);
    }
    Ok(cfg)
}

fn expand_hostname(hn: &str, host: &str) -> Result<String, String> {
    expand::percent_dollar_expand(hn, &[('h', host)], false)
}

fn is_addr(s: &str) -> bool {
    let s = s.split('%').next().unwrap_or(s);
    s.parse::<std::net::IpAddr>().is_ok()
}

fn format_jump(j: &Jump) -> String {
    let numeric = j.host.contains(':') || j.host.bytes().all(|b| b.is_ascii_digit() || b == b'.');
    let mut s = String::new();
    if let Some(e) = &j.extra {
        s.push_str(e);
        s.push(',');
    }
    if let Some(u) = &j.user {
        s.push_str(u);
        s.push('@');
    }
    if numeric {
        s.push('[');
        s.push_str(&j.host);
        s.push(']');
    } else {
        s.push_str(&j.host);
    }
    if let Some(p) = j.port {
        s.push(':');
        s.push_str(&p.to_string());
    }
    s
}

/// OpenSSH's `kex_assemble_names` for host key algorithms: `+` appends to the defaults, `-`
/// removes from them, `^` puts first; wildcards select from all known algorithms.
fn assemble_host_key_algs(list: &str) -> String {
    use keywords::{ALL_KEY_ALGS, DEFAULT_HOST_KEY_ALGS as DEF};
    fn cat(a: &str, b: &str) -> String {
        let mut out: Vec<&str> = a.split(',').filter(|s| !s.is_empty()).collect();
        for n in b.split(',').filter(|s| !s.is_empty()) {
            if !out.contains(&n) {
                out.push(n);
            }
        }
        out.join(",")
    }
    if list.is_empty() {
        return DEF.to_string();
    }
    let list = if let Some(rest) = list.strip_prefix('+') {
        cat(DEF, rest)
    } else if let Some(rest) = list.strip_prefix('-') {
        return DEF
            .split(',')
            .filter(|a| pattern::match_pattern_list(a, rest, false) != 1)
            .collect::<Vec<_>>()
            .join(",");
    } else if let Some(rest) = list.strip_prefix('^') {
        cat(rest, DEF)
    } else {
        list.to_string()
    };
    let mut ret = String::new();
    for pat in list.split(',') {
        let matching: Vec<&str> = ALL_KEY_ALGS
            .split(',')
            .filter(|a| pattern::match_pattern_list(a, pat, false) == 1)
            .collect();
        ret = cat(&ret, &matching.join(","));
    }
    if ret.is_empty() { list } else { ret }
}

fn valid_key_names(list: &str) -> bool {
    list.split(',').all(|name| {
        keywords::ALL_KEY_ALGS.split(',').any(|a| a == name)
            || keywords::ALL_KEY_ALGS
                .split(',')
                .any(|a| pattern::match_pattern_list(a, name, false) != 0)
    })
}

fn parse_flag(arg: &str) -> Option<bool> {
    match arg.to_ascii_lowercase().as_str() {
        "yes" | "true" => Some(true),
        "no" | "false" => Some(false),
        _ => None,
    }
}

/// OpenSSH's `parse_user_host_port` (and `ssh://` URIs) for one `ProxyJump` hop.
fn parse_jump_hop(s: &str) -> Option<Jump> {
    if s.len() >= 6 && s.get(..6).is_some_and(|p| p.eq_ignore_ascii_case("ssh://")) {
        let t = parse_target(s).ok()?;
        return Some(Jump {
            user: t.user,
            host: t.host,
            port: t.port,
            extra: None,
        });
    }
    let (user, hp) = match s.rsplit_once('@') {
        Some(("", _)) => return None,
        Some((u, h)) => (Some(u.to_string()), h),
        None => (None, s),
    };
    // hpdelim: `[v6]` or up to the first ':' or '/'.
    let (host, port) = if let Some(inner) = hp.strip_prefix('[') {
        let (h, after) = inner.split_once(']')?;
        match after {
            "" => (h, None),
            _ => (
                h,
                Some(after.strip_prefix(':').or(after.strip_prefix('/'))?),
            ),
        }
    } else {
        match hp.find([':', '/']) {
            Some(i) => (hp.get(..i)?, Some(hp.get(i + 1..)?)),
            None => (hp, None),
        }
    };
    if host.is_empty() {
        return None;
    }
    let port = match port {
        None | Some("") => None,
        Some(p) => Some(expand::a2port(p).filter(|&p| p > 0)?),
    };
    Some(Jump {
        user,
        host: host.to_string(),
        port,
        extra: None,
    })
}

impl Reader<'_> {
    fn read_all(&mut self) -> Result<(), ConfigError> {
        let user_flags = Flags {
            user_conf: true,
            never_match: false,
        };
        match self.opts.config_file.clone() {
            Some(f) => {
                let text = read_config(&f)
                    .map_err(|e| cerr(&f, 0, format!("Can't open user config file: {e}")))?;
                let mut active = true;
                self.read_text(&f, &text, user_flags, &mut active, 0)
            }
            None => {
                let user = self.opts.home.join(".ssh/config");
                if let Some(text) = read_optional(&user)? {
                    check_perm(&user)?;
                    let mut active = true;
                    self.read_text(&user, &text, user_flags, &mut active, 0)?;
                }
                let sys = PathBuf::from(SYSTEM_CONFIG);
                if let Some(text) = read_optional(&sys)? {
                    let mut active = true;
                    let flags = Flags {
                        user_conf: false,
                        ..user_flags
                    };
                    self.read_text(&sys, &text, flags, &mut active, 0)?;
                }
                Ok(())
            }
        }
    }

    fn read_text(
        &mut self,
        file: &Path,
        text: &[u8],
        flags: Flags,
        active: &mut bool,
        depth: usize,
    ) -> Result<(), ConfigError> {
        let text = String::from_utf8_lossy(text);
        for (i, line) in text.split('\n').enumerate() {
            self.process_line(file, i + 1, line, flags, active, depth)?;
        }
        Ok(())
    }

    fn process_line(
        &mut self,
        file: &Path,
        ln: usize,
        line: &str,
        flags: Flags,
        active: &mut bool,
        depth: usize,
    ) -> Result<(), ConfigError> {
        let Some(l) = lexer::split_line(line) else {
            return Ok(());
        };
        let kw = l.keyword.as_str();
        let err = |m: String| cerr(file, ln, m);
        if l.rest.is_empty() {
            return Err(err(format!("no argument after keyword \"{kw}\"")));
        }
        if !keywords::KNOWN_KEYWORDS.contains(&kw) {
            let ignored = self
                .st
                .ignore_unknown
                .as_deref()
                .is_some_and(|list| pattern::match_pattern_list(kw, list, true) == 1);
            if ignored {
                return Ok(());
            }
            return Err(err(format!("Bad configuration option: {kw}")));
        }
        let argv = lexer::argv_split(l.rest).ok_or_else(|| err("invalid quotes".into()))?;
        let act = *active;
        // One argument, present and alone.
        let one = || -> Result<&str, ConfigError> {
            match argv.as_slice() {
                [] => Err(err("Missing argument".into())),
                [a] if a.is_empty() => Err(err("Missing argument".into())),
                [a] => Ok(a.as_str()),
                _ => Err(err(format!("keyword {kw} extra arguments at end of line"))),
            }
        };
        let st = &mut self.st;
        match kw {
            "host" => {
                *active = false;
                for arg in &argv {
                    if arg.is_empty() {
                        return Err(err(format!("keyword {kw} empty argument")));
                    }
                    if flags.never_match {
                        break;
                    }
                    let (negated, pat) = match arg.strip_prefix('!') {
                        Some(p) => (true, p),
                        None => (false, arg.as_str()),
                    };
                    if pattern::match_pattern(&self.host, pat) {
                        if negated {
                            *active = false;
                            break;
                        }
                        *active = true;
                    }
                }
            }
            "match" => {
                let m = self.match_line(l.rest, file, ln)?;
                *active = !flags.never_match && m;
            }
            "include" => self.include(&argv, file, ln, flags, active, depth)?,
            "hostname" => {
                let a = one()?;
                if act && st.hostname.is_none() {
                    st.hostname = Some((a.to_string(), file.to_path_buf(), ln));
                }
            }
            "user" => {
                let a = one()?;
                if act && st.user.is_none() {
                    st.user = Some(a.to_string());
                }
            }
            "hostkeyalias" => {
                let a = one()?;
                if act && st.host_key_alias.is_none() {
                    st.host_key_alias = Some(a.to_string());
                }
            }
            "ignoreunknown" => {
                let a = one()?;
                if act && st.ignore_unknown.is_none() {
                    st.ignore_unknown = Some(a.to_string());
                }
            }
            "port" => {
                let a = one()?;
                let p = expand::a2port(a)
                    .filter(|&p| p > 0)
                    .ok_or_else(|| err(format!("Bad port '{a}'")))?;
                if act && st.port.is_none() {
                    st.port = Some(p);
                }
            }
            "identityfile" => {
                let a = one()?;
                if act && !st.identity_files.iter().any(|f| f == a) {
                    if st.identity_files.len() >= MAX_IDENTITY_FILES {
                        return Err(err(format!(
                            "Too many identity files specified (max {MAX_IDENTITY_FILES})"
                        )));
                    }
                    st.identity_files.push(a.to_string());
                }
            }
            "identitiesonly" | "batchmode" => {
                let a = one()?;
                let v = parse_flag(a).ok_or_else(|| err(format!("unsupported option \"{a}\"")))?;
                let slot = if kw == "batchmode" {
                    &mut st.batch_mode
                } else {
                    &mut st.identities_only
                };
                if act && slot.is_none() {
                    *slot = Some(v);
                }
            }
            "stricthostkeychecking" => {
                let a = one()?;
                let v = StrictHostKeyChecking::parse(a)
                    .ok_or_else(|| err(format!("unsupported option \"{a}\"")))?;
                if act && st.strict.is_none() {
                    st.strict = Some(v);
                }
            }
            "canonicalizehostname" => {
                let a = one()?;
                let v = match a.to_ascii_lowercase().as_str() {
                    "yes" | "true" | "always" => true,
                    "no" | "false" => false,
                    _ => return Err(err(format!("unsupported option \"{a}\""))),
                };
                if act && st.canonicalize_hostname.is_none() {
                    st.canonicalize_hostname = Some(v);
                }
            }
            "connecttimeout" | "serveraliveinterval" => {
                let a = match argv.first() {
                    Some(a) if !a.is_empty() => a.as_str(),
                    _ => return Err(err("missing time value".into())),
                };
                let v = if a == "none" {
                    None
                } else {
                    Some(expand::convtime(a).ok_or_else(|| err("invalid time value".into()))?)
                };
                one()?;
                let slot = if kw == "connecttimeout" {
                    &mut st.connect_timeout
                } else {
                    &mut st.server_alive_interval
                };
                if act && slot.is_none() {
                    *slot = v;
                }
            }
            "serveralivecountmax" => {
                let a = one()?;
                // strtonum(arg, 0, INT_MAX)
                let v: i64 = a
                    .parse::<i64>()
                    .map_err(|_| err("integer value invalid".into()))?;
                if v < 0 {
                    return Err(err("integer value too small".into()));
                }
                if v > i64::from(i32::MAX) {
                    return Err(err("integer value too large".into()));
                }
                if act && st.server_alive_count_max.is_none() {
                    st.server_alive_count_max = Some(v);
                }
            }
            "userknownhostsfile" | "globalknownhostsfile" => {
                let list = if kw == "userknownhostsfile" {
                    &mut st.user_known_hosts
                } else {
                    &mut st.global_known_hosts
                };
                let was_empty = list.is_empty();
                for (i, a) in argv.iter().enumerate() {
                    if a.is_empty() {
                        return Err(err(format!("keyword {kw} empty argument")));
                    }
                    if a.eq_ignore_ascii_case("none") && argv.len() > 1 {
                        return Err(err(format!(
                            "keyword {kw} \"none\" argument must appear alone"
                        )));
                    }
                    if act && was_empty {
                        if i >= MAX_HOSTS_FILES {
                            return Err(err(format!("too many {kw} entries")));
                        }
                        list.push(a.clone());
                    }
                }
            }
            "identityagent" => {
                let a = one()?;
                expand::check_agent_path(a).map_err(err)?;
                if act && st.identity_agent.is_none() {
                    st.identity_agent = Some(a.to_string());
                }
            }
            "hostkeyalgorithms" => {
                let a = one()?;
                let names = a.strip_prefix(['+', '^']).unwrap_or(a);
                if !a.starts_with('-') && !valid_key_names(names) {
                    return Err(err(format!("Bad key types '{a}'")));
                }
                if act && st.host_key_algorithms.is_none() {
                    st.host_key_algorithms = Some(a.to_string());
                }
            }
            "proxycommand" => {
                let raw = l.rest.trim_start_matches([' ', '\t', '\r', '\n', '=']);
                if act && st.jump.is_none() && st.proxy_command.is_none() {
                    st.proxy_command = Some(raw.to_string());
                }
            }
            "proxyjump" => {
                let raw = l.rest.trim_start_matches([' ', '\t', '\r', '\n', '=']);
                self.proxy_jump(raw, act).map_err(err)?;
            }
            _ => {
                if act {
                    let v = argv.join(" ");
                    if keywords::ACCUMULATING.contains(&kw)
                        || !st.other.iter().any(|(k, _)| k == kw)
                    {
                        st.other.push((kw.to_string(), v));
                    }
                }
            }
        }
        Ok(())
    }

    /// OpenSSH's `parse_jump`: checks every hop; the last hop is the one connected through
    /// directly, the ones before it are kept as text (`jump_extra`).
    fn proxy_jump(&mut self, s: &str, act: bool) -> Result<(), String> {
        let active = act && self.st.proxy_command.is_none() && self.st.jump.is_none();
        let stripped = s.split('#').next().unwrap_or("").trim_end();
        let invalid = || format!("Invalid ProxyJump \"{s}\"");
        if s.eq_ignore_ascii_case("none") {
            if active {
                self.st.jump = Some(None);
            }
            return Ok(());
        }
        let mut hops = stripped.rsplit(',');
        let last = hops.next().ok_or_else(invalid)?;
        let mut jump = parse_jump_hop(last).ok_or_else(invalid)?;
        for hop in hops {
            parse_jump_hop(hop).ok_or_else(invalid)?;
        }
        if active {
            if let Some(i) = s.rfind(',').filter(|&i| i > 0) {
                jump.extra = s.get(..i).map(str::to_string);
            }
            self.st.jump = Some(Some(jump));
            self.st.proxy_command = Some("none".into());
        }
        Ok(())
    }

    fn include(
        &mut self,
        argv: &[String],
        file: &Path,
        ln: usize,
        flags: Flags,
        active: &mut bool,
        depth: usize,
    ) -> Result<(), ConfigError> {
        let err = |m: String| cerr(file, ln, m);
        for arg in argv {
            if arg.is_empty() {
                return Err(err("keyword include empty argument".into()));
            }
            if arg.starts_with('~') && !flags.user_conf {
                return Err(err(format!("bad include path {arg}")));
            }
            let path = if !arg.starts_with('/') && !arg.starts_with('~') {
                if flags.user_conf {
                    format!("~/.ssh/{arg}")
                } else {
                    format!("{SYSTEM_DIR}/{arg}")
                }
            } else {
                arg.clone()
            };
            // glob(3) with GLOB_TILDE: `~` and `~/` are $HOME, `~user` that user's home.
            let path = expand::tilde_expand(&path, &self.opts.home).unwrap_or(path);
            let options = glob::MatchOptions {
                case_sensitive: true,
                require_literal_separator: true,
                require_literal_leading_dot: true,
            };
            let paths = glob::glob_with(&path, options)
                .map_err(|e| err(format!("glob failed for {path}: {}", e.msg)))?;
            let oactive = *active;
            for p in paths.flatten() {
                if p.is_dir() {
                    continue;
                }
                if depth + 1 > MAX_INCLUDE_DEPTH {
                    return Err(cerr(&p, 0, "Too many recursive configuration includes"));
                }
                let text = match read_config(&p) {
                    Ok(t) => t,
                    Err(ReadError::NotFound) => continue,
                    Err(e) => {
                        return Err(err(format!(
                            "Can't open user config file {}: {e}",
                            p.display()
                        )));
                    }
                };
                check_perm(&p)?;
                let sub = Flags {
                    never_match: flags.never_match || !oactive,
                    ..flags
                };
                self.read_text(&p, &text, sub, active, depth + 1)?;
                // A Match in an included file must not clobber the including file's state.
                *active = oactive;
            }
        }
        Ok(())
    }

    /// OpenSSH's `match_cfg_line`.
    fn match_line(&mut self, rest: &str, file: &Path, ln: usize) -> Result<bool, ConfigError> {
        let err = |m: String| cerr(file, ln, m);
        let ruser = self
            .st
            .user
            .clone()
            .unwrap_or_else(|| self.opts.local_user.clone());
        let host = match &self.st.hostname {
            Some((hn, _, _)) if self.final_pass => hn.clone(),
            Some((hn, hf, hl)) => expand_hostname(hn, &self.host)
                .map_err(|m| cerr(hf, *hl, format!("HostName: {m}")))?,
            None => self.host.clone(),
        };
        let mut cp = Some(rest);
        let mut result = true;
        let mut attributes = 0;
        let next = |cp: &mut Option<&str>| -> Option<String> {
            let (tok, r) = lexer::strdelim((*cp)?)?;
            *cp = r;
            Some(tok)
        };
        while let Some(attrib) = next(&mut cp) {
            if attrib.is_empty() {
                break;
            }
            if attrib.starts_with('#') {
                break;
            }
            let (negate, a) = match attrib.strip_prefix('!') {
                Some(a) => (true, a.to_string()),
                None => (false, attrib.clone()),
            };
            let a = a.to_ascii_lowercase();
            if a == "all" {
                let arg = next(&mut cp);
                if attributes > 1
                    || arg
                        .as_deref()
                        .is_some_and(|x| !x.is_empty() && !x.starts_with('#'))
                {
                    return Err(err(format!(
                        "'{attrib}' cannot be combined with other Match attributes"
                    )));
                }
                if result {
                    result = !negate;
                }
                return Ok(result);
            }
            attributes += 1;
            if a == "canonical" || a == "final" {
                if a == "final" && !self.final_pass {
                    self.want_final = true;
                }
                if self.final_pass == negate {
                    result = false;
                }
                continue;
            }
            let arg = match next(&mut cp) {
                Some(x) if !x.is_empty() && !x.starts_with('#') => x,
                _ => return Err(err(format!("Missing Match criteria for {attrib}"))),
            };
            let r = match a.as_str() {
                "host" => pattern::match_hostname(&host, &arg) == 1,
                "originalhost" => pattern::match_hostname(&self.original_host, &arg) == 1,
                "user" => pattern::match_pattern_list(&ruser, &arg, false) == 1,
                "localuser" => pattern::match_pattern_list(&self.opts.local_user, &arg, false) == 1,
                "exec" => {
                    if result {
                        self.st.warnings.push(format!(
                            "{}:{ln}: Match exec {arg:?} not run (unsupported); treated as failed",
                            file.display()
                        ));
                    }
                    false
                }
                "localnetwork" => {
                    self.st.warnings.push(format!(
                        "{}:{ln}: Match localnetwork unsupported; treated as no match",
                        file.display()
                    ));
                    false
                }
                _ => return Err(err(format!("Unsupported Match attribute {attrib}"))),
            };
            if r == negate {
                result = false;
            }
        }
        if attributes == 0 {
            return Err(err("One or more attributes required for Match".into()));
        }
        Ok(result)
    }
}

/// Why a config file was not read (the file is named by the caller's message).
#[derive(Debug)]
enum ReadError {
    NotFound,
    Other(String),
}

impl fmt::Display for ReadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReadError::NotFound => f.write_str("No such file or directory"),
            ReadError::Other(m) => f.write_str(m),
        }
    }
}

/// A config file, bounded and regular (see [`crate::local_file`]).
fn read_config(path: &Path) -> Result<Vec<u8>, ReadError> {
    use crate::local_file::{CONFIG_CAP, LocalFileErrorKind, read_bounded};
    read_bounded(path, CONFIG_CAP).map_err(|e| match &e.kind {
        _ if e.is_not_found() => ReadError::NotFound,
        LocalFileErrorKind::Io(io) => ReadError::Other(io_msg(io)),
        other => ReadError::Other(other.to_string()),
    })
}

/// The default user or system config: absent or unreadable is skipped (as OpenSSH does), but
/// one that is not a regular file or too large is an error naming it.
fn read_optional(path: &Path) -> Result<Option<Vec<u8>>, ConfigError> {
    use crate::local_file::{CONFIG_CAP, LocalFileErrorKind, read_bounded};
    match read_bounded(path, CONFIG_CAP) {
        Ok(t) => Ok(Some(t)),
        Err(e) if matches!(e.kind, LocalFileErrorKind::Io(_)) => Ok(None),
        Err(e) => Err(cerr(path, 0, e.kind.to_string())),
    }
}

fn io_msg(e: &std::io::Error) -> String {
    let s = e.to_string();
    match s.find(" (os error") {
        Some(i) => s.get(..i).unwrap_or(&s).to_string(),
        None => s,
    }
}

/// OpenSSH refuses included (and `~/.ssh/config`) files owned by another user or writable by
/// group or others.
fn check_perm(p: &Path) -> Result<(), ConfigError> {
    use std::os::unix::fs::MetadataExt;
    let Ok(md) = std::fs::metadata(p) else {
        return Ok(());
    };
    let uid = sys::uid();
    if (md.uid() != 0 && md.uid() != uid) || md.mode() & 0o022 != 0 {
        return Err(cerr(p, 0, "Bad owner or permissions"));
    }
    Ok(())
}

impl ResolvedConfig {
    /// `%` tokens as OpenSSH's `DEFAULT_CLIENT_PERCENT_EXPAND_ARGS` (9.2): C L i k l n p d h r u.
    fn expand_path(&self, s: &str) -> Result<String, String> {
        let s = expand::tilde_expand(s, &self.home)?;
        let thishost = sys::hostname();
        let shorthost = thishost.split('.').next().unwrap_or("").to_string();
        let port = self.port.to_string();
        let uid = sys::uid().to_string();
        let keyalias = self
            .host_key_alias
            .clone()
            .unwrap_or_else(|| self.alias.clone());
        let conn_hash = {
            use sha1::Digest;
            let mut h = sha1::Sha1::new();
            h.update(thishost.as_bytes());
            h.update(self.hostname.as_bytes());
            h.update(port.as_bytes());
            h.update(self.user.as_bytes());
            h.finalize()
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect::<String>()
        };
        let home = self.home.to_string_lossy();
        let tokens = [
            ('C', conn_hash.as_str()),
            ('L', shorthost.as_str()),
            ('i', uid.as_str()),
            ('k', keyalias.as_str()),
            ('l', thishost.as_str()),
            ('n', self.alias.as_str()),
            ('p', port.as_str()),
            ('d', home.as_ref()),
            ('h', self.hostname.as_str()),
            ('r', self.user.as_str()),
            ('u', self.local_user.as_str()),
        ];
        expand::percent_dollar_expand(&s, &tokens, true)
    }

    /// The settings in `ssh -G` form: `key value` lines, lower-case keys, in `ssh -G`'s order and
    /// with its defaults, for the keys this type models (a subset of what `ssh -G` prints).
    pub fn ssh_g(&self) -> String {
        use std::fmt::Write as _;
        let yn = |b: bool| if b { "yes" } else { "no" };
        let mut s = String::new();
        let _ = writeln!(s, "host {}", self.alias);
        let _ = writeln!(s, "user {}", self.user);
        let _ = writeln!(s, "hostname {}", self.hostname);
        let _ = writeln!(s, "port {}", self.port);
        let _ = writeln!(s, "batchmode {}", yn(self.batch_mode));
        let _ = writeln!(s, "identitiesonly {}", yn(self.identities_only));
        let _ = writeln!(
            s,
            "stricthostkeychecking {}",
            self.strict_host_key_checking.as_ssh_g()
        );
        let _ = writeln!(s, "serveralivecountmax {}", self.server_alive_count_max);
        let _ = writeln!(s, "serveraliveinterval {}", self.server_alive_interval);
        let _ = writeln!(
            s,
            "hostkeyalgorithms {}",
            self.host_key_algorithms
                .as_deref()
                .unwrap_or(keywords::DEFAULT_HOST_KEY_ALGS)
        );
        if let Some(a) = &self.host_key_alias {
            let _ = writeln!(s, "hostkeyalias {a}");
        }
        if let Some(a) = &self.identity_agent {
            let _ = writeln!(s, "identityagent {a}");
        }
        for f in &self.identity_files {
            let _ = writeln!(s, "identityfile {f}");
        }
        let _ = writeln!(
            s,
            "globalknownhostsfile {}",
            self.global_known_hosts_files.join(" ")
        );
        let _ = writeln!(
            s,
            "userknownhostsfile {}",
            self.user_known_hosts_files.join(" ")
        );
        match self.connect_timeout {
            Some(t) => {
                let _ = writeln!(s, "connecttimeout {t}");
            }
            None => s.push_str("connecttimeout none\n"),
        }
        if let Some(j) = &self.proxy_jump {
            let _ = writeln!(s, "proxyjump {j}");
        } else if let Some(c) = &self.proxy_command {
            let _ = writeln!(s, "proxycommand {c}");
        }
        s
    }

    /// Identity files with `~` and `%h %r %p %n %u %d %l %L %i %k %C %%` and `${ENV}` expanded, as
    /// OpenSSH does when it loads keys. `none` is skipped; a value with an unknown token is kept
    /// with only `~` expanded (OpenSSH would refuse to connect).
    pub fn expanded_identity_files(&self) -> Vec<PathBuf> {
        self.identity_files
            .iter()
            .filter(|f| !f.eq_ignore_ascii_case("none"))
            .map(|f| {
                self.expand_path(f)
                    .or_else(|_| expand::tilde_expand(f, &self.home))
                    .unwrap_or_else(|_| f.clone())
            })
            .map(PathBuf::from)
            .collect()
    }

    /// Known hosts files to read: the user files, then the global ones, expanded; `none` skipped.
    pub fn expanded_known_hosts_files(&self) -> Vec<PathBuf> {
        let user = self.user_known_hosts_files.iter().cloned();
        let global = self.global_known_hosts_files.iter().map(|f| {
            self.expand_path(f)
                .or_else(|_| expand::tilde_expand(f, &self.home))
                .unwrap_or_else(|_| f.clone())
        });
        user.chain(global)
            .filter(|f| !f.eq_ignore_ascii_case("none"))
            .map(PathBuf::from)
            .collect()
    }

    /// The `ProxyJump` chain in connection order (first hop first); empty without `ProxyJump`.
    pub fn jump_hosts(&self) -> Result<Vec<Target>, TargetError> {
        match &self.proxy_jump {
            None => Ok(Vec::new()),
            Some(j) => j.split(',').map(parse_target).collect(),
        }
    }
}

impl fmt::Display for StrictHostKeyChecking {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_ssh_g())
    }
}
