//! The one error type of the command line: each variant knows its exit code and its hint.

use probe_model::exit_codes;

/// An error that ends a command. `Display` is one line; [`ExpectedError::hint`] may add one.
#[derive(Debug, thiserror::Error)]
pub enum ExpectedError {
    /// Bad arguments or flags that clap could not catch.
    #[error("{0}")]
    Usage(String),
    /// A configuration or inventory file is wrong (`file:line: cause`).
    #[error("{0}")]
    Config(String),
    /// Reading or writing a local file failed; the I/O or parse error is kept as the source.
    #[error("{path}: {source}")]
    File {
        path: String,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The snapshot store.
    #[error("{0}")]
    Store(#[from] probe_store::StoreError),
    /// A host could not be collected.
    #[error("{host}: {cause}")]
    Host {
        host: String,
        cause: String,
        class: HostFailure,
    },
    /// Something else.
    #[error("{0}")]
    Other(String),
}

/// How a host failed, for summaries and exit codes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HostFailure {
    Unreachable,
    AuthFailed,
    HostKeyRefused,
    TimedOut,
    Config,
    Error,
}

impl HostFailure {
    pub fn exit_code(self) -> u8 {
        match self {
            HostFailure::HostKeyRefused => exit_codes::HOST_KEY_REFUSED,
            _ => exit_codes::HOSTS_FAILED,
        }
    }
}

impl ExpectedError {
    pub fn exit_code(&self) -> u8 {
        match self {
            ExpectedError::Host { class, .. } => class.exit_code(),
            ExpectedError::Usage(_)
            | ExpectedError::Config(_)
            | ExpectedError::File { .. }
            | ExpectedError::Store(_)
            | ExpectedError::Other(_) => exit_codes::ERROR,
        }
    }

    /// A second line telling the user what to do, when there is something to say.
    pub fn hint(&self) -> Option<String> {
        match self {
            ExpectedError::Store(probe_store::StoreError::Busy { .. }) => {
                Some("another probe audit is writing this store; retry later".into())
            }
            ExpectedError::Host {
                class: HostFailure::AuthFailed,
                ..
            } => Some("check `probe resolve HOST` for the user and identity files used".into()),
            ExpectedError::Host {
                class: HostFailure::Config,
                ..
            } => Some("unknown alias? `probe resolve HOST` shows what probe resolves".into()),
            ExpectedError::Host {
                host,
                class: HostFailure::Unreachable,
                ..
            } => Some(format!(
                "not an alias in your ssh_config? `probe resolve {host}` shows the address used"
            )),
            ExpectedError::Host {
                class: HostFailure::HostKeyRefused,
                ..
            } => Some(
                "a new host can be trusted with --accept-new; a changed key is never accepted"
                    .into(),
            ),
            _ => None,
        }
    }

    pub fn file(
        path: impl AsRef<std::path::Path>,
        source: impl Into<Box<dyn std::error::Error + Send + Sync>>,
    ) -> Self {
        ExpectedError::File {
            path: path.as_ref().display().to_string(),
            source: source.into(),
        }
    }
}

pub type Result<T, E = ExpectedError> = std::result::Result<T, E>;
