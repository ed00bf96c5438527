//! `~`, `%token` and `${ENV}` expansion, time values and ports, as OpenSSH's `misc.c` does them.

use std::path::Path;

/// Why a value could not be expanded or checked (OpenSSH refuses each), in OpenSSH's words.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum ExpandError {
    #[error("environment variable '${{' is not closed")]
    UnclosedEnv,
    #[error("env var ${{{0}}} has no value")]
    UnsetEnv(String),
    #[error("unknown key %{0}")]
    UnknownToken(char),
    #[error("invalid format: '%' at end of string")]
    PercentAtEnd,
    #[error("Invalid environment expansion {0}")]
    InvalidEnvExpansion(String),
    #[error("Invalid environment name {0}")]
    InvalidEnvName(String),
    #[error("No such user {0}")]
    NoSuchUser(String),
}

/// Replaces `%X` tokens from `tokens` and `%%`; with `dollar`, also `${NAME}` from the environment.
/// Errors name the unknown token or the unset variable (OpenSSH refuses both).
pub(crate) fn percent_dollar_expand(
    s: &str,
    tokens: &[(char, &str)],
    dollar: bool,
) -> Result<String, ExpandError> {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if dollar && c == '$' && chars.peek() == Some(&'{') {
            chars.next();
            let mut name = String::new();
            let mut closed = false;
            for n in chars.by_ref() {
                if n == '}' {
                    closed = true;
                    break;
                }
                name.push(n);
            }
            if !closed {
                return Err(ExpandError::UnclosedEnv);
            }
            match std::env::var(&name) {
                Ok(v) => out.push_str(&v),
                Err(_) => return Err(ExpandError::UnsetEnv(name)),
            }
            continue;
        }
        if c != '%' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('%') => out.push('%'),
            Some(k) => match tokens.iter().find(|(t, _)| *t == k) {
                Some((_, v)) => out.push_str(v),
                None => return Err(ExpandError::UnknownToken(k)),
            },
            None => return Err(ExpandError::PercentAtEnd),
        }
    }
    Ok(out)
}

/// Validates an `IdentityAgent` value the way OpenSSH's parser does.
pub(crate) fn check_agent_path(arg: &str) -> Result<(), ExpandError> {
    // `${VAR}` must be closed (OpenSSH also requires it to be set; checked when it is expanded).
    let mut rest = arg;
    while let Some(i) = rest.find("${") {
        let after = rest.get(i + 2..).unwrap_or("");
        match after.find('}') {
            Some(j) => rest = after.get(j + 1..).unwrap_or(""),
            None => return Err(ExpandError::InvalidEnvExpansion(arg.to_string())),
        }
    }
    if let Some(name) = arg.strip_prefix('$')
        && !name.starts_with('{')
        && !valid_env_name(name)
    {
        return Err(ExpandError::InvalidEnvName(arg.to_string()));
    }
    Ok(())
}

