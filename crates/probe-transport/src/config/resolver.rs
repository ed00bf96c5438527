//! From the options read to the [`ResolvedConfig`] `ssh -G` would print: OpenSSH's
//! defaults, `HostName` taken into use, the jump-host loop check, host key algorithm lists
//! assembled, and `%`/`~` expansion of paths.

use std::path::PathBuf;

use super::printer::format_jump;
use super::{
    ConfigError, Jump, ResolveOptions, ResolvedConfig, cerr, expand, keywords, pattern, reader, sys,
};
use crate::target::{Target, TargetError, parse_target};

/// Resolves `target` against the configuration, as `ssh -G [-F FILE] [-l USER] [-p PORT] HOST`.
pub fn resolve(target: &Target, opts: &ResolveOptions) -> Result<ResolvedConfig, ConfigError> {
    let (st, host) = reader::read(target, opts)?;
    let user = st.user.unwrap_or_else(|| opts.local_user.clone());
    let port = st.port.unwrap_or(22);
    let jump = st.jump.flatten();
    if let Some(j) = &jump {
        no_jump_loop(j, &host, port, &user, opts)?;
    }
    let proxy_command = match (&jump, st.proxy_command) {
        (None, Some(pc)) if !pc.eq_ignore_ascii_case("none") => Some(pc),
        _ => None,
    };
    let mut cfg = ResolvedConfig {
        alias: target.host.clone(),
        hostname: host,
        user,
        port,
        identity_files: or_defaults(st.identity_files, &DEFAULT_IDENTITY_FILES),
        identities_only: st.identities_only.unwrap_or(false),
        identity_agent: None,
        proxy_jump: jump.as_ref().map(format_jump),
        proxy_command,
        connect_timeout: st.connect_timeout,
        user_known_hosts_files: Vec::new(),
        global_known_hosts_files: or_defaults(st.global_known_hosts, &DEFAULT_GLOBAL_KNOWN),
        strict_host_key_checking: st.strict.unwrap_or_default(),
        // readconf.c: "in batch mode, default is 5mins".
        server_alive_interval: st
            .server_alive_interval
            .unwrap_or(if st.batch_mode == Some(true) { 300 } else { 0 }),
        server_alive_count_max: u64::try_from(st.server_alive_count_max.unwrap_or(3)).unwrap_or(0),
        host_key_alias: st.host_key_alias.map(|a| a.to_ascii_lowercase()),
        batch_mode: st.batch_mode.unwrap_or(false),
        host_key_algorithms: st.host_key_algorithms.map(|a| assemble_host_key_algs(&a)),
        other: st.other,
        warnings: st.warnings,
        home: opts.home.clone(),
        local_user: opts.local_user.clone(),
    };
    let user_known = or_defaults(st.user_known_hosts, &DEFAULT_USER_KNOWN);
    expand_printed_paths(&mut cfg, user_known, st.identity_agent, opts)?;
    Ok(cfg)
}

/// OpenSSH's identity files when none is configured.
const DEFAULT_IDENTITY_FILES: [&str; 7] = [
    "~/.ssh/id_rsa",
    "~/.ssh/id_ecdsa",
    "~/.ssh/id_ecdsa_sk",
    "~/.ssh/id_ed25519",
    "~/.ssh/id_ed25519_sk",
    "~/.ssh/id_xmss",
    "~/.ssh/id_dsa",
];
const DEFAULT_USER_KNOWN: [&str; 2] = ["~/.ssh/known_hosts", "~/.ssh/known_hosts2"];
const DEFAULT_GLOBAL_KNOWN: [&str; 2] = ["/etc/ssh/ssh_known_hosts", "/etc/ssh/ssh_known_hosts2"];

/// `values`, or OpenSSH's defaults when the configuration set none.
fn or_defaults(values: Vec<String>, defaults: &[&str]) -> Vec<String> {
    if values.is_empty() {
        defaults.iter().map(|d| (*d).to_string()).collect()
    } else {
        values
    }
}

/// The file a resolution error without a line of its own names.
fn config_file(opts: &ResolveOptions) -> PathBuf {
    opts.config_file
        .clone()
        .unwrap_or_else(|| opts.home.join(".ssh/config"))
}

/// ssh.c: a ProxyJump whose (last) hop is the destination itself is fatal ("jumphost loop
/// via HOST"). Host compared exactly, an unset hop port as 22, an unset hop user as any.
fn no_jump_loop(
    j: &Jump,
    host: &str,
    port: u16,
    user: &str,
    opts: &ResolveOptions,
) -> Result<(), ConfigError> {
    if j.host == host && j.port.unwrap_or(22) == port && j.user.as_ref().is_none_or(|u| *u == user)
    {
        return Err(cerr(
            &config_file(opts),
            0,
            format!(
                "jumphost loop via {} (ProxyJump names the destination itself)",
                j.host
            ),
        ));
    }
    Ok(())
}

/// ssh.c expands `UserKnownHostsFile` and `IdentityAgent` before `-G` prints them; a bad
/// token is fatal there too.
fn expand_printed_paths(
    cfg: &mut ResolvedConfig,
    user_known: Vec<String>,
    identity_agent: Option<String>,
    opts: &ResolveOptions,
) -> Result<(), ConfigError> {
    let file = config_file(opts);
    for f in user_known {
        let e = cfg
            .expand_path(&f)
            .map_err(|m| cerr(&file, 0, format!("UserKnownHostsFile {f}: {m}")))?;
        cfg.user_known_hosts_files.push(e);
    }
    if let Some(a) = identity_agent {
        let e = cfg
            .expand_path(&a)
            .map_err(|m| cerr(&file, 0, format!("IdentityAgent {a}: {m}")))?;
        cfg.identity_agent = Some(e);
    }
    Ok(())
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

impl ResolvedConfig {
    /// `%` tokens as OpenSSH's `DEFAULT_CLIENT_PERCENT_EXPAND_ARGS` (9.2): C L i k l n p d h r u.
    fn expand_path(&self, s: &str) -> Result<String, expand::ExpandError> {
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
