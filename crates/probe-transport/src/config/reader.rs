//! Reading `ssh_config` files the way OpenSSH's `readconf.c` does: `Host`/`Match` blocks,
//! `Include`, first value wins, into the option [`State`] that [`super::resolver`] turns
//! into a [`super::ResolvedConfig`].

use std::fmt;
use std::path::{Path, PathBuf};

use super::{
    ConfigError, Jump, MAX_HOSTS_FILES, MAX_IDENTITY_FILES, MAX_INCLUDE_DEPTH, ResolveOptions,
    SYSTEM_CONFIG, SYSTEM_DIR, StrictHostKeyChecking, cerr, expand, keywords, lexer, pattern, sys,
};
use crate::target::{Target, parse_target};

/// Options as OpenSSH's `Options` struct holds them while reading: `None` = unset.
#[derive(Debug, Default)]
pub(super) struct State {
    pub(super) user: Option<String>,
    pub(super) hostname: Option<(String, PathBuf, usize)>,
    pub(super) port: Option<u16>,
    pub(super) identity_files: Vec<String>,
    pub(super) identities_only: Option<bool>,
    pub(super) identity_agent: Option<String>,
    pub(super) jump: Option<Option<Jump>>, // Some(None) = `ProxyJump none`
    pub(super) proxy_command: Option<String>,
    pub(super) connect_timeout: Option<u64>,
    pub(super) user_known_hosts: Vec<String>,
    pub(super) global_known_hosts: Vec<String>,
    pub(super) strict: Option<StrictHostKeyChecking>,
    pub(super) server_alive_interval: Option<u64>,
    pub(super) server_alive_count_max: Option<i64>,
    pub(super) host_key_alias: Option<String>,
    pub(super) batch_mode: Option<bool>,
    pub(super) host_key_algorithms: Option<String>,
    pub(super) ignore_unknown: Option<String>,
    pub(super) canonicalize_hostname: Option<bool>,
    pub(super) other: Vec<(String, String)>,
    pub(super) warnings: Vec<String>,
}

#[derive(Clone, Copy)]
struct Flags {
    pub(super) user_conf: bool,
    pub(super) never_match: bool,
}

struct Reader<'a> {
    pub(super) opts: &'a ResolveOptions,
    /// Host that `Host` lines match: as typed in the first pass, the resolved name in the final.
    pub(super) host: String,
    pub(super) original_host: String,
    pub(super) final_pass: bool,
    pub(super) want_final: bool,
    pub(super) st: State,
}

/// Reads the configuration for `target` (both passes when `Match final`/`canonical` or
/// `CanonicalizeHostname` ask for the second), giving the options and the host name to use.
pub(super) fn read(target: &Target, opts: &ResolveOptions) -> Result<(State, String), ConfigError> {
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
        Some((hn, file, line)) => expand::hostname(hn, &target.host)
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
    Ok((r.st, host))
}

