//! The connection string, as libpq reads it: a `postgres://` URL or `key=value` pairs, and the
//! same string with its password redacted.

use std::collections::BTreeMap;

use super::{KEYWORDS, LocationError};

/// Whether `text` names a PostgreSQL store (a `postgres://` / `postgresql://` URL, or a libpq
/// `key=value` string with a `host`, `dbname` or `service`).
pub fn is_postgres(text: &str) -> bool {
    let lower = text.trim_start().to_ascii_lowercase();
    lower.starts_with("postgres://")
        || lower.starts_with("postgresql://")
        || (lower.contains('=')
            && ["host=", "dbname=", "service="]
                .iter()
                .any(|key| lower.starts_with(key) || lower.contains(&format!(" {key}"))))
}

/// The connection string with any password replaced by `***` (URL user info, `?password=`,
/// `password=` keywords). Safe to print.
pub fn redact(text: &str) -> String {
    let trimmed = text.trim();
    if let Some((scheme, rest)) = split_scheme(trimmed) {
        let (authority, tail) = match rest.find(['/', '?']) {
            Some(at) => rest.split_at(at),
            None => (rest, ""),
        };
        let authority = match authority.rsplit_once('@') {
            Some((userinfo, hosts)) => match userinfo.split_once(':') {
                Some((user, _)) => format!("{user}:***@{hosts}"),
                None => authority.to_string(),
            },
            None => authority.to_string(),
        };
        let tail = match tail.split_once('?') {
            Some((path, query)) => {
                let query: Vec<String> = query
                    .split('&')
                    .map(|pair| match pair.split_once('=') {
                        Some((key, _)) if key.eq_ignore_ascii_case("password") => {
                            format!("{key}=***")
                        }
                        _ => pair.to_string(),
                    })
                    .collect();
                format!("{path}?{}", query.join("&"))
            }
            None => tail.to_string(),
        };
        return format!("{scheme}://{authority}{tail}");
    }
    match parse_keywords(trimmed) {
        Ok(pairs) => pairs
            .into_iter()
            .map(|(key, value)| {
                if key == "password" {
                    format!("{key}=***")
                } else if value.is_empty() || value.contains([' ', '\'', '\\']) {
                    format!(
                        "{key}='{}'",
                        value.replace('\\', "\\\\").replace('\'', "\\'")
                    )
                } else {
                    format!("{key}={value}")
                }
            })
            .collect::<Vec<_>>()
            .join(" "),
        Err(_) => String::from("(unparsable connection string)"),
    }
}

fn split_scheme(text: &str) -> Option<(&str, &str)> {
    let (scheme, rest) = text.split_once("://")?;
    (scheme.eq_ignore_ascii_case("postgres") || scheme.eq_ignore_ascii_case("postgresql"))
        .then_some((scheme, rest))
}

/// Parses a URL or a `key=value` string into libpq keywords (nothing resolved yet).
pub fn parse(text: &str) -> Result<BTreeMap<String, String>, LocationError> {
    let text = text.trim();
    let pairs = match split_scheme(text) {
        Some((_, rest)) => parse_url(rest)?,
        None => parse_keywords(text)?,
    };
    let mut params = BTreeMap::new();
    for (key, value) in pairs {
        if !KEYWORDS.contains(&key.as_str()) {
            return Err(LocationError::Invalid(format!(
                "unknown connection option {key:?}"
            )));
        }
        params.insert(key, value);
    }
    Ok(params)
}

