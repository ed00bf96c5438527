//! libpq's connection conventions, which tokio-postgres leaves to the application: a URL or a
//! `key=value` string, then the service file (`service=` / `PGSERVICE`), then the `PG*`
//! environment variables, then defaults; the password from the string, the service, `PGPASSWORD`
//! or the password file (`PGPASSFILE`, `~/.pgpass`, ignored when group- or world-readable, as
//! libpq does). The password never appears in what this module prints: [`redact`].

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Variables and home directory a connection is resolved with (the process's, or a test's).
#[derive(Debug, Clone, Default)]
pub struct PgEnv {
    vars: BTreeMap<String, String>,
    home: Option<PathBuf>,
}

impl PgEnv {
    /// The process environment (`PG*`, `HOME`, `USER`).
    pub fn from_process() -> PgEnv {
        let vars: BTreeMap<String, String> = std::env::vars()
            .filter(|(key, _)| key.starts_with("PG") || key == "USER" || key == "LOGNAME")
            .collect();
        PgEnv {
            vars,
            home: std::env::var_os("HOME").map(PathBuf::from),
        }
    }

    /// An explicit environment (tests): `pairs` of variables, `home` for `~/.pgpass`.
    pub fn from_pairs<K: Into<String>, V: Into<String>>(
        pairs: impl IntoIterator<Item = (K, V)>,
        home: Option<PathBuf>,
    ) -> PgEnv {
        PgEnv {
            vars: pairs
                .into_iter()
                .map(|(key, value)| (key.into(), value.into()))
                .collect(),
            home,
        }
    }

    fn var(&self, name: &str) -> Option<&str> {
        self.vars
            .get(name)
            .map(String::as_str)
            .filter(|value| !value.is_empty())
    }
}

/// `PG*` variables and the connection keyword each sets (libpq's table, the ones we honour).
const ENVIRONMENT: &[(&str, &str)] = &[
    ("PGHOST", "host"),
    ("PGHOSTADDR", "hostaddr"),
    ("PGPORT", "port"),
    ("PGDATABASE", "dbname"),
    ("PGUSER", "user"),
    ("PGPASSWORD", "password"),
    ("PGPASSFILE", "passfile"),
    ("PGSSLMODE", "sslmode"),
    ("PGSSLROOTCERT", "sslrootcert"),
    ("PGAPPNAME", "application_name"),
    ("PGCONNECT_TIMEOUT", "connect_timeout"),
    ("PGOPTIONS", "options"),
    ("PGTARGETSESSIONATTRS", "target_session_attrs"),
];

/// Keywords accepted in a URL query, a `key=value` string or a service file.
const KEYWORDS: &[&str] = &[
    "host",
    "hostaddr",
    "port",
    "dbname",
    "user",
    "password",
    "passfile",
    "sslmode",
    "sslrootcert",
    "application_name",
    "fallback_application_name",
    "connect_timeout",
    "options",
    "target_session_attrs",
    "service",
    "keepalives",
    "keepalives_idle",
];

/// libpq's `sslmode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SslMode {
    Disable,
    Allow,
    Prefer,
    Require,
    VerifyCa,
    VerifyFull,
}

impl SslMode {
    fn parse(text: &str) -> Result<SslMode, String> {
        Ok(match text {
            "disable" => SslMode::Disable,
            "allow" => SslMode::Allow,
            "prefer" => SslMode::Prefer,
            "require" => SslMode::Require,
            "verify-ca" => SslMode::VerifyCa,
            "verify-full" => SslMode::VerifyFull,
            other => {
                return Err(format!(
                    "sslmode must be disable, allow, prefer, require, verify-ca or verify-full, \
                     not {other:?}"
                ));
            }
        })
    }
}

/// Where the password came from (for `-v` logs; never the password itself).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PasswordSource {
    None,
    ConnectionString,
    Service,
    Environment,
    PasswordFile,
}

