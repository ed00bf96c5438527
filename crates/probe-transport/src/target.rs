//! Target strings: `host`, `user@host`, `user@host:port`, `[v6]:port`, `ssh://user@host:port`.
//!
//! A target is what the operator types after `probe host`. It names a host (or an alias from
//! `ssh_config`), optionally a user and a port. A user or port given here wins over the config file,
//! exactly like `ssh -l USER -p PORT` (OpenSSH sets them before it reads the config, and the first
//! value wins).
//!
//! Unlike OpenSSH's command line, `host:port` is accepted (OpenSSH only takes a port from `-p` or an
//! `ssh://` URI). A bare IPv6 address (`fe80::1`) has no port; write `[fe80::1]:2222` for one.

use std::fmt;

/// A parsed target: optional user, host (or alias) and optional port.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Target {
    /// Remote user, when the target names one (`user@host`).
    pub user: Option<String>,
    /// Host name, address or `ssh_config` alias, without brackets.
    pub host: String,
    /// Port, when the target names one.
    pub port: Option<u16>,
}

/// Why a target string was rejected. Displays as one line naming the input.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid target {input:?}: {reason}")]
pub struct TargetError {
    /// The rejected input (escaped by `Debug` formatting when displayed).
    pub input: String,
    /// What is wrong with it.
    pub reason: String,
}

impl TargetError {
    fn new(input: &str, reason: impl Into<String>) -> Self {
        TargetError {
            input: input.to_string(),
            reason: reason.into(),
        }
    }
}

impl Target {
    /// A target for `host` with no user or port.
    pub fn new(host: impl Into<String>) -> Self {
        Target {
            user: None,
            host: host.into(),
            port: None,
        }
    }
}

/// Parses a target string.
///
/// Accepted forms: `host`, `user@host`, `user@host:port`, `[v6]`, `[v6]:port`, `user@[v6]:port`,
/// bare IPv6 without port (`fe80::1`), and `ssh://[user@]host[:port][/]`. The user is split at the
/// last `@`, as OpenSSH does. Empty input, whitespace and control characters are rejected.
pub fn parse_target(s: &str) -> Result<Target, TargetError> {
    if s.is_empty() {
        return Err(TargetError::new(s, "empty target"));
    }
    if let Some(c) = s.chars().find(|c| c.is_whitespace() || c.is_control()) {
        let what = if c.is_whitespace() && !c.is_control() {
            "whitespace"
        } else {
            "a control character"
        };
        return Err(TargetError::new(s, format!("contains {what}")));
    }
    if let Some(rest) = strip_prefix_ignore_case(s, "ssh://") {
        return parse_uri(s, rest);
    }
    let (user, hostport) = match s.rsplit_once('@') {
        Some((u, h)) => {
            if u.is_empty() {
                return Err(TargetError::new(s, "empty user name before '@'"));
            }
            (Some(u.to_string()), h)
        }
        None => (None, s),
    };
    let (host, port) = split_host_port(s, hostport, true)?;
    check_chars(s, user.as_deref(), &host)?;
    Ok(Target { user, host, port })
}

/// OpenSSH (9.2 Debian, 9.6 upstream) refuses shell metacharacters in a command-line host and
/// user name, since they end up in `%h`/`%r` expansions of `ProxyCommand` and friends.
fn check_chars(input: &str, user: Option<&str>, host: &str) -> Result<(), TargetError> {
    if host.starts_with('-') {
        return Err(TargetError::new(input, "host must not start with '-'"));
    }
    if let Some(c) = host.chars().find(|c| "'`\"$\\;&<>|(){},".contains(*c)) {
        return Err(TargetError::new(input, format!("host contains {c:?}")));
    }
    if let Some(c) = user.and_then(|u| u.chars().find(|c| "'`\";&<>|(){}".contains(*c))) {
        return Err(TargetError::new(input, format!("user contains {c:?}")));
    }
    Ok(())
}

fn strip_prefix_ignore_case<'a>(s: &'a str, prefix: &str) -> Option<&'a str> {
    let head = s.get(..prefix.len())?;
    if head.eq_ignore_ascii_case(prefix) {
        s.get(prefix.len()..)
    } else {
        None
    }
}

/// `ssh://[user[;params]@]host[:port][/]`, like OpenSSH's `parse_ssh_uri` (no path allowed).
fn parse_uri(input: &str, rest: &str) -> Result<Target, TargetError> {
    let rest = rest.strip_suffix('/').unwrap_or(rest);
    if rest.contains('/') {
        return Err(TargetError::new(input, "ssh:// URI must not have a path"));
    }
    let (user, hostport) = match rest.rsplit_once('@') {
        Some((u, h)) => {
            // Connection parameters after ';' are ignored, as OpenSSH does.
            let u = u.split(';').next().unwrap_or("");
            if u.is_empty() {
                return Err(TargetError::new(input, "empty user name before '@'"));
            }
            (Some(percent_decode(input, u)?), h)
        }
        None => (None, rest),
    };
    let (host, port) = split_host_port(input, hostport, false)?;
    check_chars(input, user.as_deref(), &host)?;
    Ok(Target { user, host, port })
}

fn percent_decode(input: &str, s: &str) -> Result<String, TargetError> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        if b == b'%' {
            let hex = s
                .get(i + 1..i + 3)
                .and_then(|h| u8::from_str_radix(h, 16).ok())
                .ok_or_else(|| TargetError::new(input, "bad %-escape in ssh:// user"))?;
            out.push(hex);
            i += 3;
        } else {
            out.push(b);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| TargetError::new(input, "user is not UTF-8"))
}

