//! Why a store location or its connection settings cannot be used: a file they name that
//! cannot be read, TLS that cannot be set up, or a setting that is wrong (said in one line).

use std::path::PathBuf;

/// A store location's error; the store reports it as [`crate::StoreError::BadLocation`].
#[derive(Debug, thiserror::Error)]
pub enum LocationError {
    /// A service, password or root certificate file that could not be read.
    #[error("{}: {source}", path.display())]
    File {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// TLS could not be set up as the settings ask (`TLS`, `sslrootcert PATH`).
    #[error("{what}: {source}")]
    Tls {
        what: String,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// A setting that cannot be used, in one line.
    #[error("{0}")]
    Invalid(String),
}

impl LocationError {
    pub(crate) fn file(path: &std::path::Path, source: std::io::Error) -> LocationError {
        LocationError::File {
            path: path.to_path_buf(),
            source,
        }
    }

    pub(crate) fn tls(
        what: impl Into<String>,
        source: impl std::error::Error + Send + Sync + 'static,
    ) -> LocationError {
        LocationError::Tls {
            what: what.into(),
            source: Box::new(source),
        }
    }
}

impl From<String> for LocationError {
    fn from(what: String) -> LocationError {
        LocationError::Invalid(what)
    }
}

impl From<&str> for LocationError {
    fn from(what: &str) -> LocationError {
        LocationError::Invalid(what.to_string())
    }
}