fn parse_url(rest: &str) -> Result<Vec<(String, String)>, LocationError> {
    let mut pairs = Vec::new();
    let (before_query, query) = match rest.split_once('?') {
        Some((before, query)) => (before, Some(query)),
        None => (rest, None),
    };
    let (authority, path) = match before_query.split_once('/') {
        Some((authority, path)) => (authority, Some(path)),
        None => (before_query, None),
    };
    let hosts = match authority.rsplit_once('@') {
        Some((userinfo, hosts)) => {
            let (user, password) = match userinfo.split_once(':') {
                Some((user, password)) => (user, Some(password)),
                None => (userinfo, None),
            };
            if !user.is_empty() {
                pairs.push(("user".into(), percent_decode(user)?));
            }
            if let Some(password) = password {
                pairs.push(("password".into(), percent_decode(password)?));
            }
            hosts
        }
        None => authority,
    };
    if !hosts.is_empty() {
        let mut host_list = Vec::new();
        let mut port_list = Vec::new();
        for entry in hosts.split(',') {
            let (host, port) = split_host_port(entry)?;
            host_list.push(percent_decode(host)?);
            port_list.push(port.unwrap_or_default().to_string());
        }
        if host_list.iter().any(|host| !host.is_empty()) {
            pairs.push(("host".into(), host_list.join(",")));
        }
        if port_list.iter().any(|port| !port.is_empty()) {
            pairs.push(("port".into(), port_list.join(",")));
        }
    }
    if let Some(path) = path.filter(|path| !path.is_empty()) {
        pairs.push(("dbname".into(), percent_decode(path)?));
    }
    for pair in query.into_iter().flat_map(|query| query.split('&')) {
        if pair.is_empty() {
            continue;
        }
        let (key, value) = pair.split_once('=').ok_or_else(|| {
            LocationError::Invalid(format!("URL parameter {pair:?} has no value"))
        })?;
        pairs.push((percent_decode(key)?, percent_decode(value)?));
    }
    Ok(pairs)
}

/// `host`, `host:port`, `[v6]`, `[v6]:port`.
fn split_host_port(entry: &str) -> Result<(&str, Option<&str>), LocationError> {
    if let Some(rest) = entry.strip_prefix('[') {
        let (host, after) = rest
            .split_once(']')
            .ok_or_else(|| LocationError::Invalid(format!("unclosed [ in host {entry:?}")))?;
        return Ok((host, after.strip_prefix(':')));
    }
    Ok(match entry.rsplit_once(':') {
        Some((host, port)) => (host, Some(port)),
        None => (entry, None),
    })
}

fn percent_decode(text: &str) -> Result<String, LocationError> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut index = 0;
    while index < bytes.len() {
        if bytes[index] == b'%' {
            let hex = text
                .get(index + 1..index + 3)
                .and_then(|hex| u8::from_str_radix(hex, 16).ok())
                .ok_or_else(|| {
                    LocationError::Invalid(format!("bad percent-encoding in {text:?}"))
                })?;
            out.push(hex);
            index += 3;
        } else {
            out.push(bytes[index]);
            index += 1;
        }
    }
    String::from_utf8(out)
        .map_err(|_| LocationError::Invalid(format!("percent-encoding in {text:?} is not UTF-8")))
}

/// `key=value key2='quoted \' value'`, as libpq reads it.
fn parse_keywords(text: &str) -> Result<Vec<(String, String)>, LocationError> {
    let mut pairs = Vec::new();
    let mut chars = text.chars().peekable();
    loop {
        while chars.next_if(|c| c.is_whitespace()).is_some() {}
        if chars.peek().is_none() {
            return Ok(pairs);
        }
        let mut key = String::new();
        while let Some(c) = chars.next_if(|c| *c != '=' && !c.is_whitespace()) {
            key.push(c);
        }
        while chars.next_if(|c| c.is_whitespace()).is_some() {}
        if chars.next() != Some('=') {
            return Err(LocationError::Invalid(format!(
                "missing \"=\" after {key:?} in connection string"
            )));
        }
        while chars.next_if(|c| c.is_whitespace()).is_some() {}
        let mut value = String::new();
        if chars.next_if_eq(&'\'').is_some() {
            loop {
                match chars.next() {
                    Some('\\') => value.extend(chars.next()),
                    Some('\'') => break,
                    Some(c) => value.push(c),
                    None => {
                        return Err(LocationError::Invalid(format!(
                            "unterminated quoted value of {key:?}"
                        )));
                    }
                }
            }
        } else {
            while let Some(c) = chars.next_if(|c| !c.is_whitespace()) {
                if c == '\\' {
                    value.extend(chars.next());
                } else {
                    value.push(c);
                }
            }
        }
        pairs.push((key, value));
    }
}
