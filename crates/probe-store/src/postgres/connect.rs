//! Connections: tokio-postgres settings from libpq's keywords, the bounds each session sets,
//! one pooled connection, PostgreSQL's errors as one line, and text PostgreSQL can hold.

use std::time::Duration;

use deadpool_postgres::Pool;

use super::conninfo::{LocationError, Resolved, SslMode};
use crate::StoreError;

/// How long a statement waits for a free connection before the store counts as busy.
pub(super) const POOL_WAIT: Duration = Duration::from_secs(30);
/// Default `connect_timeout`: TCP connect, TLS and start-up together, as in libpq.
pub(super) const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// TCP keepalive: first probe after this much silence, then every `KEEPALIVE_INTERVAL`, given up
/// after `KEEPALIVE_RETRIES` unanswered probes (a peer that vanished, not one that stalls).
const KEEPALIVE_IDLE: Duration = Duration::from_secs(15);
const KEEPALIVE_INTERVAL: Duration = Duration::from_secs(5);
const KEEPALIVE_RETRIES: u32 = 3;

/// tokio-postgres settings from the resolved libpq keywords; `timeout` is TCP_USER_TIMEOUT.
pub(super) fn pg_config(
    resolved: &Resolved,
    timeout: Duration,
) -> Result<tokio_postgres::Config, LocationError> {
    let mut config = tokio_postgres::Config::new();
    for (host, port) in resolved.hosts.iter().zip(&resolved.ports) {
        config.host(host);
        config.port(*port);
    }
    if let Some(address) = resolved.get("hostaddr") {
        for address in address.split(',') {
            config.hostaddr(address.parse().map_err(|_| {
                LocationError::Invalid(format!("hostaddr {address:?} is not an IP address"))
            })?);
        }
    }
    if let Some(user) = resolved.get("user") {
        config.user(user);
    }
    if let Some(password) = resolved.get("password") {
        config.password(password);
    }
    if let Some(dbname) = resolved.get("dbname") {
        config.dbname(dbname);
    }
    config.application_name(
        resolved
            .get("application_name")
            .or(resolved.get("fallback_application_name"))
            .unwrap_or("probe"),
    );
    if let Some(options) = resolved.get("options") {
        config.options(options);
    }
    config
        .keepalives(true)
        .keepalives_idle(KEEPALIVE_IDLE)
        .keepalives_interval(KEEPALIVE_INTERVAL)
        .keepalives_retries(KEEPALIVE_RETRIES)
        .tcp_user_timeout(timeout);
    let timeout = match resolved.get("connect_timeout") {
        Some(seconds) => Duration::from_secs(
            seconds
                .parse::<u64>()
                .map_err(|_| {
                    LocationError::Invalid(format!(
                        "connect_timeout {seconds:?} is not a number of seconds"
                    ))
                })?
                .max(2),
        ),
        None => CONNECT_TIMEOUT,
    };
    config.connect_timeout(timeout);
    match resolved.get("target_session_attrs") {
        None | Some("any") => {}
        Some("read-write") => {
            config.target_session_attrs(tokio_postgres::config::TargetSessionAttrs::ReadWrite);
        }
        Some(other) => {
            return Err(LocationError::Invalid(format!(
                "target_session_attrs {other:?} is not supported"
            )));
        }
    }
    config.ssl_mode(match resolved.sslmode {
        SslMode::Disable => tokio_postgres::config::SslMode::Disable,
        SslMode::Allow | SslMode::Prefer => tokio_postgres::config::SslMode::Prefer,
        SslMode::Require | SslMode::VerifyCa | SslMode::VerifyFull => {
            tokio_postgres::config::SslMode::Require
        }
    });
    Ok(config)
}

/// What each new connection sets: `timeout` as the server's bound on each statement and on each
/// idle transaction (a client that stalled or vanished mid-transaction does not keep its locks),
/// unless the location's `options` set them. A `SET`, not a start-up option: PgBouncer refuses
/// start-up options it does not know.
pub(super) fn session_bounds(timeout: Duration, options: Option<&str>) -> String {
    let ms = timeout.as_millis();
    ["statement_timeout", "idle_in_transaction_session_timeout"]
        .into_iter()
        .filter(|name| !options.is_some_and(|o| o.contains(name)))
        .map(|name| format!("SET {name} = {ms};"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// One line for a PostgreSQL error: the server's message and SQLSTATE, or the client's cause.
pub(super) fn pg_error(store: &str, err: &tokio_postgres::Error) -> StoreError {
    let cause = match err.as_db_error() {
        Some(db) => format!("{} (SQLSTATE {})", db.message(), db.code().code()),
        None => {
            let mut cause = err.to_string();
            let mut source = std::error::Error::source(err);
            while let Some(inner) = source {
                let text = inner.to_string();
                if !cause.contains(&text) {
                    cause = format!("{cause}: {text}");
                }
                source = inner.source();
            }
            cause
        }
    };
    StoreError::Postgres {
        store: store.to_string(),
        cause,
    }
}

/// Whether a failed transaction may succeed when retried.
pub(super) fn retryable(err: &tokio_postgres::Error) -> bool {
    use tokio_postgres::error::SqlState;
    err.code().is_some_and(|code| {
        *code == SqlState::T_R_SERIALIZATION_FAILURE || *code == SqlState::T_R_DEADLOCK_DETECTED
    })
}

pub(super) async fn connection(
    pool: &Pool,
    store: &str,
) -> Result<deadpool_postgres::Object, StoreError> {
    pool.get().await.map_err(|err| match err {
        deadpool_postgres::PoolError::Timeout(
            deadpool_postgres::TimeoutType::Create | deadpool_postgres::TimeoutType::Recycle,
        ) => StoreError::TimedOut {
            store: store.into(),
            waited_s: pool.timeouts().create.unwrap_or(CONNECT_TIMEOUT).as_secs(),
        },
        deadpool_postgres::PoolError::Timeout(_) => StoreError::Busy {
            path: store.into(),
            waited_s: POOL_WAIT.as_secs(),
        },
        deadpool_postgres::PoolError::Backend(err) => pg_error(store, &err),
        other => StoreError::Postgres {
            store: store.to_string(),
            cause: other.to_string(),
        },
    })
}

/// PostgreSQL text cannot hold NUL; remote bytes might. They become U+FFFD.
pub(super) fn clean(text: &str) -> String {
    text.replace('\0', "\u{fffd}")
}

pub(super) fn clean_opt(text: Option<&str>) -> Option<String> {
    text.map(clean)
}

#[cfg(test)]
mod bounds_tests {
    use super::*;

    #[test]
    fn each_connection_sets_the_bounds_the_location_leaves_open() {
        let both = "SET statement_timeout = 3000; SET idle_in_transaction_session_timeout = 3000;";
        // (the location's options, what a new connection sets)
        let cases = [
            (None, both),
            (Some("-c search_path=x"), both),
            (
                Some("-c statement_timeout=0"),
                "SET idle_in_transaction_session_timeout = 3000;",
            ),
            (
                Some("-c statement_timeout=0 -c idle_in_transaction_session_timeout=0"),
                "",
            ),
        ];
        for (options, expected) in cases {
            assert_eq!(
                session_bounds(Duration::from_secs(3), options),
                expected,
                "{options:?}"
            );
        }
    }
}