/// A resolved connection: the settings tokio-postgres takes, and what TLS needs.
#[derive(Debug, Clone)]
pub struct Resolved {
    /// Connection keywords after service, environment and defaults (password included).
    pub params: BTreeMap<String, String>,
    pub hosts: Vec<String>,
    pub ports: Vec<u16>,
    pub sslmode: SslMode,
    /// `sslrootcert`, or `~/.postgresql/root.crt` when it exists.
    pub root_cert: Option<PathBuf>,
    pub password_source: PasswordSource,
    /// Notes for the log (a password file ignored for its permissions, ...).
    pub notes: Vec<String>,
}

impl Resolved {
    pub fn get(&self, keyword: &str) -> Option<&str> {
        self.params.get(keyword).map(String::as_str)
    }
}

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
pub fn parse(text: &str) -> Result<BTreeMap<String, String>, String> {
    let text = text.trim();
    let pairs = match split_scheme(text) {
        Some((_, rest)) => parse_url(rest)?,
        None => parse_keywords(text)?,
    };
    let mut params = BTreeMap::new();
    for (key, value) in pairs {
        if !KEYWORDS.contains(&key.as_str()) {
            return Err(format!("unknown connection option {key:?}"));
        }
        params.insert(key, value);
    }
    Ok(params)
}

fn parse_url(rest: &str) -> Result<Vec<(String, String)>, String> {
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
        let (key, value) = pair
            .split_once('=')
            .ok_or_else(|| format!("URL parameter {pair:?} has no value"))?;
        pairs.push((percent_decode(key)?, percent_decode(value)?));
    }
    Ok(pairs)
}

/// `host`, `host:port`, `[v6]`, `[v6]:port`.
fn split_host_port(entry: &str) -> Result<(&str, Option<&str>), String> {
    if let Some(rest) = entry.strip_prefix('[') {
        let (host, after) = rest
            .split_once(']')
            .ok_or_else(|| format!("unclosed [ in host {entry:?}"))?;
        return Ok((host, after.strip_prefix(':')));
    }
    Ok(match entry.rsplit_once(':') {
        Some((host, port)) => (host, Some(port)),
        None => (entry, None),
    })
}

fn percent_decode(text: &str) -> Result<String, String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut index = 0;
    while index < bytes.len() {
        if bytes[index] == b'%' {
            let hex = text
                .get(index + 1..index + 3)
                .and_then(|hex| u8::from_str_radix(hex, 16).ok())
                .ok_or_else(|| format!("bad percent-encoding in {text:?}"))?;
            out.push(hex);
            index += 3;
        } else {
            out.push(bytes[index]);
            index += 1;
        }
    }
    String::from_utf8(out).map_err(|_| format!("percent-encoding in {text:?} is not UTF-8"))
}