/// A numeric address (a scope `%eth0` allowed): `HostName` keeps its case.
fn is_addr(s: &str) -> bool {
    let s = s.split('%').next().unwrap_or(s);
    s.parse::<std::net::IpAddr>().is_ok()
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
        let line = Line {
            file,
            ln,
            kw,
            argv,
            rest: l.rest,
        };
        let act = *active;
        match kw {
            "host" => self.host_line(&line, flags, active),
            "match" => {
                let m = self.match_line(l.rest, file, ln)?;
                *active = !flags.never_match && m;
                Ok(())
            }
            "include" => self.include(&line.argv, file, ln, flags, active, depth),
            "proxyjump" => {
                let raw = l.rest.trim_start_matches([' ', '\t', '\r', '\n', '=']);
                self.proxy_jump(raw, act).map_err(err)
            }
            _ => self.st.apply(&line, act),
        }
    }

    /// `Host`: the block is active when a pattern matches and no negated one does.
    fn host_line(
        &mut self,
        line: &Line<'_>,
        flags: Flags,
        active: &mut bool,
    ) -> Result<(), ConfigError> {
        *active = false;
        for arg in &line.argv {
            if arg.is_empty() {
                return Err(line.err(format!("keyword {} empty argument", line.kw)));
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
        let on = MatchOn {
            file,
            ln,
            ruser: self
                .st
                .user
                .clone()
                .unwrap_or_else(|| self.opts.local_user.clone()),
            host: self.match_host()?,
        };
        let mut cp = Some(rest);
        let mut result = true;
        let mut attributes = 0;
        while let Some(attrib) = next_token(&mut cp) {
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
                let arg = next_token(&mut cp);
                if attributes > 1
                    || arg
                        .as_deref()
                        .is_some_and(|x| !x.is_empty() && !x.starts_with('#'))
                {
                    return Err(on.err(format!(
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
            let arg = match next_token(&mut cp) {
                Some(x) if !x.is_empty() && !x.starts_with('#') => x,
                _ => return Err(on.err(format!("Missing Match criteria for {attrib}"))),
            };
            if self.criterion(&on, &attrib, &a, &arg, result)? == negate {
                result = false;
            }
        }
        if attributes == 0 {
            return Err(on.err("One or more attributes required for Match"));
        }
        Ok(result)
    }

    /// The host a `Match host` tests: the `HostName` set so far (expanded, unless this is
    /// the final pass), else the host as given.
    fn match_host(&self) -> Result<String, ConfigError> {
        Ok(match &self.st.hostname {
            Some((hn, _, _)) if self.final_pass => hn.clone(),
            Some((hn, hf, hl)) => expand::hostname(hn, &self.host)
                .map_err(|m| cerr(hf, *hl, format!("HostName: {m}")))?,
            None => self.host.clone(),
        })
    }

    /// Whether one criterion (`a`, the attribute in lower case, with its argument) holds.
    /// `exec` and `localnetwork` are not supported: they fail, with a warning (`exec`'s only
    /// while the line still matches).
    fn criterion(
        &mut self,
        on: &MatchOn<'_>,
        attrib: &str,
        a: &str,
        arg: &str,
        result: bool,
    ) -> Result<bool, ConfigError> {
        let (file, ln) = (on.file, on.ln);
        Ok(match a {
            "host" => pattern::match_hostname(&on.host, arg) == 1,
            "originalhost" => pattern::match_hostname(&self.original_host, arg) == 1,
            "user" => pattern::match_pattern_list(&on.ruser, arg, false) == 1,
            "localuser" => pattern::match_pattern_list(&self.opts.local_user, arg, false) == 1,
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
            _ => return Err(on.err(format!("Unsupported Match attribute {attrib}"))),
        })
    }
}

/// A `Match` line being read: where it is, and the host and remote user it is matched against.
struct MatchOn<'m> {
    file: &'m Path,
    ln: usize,
    host: String,
    ruser: String,
}

impl MatchOn<'_> {
    fn err(&self, message: impl Into<String>) -> ConfigError {
        cerr(self.file, self.ln, message)
    }
}

/// The next token of a `Match` line (`strdelim`), `None` at its end.
fn next_token(cp: &mut Option<&str>) -> Option<String> {
    let (tok, r) = lexer::strdelim((*cp)?)?;
    *cp = r;
    Some(tok)
}

/// One configuration line being applied: where it is, its keyword and its arguments.
struct Line<'l> {
    file: &'l Path,
    ln: usize,
    /// Lower-case keyword.
    kw: &'l str,
    argv: Vec<String>,
    /// The arguments as written (`ProxyCommand` keeps them verbatim).
    rest: &'l str,
}

impl Line<'_> {
    fn err(&self, message: impl Into<String>) -> ConfigError {
        cerr(self.file, self.ln, message)
    }

    /// One argument, present and alone.
    fn one(&self) -> Result<&str, ConfigError> {
        match self.argv.as_slice() {
            [] => Err(self.err("Missing argument")),
            [a] if a.is_empty() => Err(self.err("Missing argument")),
            [a] => Ok(a.as_str()),
            _ => Err(self.err(format!(
                "keyword {} extra arguments at end of line",
                self.kw
            ))),
        }
    }

    /// `yes`/`no` (and `true`/`false`).
    fn flag(&self) -> Result<bool, ConfigError> {
        let a = self.one()?;
        parse_flag(a).ok_or_else(|| self.err(format!("unsupported option \"{a}\"")))
    }
}

/// Sets `slot` from `value` when the block is active and the option is still unset (first
/// value wins).
fn first<T>(slot: &mut Option<T>, act: bool, value: T) {
    if act && slot.is_none() {
        *slot = Some(value);
    }
}

impl State {
    /// An option line (every keyword but the block and include structure) into the state.
    fn apply(&mut self, line: &Line<'_>, act: bool) -> Result<(), ConfigError> {
        match line.kw {
            "hostname" => {
                let a = line.one()?;
                first(
                    &mut self.hostname,
                    act,
                    (a.to_string(), line.file.to_path_buf(), line.ln),
                );
            }
            "user" => first(&mut self.user, act, line.one()?.to_string()),
            "hostkeyalias" => first(&mut self.host_key_alias, act, line.one()?.to_string()),
            "ignoreunknown" => first(&mut self.ignore_unknown, act, line.one()?.to_string()),
            "port" => {
                let a = line.one()?;
                let p = expand::a2port(a)
                    .filter(|&p| p > 0)
                    .ok_or_else(|| line.err(format!("Bad port '{a}'")))?;
                first(&mut self.port, act, p);
            }
            "identityfile" => self.identity_file(line, act)?,
            "identitiesonly" => first(&mut self.identities_only, act, line.flag()?),
            "batchmode" => first(&mut self.batch_mode, act, line.flag()?),
            "stricthostkeychecking" => {
                let a = line.one()?;
                let v = StrictHostKeyChecking::parse(a)
                    .ok_or_else(|| line.err(format!("unsupported option \"{a}\"")))?;
                first(&mut self.strict, act, v);
            }
            "canonicalizehostname" => {
                let a = line.one()?;
                let v = match a.to_ascii_lowercase().as_str() {
                    "yes" | "true" | "always" => true,
                    "no" | "false" => false,
                    _ => return Err(line.err(format!("unsupported option \"{a}\""))),
                };
                first(&mut self.canonicalize_hostname, act, v);
            }
            "connecttimeout" | "serveraliveinterval" => self.time_option(line, act)?,
            "serveralivecountmax" => {
                let v = count_max(line)?;
                first(&mut self.server_alive_count_max, act, v);
            }
            "userknownhostsfile" | "globalknownhostsfile" => self.hosts_files(line, act)?,
            "identityagent" => {
                let a = line.one()?;
                expand::check_agent_path(a).map_err(|m| line.err(m.to_string()))?;
                first(&mut self.identity_agent, act, a.to_string());
            }
            "hostkeyalgorithms" => {
                let a = line.one()?;
                let names = a.strip_prefix(['+', '^']).unwrap_or(a);
                if !a.starts_with('-') && !valid_key_names(names) {
                    return Err(line.err(format!("Bad key types '{a}'")));
                }
                first(&mut self.host_key_algorithms, act, a.to_string());
            }
            "proxycommand" => {
                let raw = line.rest.trim_start_matches([' ', '\t', '\r', '\n', '=']);
                if self.jump.is_none() {
                    first(&mut self.proxy_command, act, raw.to_string());
                }
            }
            kw => {
                if act
                    && (keywords::ACCUMULATING.contains(&kw)
                        || !self.other.iter().any(|(k, _)| k == kw))
                {
                    self.other.push((kw.to_string(), line.argv.join(" ")));
                }
            }
        }
        Ok(())
    }

    /// `IdentityFile`: accumulates, each file once, at most [`MAX_IDENTITY_FILES`].
    fn identity_file(&mut self, line: &Line<'_>, act: bool) -> Result<(), ConfigError> {
        let a = line.one()?;
        if act && !self.identity_files.iter().any(|f| f == a) {
            if self.identity_files.len() >= MAX_IDENTITY_FILES {
                return Err(line.err(format!(
                    "Too many identity files specified (max {MAX_IDENTITY_FILES})"
                )));
            }
            self.identity_files.push(a.to_string());
        }
        Ok(())
    }

    /// `ConnectTimeout` and `ServerAliveInterval`: a time value or `none`.
    fn time_option(&mut self, line: &Line<'_>, act: bool) -> Result<(), ConfigError> {
        let a = match line.argv.first() {
            Some(a) if !a.is_empty() => a.as_str(),
            _ => return Err(line.err("missing time value")),
        };
        let v = if a == "none" {
            None
        } else {
            Some(expand::convtime(a).ok_or_else(|| line.err("invalid time value"))?)
        };
        line.one()?;
        let slot = if line.kw == "connecttimeout" {
            &mut self.connect_timeout
        } else {
            &mut self.server_alive_interval
        };
        if act && slot.is_none() {
            *slot = v;
        }
        Ok(())
    }

    /// `UserKnownHostsFile` and `GlobalKnownHostsFile`: the first line that sets the list wins.
    fn hosts_files(&mut self, line: &Line<'_>, act: bool) -> Result<(), ConfigError> {
        let kw = line.kw;
        let list = if kw == "userknownhostsfile" {
            &mut self.user_known_hosts
        } else {
            &mut self.global_known_hosts
        };
        let was_empty = list.is_empty();
        for (i, a) in line.argv.iter().enumerate() {
            if a.is_empty() {
                return Err(line.err(format!("keyword {kw} empty argument")));
            }
            if a.eq_ignore_ascii_case("none") && line.argv.len() > 1 {
                return Err(line.err(format!("keyword {kw} \"none\" argument must appear alone")));
            }
            if act && was_empty {
                if i >= MAX_HOSTS_FILES {
                    return Err(line.err(format!("too many {kw} entries")));
                }
                list.push(a.clone());
            }
        }
        Ok(())
    }
}

/// `ServerAliveCountMax`: OpenSSH's `strtonum(arg, 0, INT_MAX)`.
fn count_max(line: &Line<'_>) -> Result<i64, ConfigError> {
    let v: i64 = line
        .one()?
        .parse::<i64>()
        .map_err(|_| line.err("integer value invalid"))?;
    if v < 0 {
        return Err(line.err("integer value too small"));
    }
    if v > i64::from(i32::MAX) {
        return Err(line.err("integer value too large"));
    }
    Ok(v)
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