fn valid_env_name(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with(|c: char| c.is_ascii_digit())
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// OpenSSH's `tilde_expand_filename`: `~/x` and `~` use `home`, `~user/x` that user's home.
/// Paths not starting with `~` are returned unchanged. Quirk kept: `~x` (no slash) is `home/x`.
pub(crate) fn tilde_expand(s: &str, home: &Path) -> Result<String, ExpandError> {
    let Some(rest) = s.strip_prefix('~') else {
        return Ok(s.to_string());
    };
    let (dir, tail) = match rest.find('/') {
        Some(0) => (home.to_path_buf(), rest.get(1..).unwrap_or("")),
        Some(i) => {
            let user = rest.get(..i).unwrap_or("");
            let dir = super::sys::home_of(user)
                .ok_or_else(|| ExpandError::NoSuchUser(user.to_string()))?;
            (dir, rest.get(i + 1..).unwrap_or(""))
        }
        None => (home.to_path_buf(), rest),
    };
    let dir = dir.to_string_lossy().into_owned();
    let sep = if dir.ends_with('/') { "" } else { "/" };
    Ok(format!("{dir}{sep}{tail}"))
}

/// OpenSSH's `convtime`: `90`, `1m30s`, `2h`, `1w` (s m h d w, any case) to seconds.
pub(crate) fn convtime(s: &str) -> Option<u64> {
    if s.is_empty() {
        return None;
    }
    let mut total: u64 = 0;
    let mut num: Option<u64> = None;
    for c in s.chars() {
        if let Some(d) = c.to_digit(10) {
            num = Some(
                num.unwrap_or(0)
                    .checked_mul(10)?
                    .checked_add(u64::from(d))?,
            );
            continue;
        }
        let mult = match c.to_ascii_lowercase() {
            's' => 1,
            'm' => 60,
            'h' => 3600,
            'd' => 86400,
            'w' => 604800,
            _ => return None,
        };
        total = total.checked_add(num.take()?.checked_mul(mult)?)?;
    }
    if let Some(n) = num {
        total = total.checked_add(n)?;
    }
    (total <= i32::MAX as u64).then_some(total)
}

/// OpenSSH's `a2port`: a number 0-65535 or a TCP service name from `/etc/services`. The caller
/// rejects 0.
pub(crate) fn a2port(s: &str) -> Option<u16> {
    if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) {
        return s.parse::<u16>().ok();
    }
    let services = crate::local_file::read_bounded_text(
        std::path::Path::new("/etc/services"),
        crate::local_file::CONFIG_CAP,
    )
    .ok()?;
    services.lines().find_map(|line| {
        let line = line.split('#').next().unwrap_or("");
        let mut words = line.split_whitespace();
        let name = words.next()?;
        let (port, proto) = words.next()?.split_once('/')?;
        let matches = proto == "tcp" && (name == s || words.any(|alias| alias == s));
        if matches { port.parse().ok() } else { None }
    })
}

/// `HostName` with `%h` (the host as typed) expanded.
pub(crate) fn hostname(hn: &str, host: &str) -> Result<String, ExpandError> {
    percent_dollar_expand(hn, &[('h', host)], false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percent() {
        let toks = [('h', "web"), ('r', "ops"), ('p', "22")];
        assert_eq!(
            percent_dollar_expand("~/.ssh/id_%h_%r_%p%%", &toks, false).unwrap(),
            "~/.ssh/id_web_ops_22%"
        );
        assert!(
            percent_dollar_expand("%x", &toks, false)
                .unwrap_err()
                .to_string()
                .contains("%x")
        );
        assert!(percent_dollar_expand("abc%", &toks, false).is_err());
        assert_eq!(
            percent_dollar_expand("${PATH}", &[], false).unwrap(),
            "${PATH}"
        );
        // SAFETY-free: reading an env var that always exists in tests.
        let path = std::env::var("PATH").unwrap_or_default();
        assert_eq!(percent_dollar_expand("${PATH}", &[], true).unwrap(), path);
        assert!(percent_dollar_expand("${PROBE_SURELY_UNSET_VAR}", &[], true).is_err());
    }

    #[test]
    fn tilde() {
        let h = Path::new("/home/op");
        assert_eq!(tilde_expand("~/.ssh/x", h).unwrap(), "/home/op/.ssh/x");
        assert_eq!(tilde_expand("~", h).unwrap(), "/home/op/");
        assert_eq!(tilde_expand("/abs", h).unwrap(), "/abs");
        assert_eq!(tilde_expand("~root/x", h).unwrap(), "/root/x");
        assert!(tilde_expand("~no-such-user-probe/x", h).is_err());
    }

    #[test]
    fn times_and_ports() {
        assert_eq!(convtime("90"), Some(90));
        assert_eq!(convtime("1m30s"), Some(90));
        assert_eq!(convtime("2H"), Some(7200));
        assert_eq!(convtime("1w1d"), Some(691200));
        assert_eq!(convtime("x"), None);
        assert_eq!(convtime("m"), None);
        assert_eq!(convtime(""), None);
        assert_eq!(a2port("2222"), Some(2222));
        assert_eq!(a2port("70000"), None);
    }
}
