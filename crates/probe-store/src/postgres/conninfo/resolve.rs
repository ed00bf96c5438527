//! A connection resolved: the string, then the service, then the `PG*` variables, then
//! defaults, and the password from wherever libpq would take it.

use std::collections::BTreeMap;
use std::path::PathBuf;

use super::files::{password_file_entry, service_entry};
use super::parse::parse;
use super::{LocationError, PasswordSource, PgEnv, Resolved, SslMode};

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

/// Resolves a connection string the way libpq does (see the module comment).
pub fn resolve(text: &str, env: &PgEnv) -> Result<Resolved, LocationError> {
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
                Err(note) => notes.push(note.to_string()),
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
fn ports_for(
    hosts: &[String],
    params: &BTreeMap<String, String>,
) -> Result<Vec<u16>, LocationError> {
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
            port.parse::<u16>().map_err(|_| {
                LocationError::Invalid(format!("port {port:?} is not a port number"))
            })?,
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