fn split_host_port(
    input: &str,
    hp: &str,
    allow_bare_v6: bool,
) -> Result<(String, Option<u16>), TargetError> {
    if hp.is_empty() {
        return Err(TargetError::new(input, "empty host"));
    }
    if let Some(inner) = hp.strip_prefix('[') {
        let Some((host, after)) = inner.split_once(']') else {
            return Err(TargetError::new(input, "missing ']' after IPv6 address"));
        };
        if host.is_empty() {
            return Err(TargetError::new(input, "empty host"));
        }
        let port = match after {
            "" => None,
            _ => match after.strip_prefix(':') {
                Some(p) => Some(parse_port(input, p)?),
                None => {
                    return Err(TargetError::new(
                        input,
                        "unexpected text after ']' (expected ':PORT')",
                    ));
                }
            },
        };
        return Ok((host.to_string(), port));
    }
    let colons = hp.matches(':').count();
    if colons == 0 {
        return Ok((hp.to_string(), None));
    }
    if colons == 1 {
        let (host, port) = hp.split_once(':').unwrap_or((hp, ""));
        if host.is_empty() {
            return Err(TargetError::new(input, "empty host"));
        }
        return Ok((host.to_string(), Some(parse_port(input, port)?)));
    }
    // A bare IPv6 address, possibly with a zone (`fe80::1%eth0`).
    let addr = hp.split_once('%').map_or(hp, |(a, _)| a);
    if allow_bare_v6 && addr.parse::<std::net::Ipv6Addr>().is_ok() {
        return Ok((hp.to_string(), None));
    }
    Err(TargetError::new(
        input,
        "too many ':' (write an IPv6 address with a port as [addr]:port)",
    ))
}

fn parse_port(input: &str, p: &str) -> Result<u16, TargetError> {
    if p.is_empty() || !p.bytes().all(|b| b.is_ascii_digit()) {
        return Err(TargetError::new(input, format!("bad port {p:?}")));
    }
    match p.parse::<u16>() {
        Ok(0) | Err(_) => Err(TargetError::new(
            input,
            format!("port {p} out of range 1-65535"),
        )),
        Ok(n) => Ok(n),
    }
}

impl fmt::Display for Target {
    /// Formats so that [`parse_target`] reads it back: `user@host:port`, with IPv6 hosts in
    /// brackets when a port follows.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(u) = &self.user {
            write!(f, "{u}@")?;
        }
        match self.port {
            Some(p) if self.host.contains(':') => write!(f, "[{}]:{p}", self.host),
            Some(p) => write!(f, "{}:{p}", self.host),
            None => f.write_str(&self.host),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(user: Option<&str>, host: &str, port: Option<u16>) -> Target {
        Target {
            user: user.map(str::to_string),
            host: host.to_string(),
            port,
        }
    }

    #[test]
    fn accepted_forms() {
        let cases = [
            ("gpu-01", t(None, "gpu-01", None)),
            ("root@gpu-01", t(Some("root"), "gpu-01", None)),
            ("root@gpu-01:2222", t(Some("root"), "gpu-01", Some(2222))),
            ("gpu-01:22", t(None, "gpu-01", Some(22))),
            ("[fe80::1]:2200", t(None, "fe80::1", Some(2200))),
            ("[fe80::1]", t(None, "fe80::1", None)),
            (
                "ops@[2001:db8::7]:22",
                t(Some("ops"), "2001:db8::7", Some(22)),
            ),
            ("2001:db8::7", t(None, "2001:db8::7", None)),
            ("fe80::1%eth0", t(None, "fe80::1%eth0", None)),
            (
                "ssh://ops@host.example:2022",
                t(Some("ops"), "host.example", Some(2022)),
            ),
            ("ssh://host.example/", t(None, "host.example", None)),
            ("SSH://[::1]:22", t(None, "::1", Some(22))),
            ("ssh://a%40b@h", t(Some("a@b"), "h", None)),
            ("me@corp@bastion", t(Some("me@corp"), "bastion", None)),
            ("10.0.0.5:65535", t(None, "10.0.0.5", Some(65535))),
        ];
        for (input, want) in cases {
            assert_eq!(parse_target(input).unwrap(), want, "{input}");
        }
    }

    #[test]
    fn rejected_forms() {
        for bad in [
            "",
            " ",
            "a b",
            "host\t",
            "ho\u{1b}[31mst",
            "@host",
            "user@",
            "host:",
            "host:0",
            "host:65536",
            "host:abc",
            "[fe80::1",
            "[fe80::1]x",
            "[]:22",
            "a:b:c",
            "ssh://h/path",
            ":22",
            "-oProxyCommand=x",
            "a;b",
            "h$(id)",
            "comma,list",
            "x`y`@h",
        ] {
            let e = parse_target(bad).expect_err(bad);
            let msg = e.to_string();
            assert!(!msg.contains('\n'), "one line: {msg}");
            assert!(msg.starts_with("invalid target"), "{msg}");
        }
    }

    #[test]
    fn display_round_trips() {
        for s in [
            "h",
            "u@h",
            "u@h:2",
            "[::1]:22",
            "u@[fe80::1]:2222",
            "2001:db8::1",
        ] {
            let t = parse_target(s).unwrap();
            assert_eq!(t.to_string(), s);
            assert_eq!(parse_target(&t.to_string()).unwrap(), t);
        }
    }

    #[test]
    fn error_names_the_cause() {
        let e = parse_target("h:99999").unwrap_err();
        assert!(e.to_string().contains("out of range"), "{e}");
        let e = parse_target("a\u{7}b").unwrap_err();
        assert!(e.to_string().contains("control"), "{e}");
        assert!(!e.to_string().contains('\u{7}'));
    }
}