/// `key=value key2='quoted \' value'`, as libpq reads it.
fn parse_keywords(text: &str) -> Result<Vec<(String, String)>, String> {
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
            return Err(format!("missing \"=\" after {key:?} in connection string"));
        }
        while chars.next_if(|c| c.is_whitespace()).is_some() {}
        let mut value = String::new();
        if chars.next_if_eq(&'\'').is_some() {
            loop {
                match chars.next() {
                    Some('\\') => value.extend(chars.next()),
                    Some('\'') => break,
                    Some(c) => value.push(c),
                    None => return Err(format!("unterminated quoted value of {key:?}")),
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

/// Resolves a connection string the way libpq does (see the module comment).
pub fn resolve(text: &str, env: &PgEnv) -> Result<Resolved, String> {
    let explicit = parse(text)?;
    let mut password_source = if explicit.contains_key("password") {
        PasswordSource::ConnectionString
    } else {
        PasswordSource::None
    };
    let mut params = explicit.clone();
    let service = explicit
        .get("service")
        .cloned()
        .or_else(|| env.var("PGSERVICE").map(str::to_string));
    if let Some(service) = service {
        let service_params = service_entry(&service, env)?;
        if password_source == PasswordSource::None && service_params.contains_key("password") {
            password_source = PasswordSource::Service;
        }
        for (key, value) in service_params {
            params.entry(key).or_insert(value);
        }
    }
    for (variable, keyword) in ENVIRONMENT {
        if let Some(value) = env.var(variable)
            && !params.contains_key(*keyword)
        {
            if *keyword == "password" {
                password_source = PasswordSource::Environment;
            }
            params.insert((*keyword).to_string(), value.to_string());
        }
    }
    let user = params
        .get("user")
        .cloned()
        .or_else(|| env.var("USER").or(env.var("LOGNAME")).map(str::to_string))
        .or_else(current_user_name)
        .ok_or("no user: set user= in the URL or PGUSER")?;
    params.insert("user".into(), user.clone());
    params.entry("dbname".into()).or_insert(user);

    let hosts: Vec<String> = params
        .get("host")
        .map(|hosts| hosts.split(',').map(str::to_string).collect())
        .unwrap_or_else(|| vec![default_socket_dir()]);
    let ports = ports_for(&hosts, &params)?;
    let sslmode = SslMode::parse(params.get("sslmode").map_or("prefer", String::as_str))?;
    let root_cert = params.get("sslrootcert").map(PathBuf::from).or_else(|| {
        env.home
            .as_ref()
            .map(|home| home.join(".postgresql").join("root.crt"))
            .filter(|path| path.is_file())
    });
    let mut notes = Vec::new();
    if !params.contains_key("password") {
        let passfile = params
            .get("passfile")
            .map(PathBuf::from)
            .or_else(|| env.home.as_ref().map(|home| home.join(".pgpass")));
        if let Some(passfile) = passfile.filter(|path| path.is_file()) {
            match password_file_entry(&passfile, &hosts, &ports, &params) {
                Ok(Some(password)) => {
                    params.insert("password".into(), password);
                    password_source = PasswordSource::PasswordFile;
                }
                Ok(None) => {}
                Err(note) => notes.push(note),
            }
        }
    }
    Ok(Resolved {
        params,
        hosts,
        ports,
        sslmode,
        root_cert,
        password_source,
        notes,
    })
}

/// One port per host: the matching entry of `port=`, else its first, else 5432.
fn ports_for(hosts: &[String], params: &BTreeMap<String, String>) -> Result<Vec<u16>, String> {
    let port_text = params.get("port").cloned().unwrap_or_default();
    let mut ports = Vec::new();
    for (index, _) in hosts.iter().enumerate() {
        let port = port_text
            .split(',')
            .nth(index)
            .or_else(|| port_text.split(',').next())
            .filter(|port| !port.is_empty())
            .unwrap_or("5432");
        ports.push(
            port.parse::<u16>()
                .map_err(|_| format!("port {port:?} is not a port number"))?,
        );
    }
    Ok(ports)
}

/// libpq's compiled-in socket directory on Debian.
fn default_socket_dir() -> String {
    String::from("/var/run/postgresql")
}

/// libpq's default user: the name of this process's uid in the user database (NSS included,
/// through `getpwuid_r`).
fn current_user_name() -> Option<String> {
    let user = nix::unistd::User::from_uid(nix::unistd::getuid()).ok()??;
    Some(user.name)
}

/// The `[service]` section of the service files: `PGSERVICEFILE` or `~/.pg_service.conf`, then
/// `PGSYSCONFDIR/pg_service.conf` or `/etc/postgresql-common/pg_service.conf`.
fn service_entry(service: &str, env: &PgEnv) -> Result<BTreeMap<String, String>, String> {
    let mut files: Vec<PathBuf> = Vec::new();
    match env.var("PGSERVICEFILE") {
        Some(file) => files.push(PathBuf::from(file)),
        None => files.extend(env.home.as_ref().map(|home| home.join(".pg_service.conf"))),
    }
    files.push(
        env.var("PGSYSCONFDIR")
            .map_or_else(|| PathBuf::from("/etc/postgresql-common"), PathBuf::from)
            .join("pg_service.conf"),
    );
    for file in files.iter().filter(|file| file.is_file()) {
        let text = read_small(file)?;
        if let Some(entry) = parse_service_file(&text, service, file)? {
            return Ok(entry);
        }
    }
    Err(format!(
        "service {service:?} not found in {}",
        files
            .iter()
            .map(|file| file.display().to_string())
            .collect::<Vec<_>>()
            .join(" or ")
    ))
}

/// A service or password file is a few lines; anything past 1 MiB is not one.
fn read_small(path: &Path) -> Result<String, String> {
    use std::io::Read;
    let file = std::fs::File::open(path).map_err(|err| format!("{}: {err}", path.display()))?;
    if !file.metadata().is_ok_and(|meta| meta.is_file()) {
        return Err(format!("{}: not a regular file", path.display()));
    }
    let mut text = String::new();
    file.take(1 << 20)
        .read_to_string(&mut text)
        .map_err(|err| format!("{}: {err}", path.display()))?;
    Ok(text)
}

pub(crate) fn parse_service_file(
    text: &str,
    service: &str,
    path: &Path,
) -> Result<Option<BTreeMap<String, String>>, String> {
    let mut current: Option<&str> = None;
    let mut entry: Option<BTreeMap<String, String>> = None;
    for (number, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            if entry.is_some() {
                break;
            }
            current = Some(name.trim());
            if current == Some(service) {
                entry = Some(BTreeMap::new());
            }
            continue;
        }
        let (key, value) = line
            .split_once('=')
            .ok_or_else(|| format!("{}:{}: expected key=value", path.display(), number + 1))?;
        if current == Some(service)
            && let Some(entry) = entry.as_mut()
        {
            let key = key.trim();
            if !KEYWORDS.contains(&key) || key == "service" {
                return Err(format!(
                    "{}:{}: unknown connection option {key:?}",
                    path.display(),
                    number + 1
                ));
            }
            entry.insert(key.to_string(), value.trim().to_string());
        }
    }
    Ok(entry)
}

/// The password for the first host from a `host:port:database:user:password` file. An error
/// is a note (libpq warns and goes on without it).
fn password_file_entry(
    path: &Path,
    hosts: &[String],
    ports: &[u16],
    params: &BTreeMap<String, String>,
) -> Result<Option<String>, String> {
    use std::os::unix::fs::PermissionsExt;
    let meta = std::fs::metadata(path).map_err(|err| format!("{}: {err}", path.display()))?;
    if meta.permissions().mode() & 0o077 != 0 {
        return Err(format!(
            "password file {} has group or world access; permissions should be u=rw (0600) or \
             less: ignored",
            path.display()
        ));
    }
    let text = read_small(path)?;
    let host = hosts.first().map(String::as_str).unwrap_or("");
    let host = if host.starts_with('/') {
        "localhost"
    } else {
        host
    };
    let port = ports.first().copied().unwrap_or(5432).to_string();
    let database = params.get("dbname").map(String::as_str).unwrap_or("");
    let user = params.get("user").map(String::as_str).unwrap_or("");
    Ok(lookup_password(&text, host, &port, database, user))
}

/// libpq's `.pgpass` matching: fields separated by `:`, `\:` and `\\` escaped, `*` matches
/// anything, the first matching line wins.
pub(crate) fn lookup_password(
    text: &str,
    host: &str,
    port: &str,
    database: &str,
    user: &str,
) -> Option<String> {
    for line in text.lines() {
        if line.trim_start().starts_with('#') || line.trim().is_empty() {
            continue;
        }
        let fields = split_escaped(line);
        let [h, p, d, u, password] = fields.as_slice() else {
            continue;
        };
        let matches = |pattern: &str, value: &str| pattern == "*" || pattern == value;
        if matches(h, host) && matches(p, port) && matches(d, database) && matches(u, user) {
            return Some(password.clone());
        }
    }
    None
}

fn split_escaped(line: &str) -> Vec<String> {
    let mut fields = vec![String::new()];
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                if let (Some(next), Some(field)) = (chars.next(), fields.last_mut()) {
                    field.push(next);
                }
            }
            ':' if fields.len() < 5 => fields.push(String::new()),
            c => {
                if let Some(field) = fields.last_mut() {
                    field.push(c);
                }
            }
        }
    }
    fields
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> PgEnv {
        PgEnv::from_pairs(pairs.iter().copied(), None)
    }

    #[test]
    fn urls_and_keywords_parse() {
        let cases: &[(&str, &[(&str, &str)])] = &[
            (
                "postgres://probe@db.example:6432/fleet?sslmode=verify-full",
                &[
                    ("dbname", "fleet"),
                    ("host", "db.example"),
                    ("port", "6432"),
                    ("sslmode", "verify-full"),
                    ("user", "probe"),
                ],
            ),
            (
                "postgresql://u%40x:p%3Ass@[::1]:5433,b:5434/d%20b",
                &[
                    ("dbname", "d b"),
                    ("host", "::1,b"),
                    ("password", "p:ss"),
                    ("port", "5433,5434"),
                    ("user", "u@x"),
                ],
            ),
            (
                "postgres:///fleet?host=/run/pg&application_name=probe",
                &[
                    ("application_name", "probe"),
                    ("dbname", "fleet"),
                    ("host", "/run/pg"),
                ],
            ),
            (
                "host=db port=5432 dbname='my db' password='it\\'s'",
                &[
                    ("dbname", "my db"),
                    ("host", "db"),
                    ("password", "it's"),
                    ("port", "5432"),
                ],
            ),
            ("service=fleet", &[("service", "fleet")]),
        ];
        for (text, expected) in cases {
            let parsed = parse(text).unwrap_or_else(|e| panic!("{text}: {e}"));
            let expected: BTreeMap<String, String> = expected
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            assert_eq!(parsed, expected, "{text}");
        }
        for bad in [
            "postgres://h/db?bogus=1",
            "host=h dbname",
            "host='unterminated",
            "postgres://h/%zz",
        ] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn passwords_are_redacted() {
        let cases = [
            (
                "postgres://probe:s3cret@db:5432/fleet?sslmode=require",
                "postgres://probe:***@db:5432/fleet?sslmode=require",
            ),
            (
                "postgres://db/fleet?password=s3cret&sslmode=require",
                "postgres://db/fleet?password=***&sslmode=require",
            ),
            ("postgres://probe@db/fleet", "postgres://probe@db/fleet"),
            (
                "host=db password='s e c' dbname=fleet",
                "host=db password=*** dbname=fleet",
            ),
        ];
        for (text, expected) in cases {
            assert_eq!(redact(text), expected);
            assert!(!redact(text).contains("s3cret"));
        }
    }

    #[test]
    fn store_locations_are_told_apart() {
        for (text, postgres) in [
            ("postgres://db/fleet", true),
            ("POSTGRESQL://db/fleet", true),
            ("host=db dbname=fleet", true),
            ("service=fleet", true),
            ("/var/lib/probe/snapshots.db", false),
            ("snapshots.db", false),
            ("./a=b.db", false),
        ] {
            assert_eq!(is_postgres(text), postgres, "{text}");
        }
    }

    #[test]
    fn environment_fills_what_the_string_leaves_out() {
        let resolved = resolve(
            "postgres://db.example/fleet",
            &env(&[
                ("PGUSER", "runner"),
                ("PGPORT", "6432"),
                ("PGHOST", "ignored-host"),
                ("PGPASSWORD", "from-env"),
                ("PGSSLMODE", "verify-full"),
            ]),
        )
        .unwrap();
        assert_eq!(resolved.hosts, ["db.example"]);
        assert_eq!(resolved.ports, [6432]);
        assert_eq!(resolved.get("user"), Some("runner"));
        assert_eq!(resolved.get("password"), Some("from-env"));
        assert_eq!(resolved.password_source, PasswordSource::Environment);
        assert_eq!(resolved.sslmode, SslMode::VerifyFull);
        // Defaults: the user's name as database, prefer TLS, the Debian socket directory.
        let resolved = resolve("postgres://", &env(&[("USER", "ops")])).unwrap();
        assert_eq!(resolved.get("dbname"), Some("ops"));
        assert_eq!(resolved.sslmode, SslMode::Prefer);
        assert_eq!(resolved.hosts, ["/var/run/postgresql"]);
        assert_eq!(resolved.ports, [5432]);
        assert!(resolve("postgres://h/d?sslmode=maybe", &env(&[])).is_err());
    }

    #[test]
    fn service_file_and_password_file() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let services = dir.path().join("pg_service.conf");
        std::fs::write(
            &services,
            "# fleet store\n[other]\nhost=wrong\n\n[fleet]\nhost=db.internal\nport=6432\n\
             dbname=probe\nuser=auditor\nsslmode=require\n",
        )
        .unwrap();
        let pgpass = dir.path().join("pgpass");
        std::fs::write(
            &pgpass,
            "# comment\nother:*:*:*:nope\ndb.internal:6432:probe:auditor:pa\\:ss\n",
        )
        .unwrap();
        std::fs::set_permissions(&pgpass, std::fs::Permissions::from_mode(0o600)).unwrap();
        let environment = env(&[
            ("PGSERVICEFILE", services.to_str().unwrap()),
            ("PGPASSFILE", pgpass.to_str().unwrap()),
        ]);
        let resolved = resolve("service=fleet", &environment).unwrap();
        assert_eq!(resolved.hosts, ["db.internal"]);
        assert_eq!(resolved.ports, [6432]);
        assert_eq!(resolved.get("user"), Some("auditor"));
        assert_eq!(resolved.get("password"), Some("pa:ss"));
        assert_eq!(resolved.password_source, PasswordSource::PasswordFile);
        assert_eq!(resolved.sslmode, SslMode::Require);
        // The string wins over the service; PGSERVICE selects one too.
        let resolved = resolve(
            "postgres://auditor@db.internal:6432/probe?service=fleet&sslmode=disable",
            &environment,
        )
        .unwrap();
        assert_eq!(resolved.sslmode, SslMode::Disable);
        let mut with_service = environment.clone();
        with_service.vars.insert("PGSERVICE".into(), "fleet".into());
        assert_eq!(
            resolve("postgres://", &with_service).unwrap().hosts,
            ["db.internal"]
        );
        // A readable password file is ignored, with a note, as libpq does.
        std::fs::set_permissions(&pgpass, std::fs::Permissions::from_mode(0o644)).unwrap();
        let resolved = resolve("service=fleet", &environment).unwrap();
        assert_eq!(resolved.get("password"), None);
        assert!(
            resolved.notes[0].contains("group or world"),
            "{:?}",
            resolved.notes
        );
        let err = resolve("service=missing", &environment).unwrap_err();
        assert!(err.contains("service \"missing\" not found"), "{err}");
    }

    #[test]
    fn pgpass_matching() {
        let text = "db:5432:fleet:probe:one\n*:*:*:probe:two\nh\\:x:*:*:*:three\nshort:line\n";
        let cases = [
            (("db", "5432", "fleet", "probe"), Some("one")),
            (("db", "5433", "fleet", "probe"), Some("two")),
            (("other", "1", "x", "probe"), Some("two")),
            (("h:x", "1", "x", "someone"), Some("three")),
            (("db", "5432", "fleet", "nobody"), None),
        ];
        for ((host, port, database, user), expected) in cases {
            assert_eq!(
                lookup_password(text, host, port, database, user).as_deref(),
                expected,
                "{host} {port} {database} {user}"
            );
        }
    }
}
