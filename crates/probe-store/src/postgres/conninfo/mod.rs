//! libpq's connection conventions, which tokio-postgres leaves to the application: a URL or a
//! `key=value` string, then the service file (`service=` / `PGSERVICE`), then the `PG*`
//! environment variables, then defaults; the password from the string, the service, `PGPASSWORD`
//! or the password file (`PGPASSFILE`, `~/.pgpass`, ignored when group- or world-readable, as
//! libpq does). The password never appears in what this module prints: [`redact`].

use std::collections::BTreeMap;
use std::path::PathBuf;

mod error;
mod files;
mod parse;
mod resolve;

pub use error::LocationError;
pub use parse::{is_postgres, redact};
pub use resolve::resolve;

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
    fn parse(text: &str) -> Result<SslMode, LocationError> {
        Ok(match text {
            "disable" => SslMode::Disable,
            "allow" => SslMode::Allow,
            "prefer" => SslMode::Prefer,
            "require" => SslMode::Require,
            "verify-ca" => SslMode::VerifyCa,
            "verify-full" => SslMode::VerifyFull,
            other => {
                return Err(LocationError::Invalid(format!(
                    "sslmode must be disable, allow, prefer, require, verify-ca or verify-full, \
                     not {other:?}"
                )));
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

#[cfg(test)]
mod tests {
    use super::files::lookup_password;
    use super::parse::parse;
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
        assert!(
            err.to_string().contains("service \"missing\" not found"),
            "{err}"
        );
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
