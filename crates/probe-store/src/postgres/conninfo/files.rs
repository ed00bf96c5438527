//! The files libpq reads beside the string: the connection service file (`pg_service.conf`) and
//! the password file (`~/.pgpass`), each read small and bounded.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::{KEYWORDS, LocationError, PgEnv};

/// The `[service]` section of the service files: `PGSERVICEFILE` or `~/.pg_service.conf`, then
/// `PGSYSCONFDIR/pg_service.conf` or `/etc/postgresql-common/pg_service.conf`.
pub(super) fn service_entry(
    service: &str,
    env: &PgEnv,
) -> Result<BTreeMap<String, String>, LocationError> {
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
    Err(LocationError::Invalid(format!(
        "service {service:?} not found in {}",
        files
            .iter()
            .map(|file| file.display().to_string())
            .collect::<Vec<_>>()
            .join(" or ")
    )))
}

/// A service or password file is a few lines; anything past 1 MiB is not one.
fn read_small(path: &Path) -> Result<String, LocationError> {
    use std::io::Read;
    let file = std::fs::File::open(path).map_err(|err| LocationError::file(path, err))?;
    if !file.metadata().is_ok_and(|meta| meta.is_file()) {
        return Err(LocationError::Invalid(format!(
            "{}: not a regular file",
            path.display()
        )));
    }
    let mut text = String::new();
    file.take(1 << 20)
        .read_to_string(&mut text)
        .map_err(|err| LocationError::file(path, err))?;
    Ok(text)
}

pub(crate) fn parse_service_file(
    text: &str,
    service: &str,
    path: &Path,
) -> Result<Option<BTreeMap<String, String>>, LocationError> {
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
        let (key, value) = line.split_once('=').ok_or_else(|| {
            LocationError::Invalid(format!(
                "{}:{}: expected key=value",
                path.display(),
                number + 1
            ))
        })?;
        if current == Some(service)
            && let Some(entry) = entry.as_mut()
        {
            let key = key.trim();
            if !KEYWORDS.contains(&key) || key == "service" {
                return Err(LocationError::Invalid(format!(
                    "{}:{}: unknown connection option {key:?}",
                    path.display(),
                    number + 1
                )));
            }
            entry.insert(key.to_string(), value.trim().to_string());
        }
    }
    Ok(entry)
}

/// The password for the first host from a `host:port:database:user:password` file. An error
/// is a note (libpq warns and goes on without it).
pub(super) fn password_file_entry(
    path: &Path,
    hosts: &[String],
    ports: &[u16],
    params: &BTreeMap<String, String>,
) -> Result<Option<String>, LocationError> {
    use std::os::unix::fs::PermissionsExt;
    let meta = std::fs::metadata(path).map_err(|err| LocationError::file(path, err))?;
    if meta.permissions().mode() & 0o077 != 0 {
        return Err(LocationError::Invalid(format!(
            "password file {} has group or world access; permissions should be u=rw (0600) or \
             less: ignored",
            path.display()
        )));
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
