//! One error type for every transport failure: one line, `HOST: cause`.

use std::path::PathBuf;
use std::time::Duration;

/// Coarse class of a failure, for fleet summaries and exit codes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FailureClass {
    Unreachable,
    AuthFailed,
    HostKeyRefused,
    TimedOut,
    Config,
    Other,
}

/// A transport failure on one host. `Display` is a single line: `HOST: cause`.
#[derive(Debug, thiserror::Error)]
#[error("{host}: {kind}")]
pub struct TransportError {
    /// The host as named in messages (`user@host` for authentication failures).
    pub host: String,
    pub kind: ErrorKind,
    /// What the command had written to stdout when it was given up at its deadline
    /// ([`ErrorKind::ExecTimeout`]; empty otherwise), within the request's cap, so a caller keeps
    /// what it received.
    pub partial_stdout: Vec<u8>,
}

impl TransportError {
    pub fn new(host: impl Into<String>, kind: ErrorKind) -> Self {
        TransportError {
            host: host.into(),
            kind,
            partial_stdout: Vec::new(),
        }
    }

    /// The same error, keeping the stdout received before it.
    pub fn with_partial_stdout(mut self, stdout: Vec<u8>) -> Self {
        self.partial_stdout = stdout;
        self
    }

    pub fn class(&self) -> FailureClass {
        self.kind.class()
    }
}

/// A server key that is not in any known_hosts file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownKey {
    /// Name looked up (`[host]:port` or the HostKeyAlias).
    pub name: String,
    pub key_type: String,
    /// `SHA256:...`
    pub fingerprint: String,
    /// The known_hosts files consulted, for the message.
    pub files: String,
}

/// A server key refused because of a known_hosts line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyAt {
    pub name: String,
    pub key_type: String,
    pub fingerprint: String,
    pub file: PathBuf,
    pub line: usize,
}

/// What went wrong. Every variant renders on one line.
#[derive(Debug, thiserror::Error)]
pub enum ErrorKind {
    #[error("cannot resolve host name {name}: {cause}")]
    Dns { name: String, cause: String },
    #[error("connection refused on {addr}")]
    Refused { addr: String },
    #[error("{addr} unreachable: {cause}")]
    Unreachable { addr: String, cause: String },
    #[error("connection timed out after {}s ({phase})", secs(*.after))]
    ConnectTimeout {
        after: Duration,
        phase: &'static str,
    },
    #[error("connection reset during {phase}: {cause}")]
    Reset { phase: &'static str, cause: String },
    #[error("ssh handshake failed: {0}")]
    Handshake(String),
    #[error(
        "host key not known: {} {} for {} is not in {}; to trust it, rerun with --accept-new \
         (or set StrictHostKeyChecking accept-new)",
        .0.key_type, .0.fingerprint, .0.name, .0.files
    )]
    UnknownHostKey(Box<UnknownKey>),
    #[error(
        "HOST KEY CHANGED for {}: server offered {} {}, but {}:{} has a different key (possible \
         man-in-the-middle attack); refusing. Remove that line only if you know why the key changed",
        .0.name, .0.key_type, .0.fingerprint, .0.file.display(), .0.line
    )]
    HostKeyChanged(Box<KeyAt>),
    #[error(
        "REVOKED HOST KEY for {}: {} {} is marked @revoked in {}:{}; refusing",
        .0.name, .0.key_type, .0.fingerprint, .0.file.display(), .0.line
    )]
    HostKeyRevoked(Box<KeyAt>),
    #[error("host certificate rejected for {name}: {reason}")]
    HostCertificate { name: String, reason: String },
    #[error("cannot record host key in {file}: {cause}")]
    KnownHostsWrite { file: PathBuf, cause: String },
    #[error("authentication failed: tried {}", if .tried.is_empty() { "nothing (no agent, no identity files)".to_string() } else { .tried.join(", ") })]
    AuthFailed { tried: Vec<String> },
    /// The connection ended during authentication before the server refused any key.
    #[error("authentication did not finish: {cause}; no key was refused (tried {})", if .tried.is_empty() { "nothing yet".to_string() } else { .tried.join(", ") })]
    AuthInterrupted { tried: Vec<String>, cause: String },
    #[error("configuration: {0}")]
    Config(String),
    #[error("via jump host {jump}: {inner}")]
    Jump { jump: String, inner: Box<ErrorKind> },
    #[error("command timed out after {}s", secs(*.after))]
    ExecTimeout { after: Duration },
    #[error("command ended without an exit status ({0})")]
    NoExitStatus(String),
    #[error("command killed by signal {0}")]
    Signal(String),
    #[error("cannot open channel: {0}")]
    Channel(String),
    /// The server refused to open a session channel (its `MaxSessions`, or it allows none):
    /// after the retries, with no other channel of ours open to wait for. The command never ran.
    #[error("cannot open channel: {0}")]
    ChannelRefused(String),
    #[error("{0}")]
    Ssh(String),
    #[error("local command: {0}")]
    Local(String),
}

fn secs(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s.fract() == 0.0 {
        format!("{}", s as u64)
    } else {
        format!("{s:.1}")
    }
}

impl ErrorKind {
    pub fn class(&self) -> FailureClass {
        use ErrorKind::*;
        match self {
            Dns { .. } | Refused { .. } | Unreachable { .. } | Reset { .. } => {
                FailureClass::Unreachable
            }
            ConnectTimeout { .. } | ExecTimeout { .. } => FailureClass::TimedOut,
            UnknownHostKey(_) | HostKeyChanged(_) | HostKeyRevoked(_) | HostCertificate { .. } => {
                FailureClass::HostKeyRefused
            }
            AuthFailed { .. } => FailureClass::AuthFailed,
            Config(_) | KnownHostsWrite { .. } => FailureClass::Config,
            Jump { inner, .. } => inner.class(),
            AuthInterrupted { .. }
            | Handshake(_)
            | NoExitStatus(_)
            | Signal(_)
            | Channel(_)
            | ChannelRefused(_)
            | Ssh(_)
            | Local(_) => FailureClass::Other,
        }
    }
}

/// Strips control characters (terminal escapes) from text that came from the remote side or
/// from files, so an error line stays one harmless line.
pub(crate) fn clean(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect::<String>()
        .trim()
        .to_string()
}
