//! SSH transport (russh) that resolves targets like OpenSSH, and a local executor with the same
//! interface.
//!
//! * [`target`] and [`config`]: `user@host:port` parsing and `ssh_config` resolution, matching
//!   `ssh -G`.
//! * [`connect`] gives a [`Connection`]: an [`SshSession`] (one connection per host, host keys
//!   checked by our own known_hosts reader, agent and identity-file authentication, ProxyJump)
//!   or a [`LocalExec`] for `local`. Both implement [`Exec`].
//!
//! The library never prints: things the user should know (a host key was recorded, a config
//! value was reinterpreted) come back from [`Connection::notices`], and the passphrase prompt
//! is a callback the caller supplies.
//!
//! Deadlines: per hop, `ConnectTimeout` bounds TCP connect plus key exchange, and then
//! authentication separately (see [`ConnectOptions::connect_timeout`]). Measured costs (connect,
//! exec latency, concurrency, throughput, memory): `docs/BENCHMARKS.md`, section Transport,
//! from `cargo bench -p probe-transport`.

// Its readers (ssh_config, known_hosts, the HTTP answers of `forward`) take hostile bytes:
// no unwrap, expect, panic or unchecked index outside tests, in any module.
#![deny(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

pub mod config;
pub mod forward;
pub mod local_file;
pub mod target;

mod auth;
mod error;
mod host_key;
mod known_hosts;
mod local;
mod session;
mod settings;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

pub use auth::cached_prompt;
pub use error::{ErrorKind, FailureClass, KeyAt, TransportError, UnknownKey};
pub use local::LocalExec;
pub use session::{MAX_CHANNELS, SshSession, shell_quote, wrap_remote};

/// Asks for the passphrase of an encrypted key file; `None` when the user gives none.
///
/// Called synchronously from the connecting task (it may block on a terminal); time spent in it
/// does not count against the connect deadline. Wrap it with [`cached_prompt`] to ask once per
/// key for a whole run rather than once per connection.
pub type PassphrasePrompt = Arc<dyn Fn(&Path) -> Option<String> + Send + Sync>;

/// One command to run.
#[derive(Debug, Clone)]
pub struct ExecRequest {
    /// Shell command line (run by `sh -c` on the far side).
    pub command: String,
    /// Bytes fed to the command's stdin, then EOF. `None`: EOF at once. Shared, so the
    /// channel's writer task holds the one copy the caller made.
    pub stdin: Option<std::sync::Arc<[u8]>>,
    /// Deadline for the whole command; the command is killed at it.
    pub timeout: Duration,
    /// Bytes of stdout kept; the rest is read and dropped.
    pub stdout_cap: usize,
    /// Bytes of stderr kept; the rest is read and dropped.
    pub stderr_cap: usize,
}

impl ExecRequest {
    /// 60 s deadline, 16 MiB of stdout, 1 MiB of stderr.
    pub fn new(command: impl Into<String>) -> Self {
        ExecRequest {
            command: command.into(),
            stdin: None,
            timeout: Duration::from_secs(60),
            stdout_cap: 16 << 20,
            stderr_cap: 1 << 20,
        }
    }

    pub fn with_stdin(mut self, stdin: impl Into<Vec<u8>>) -> Self {
        self.stdin = Some(stdin.into().into());
        self
    }

    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    pub fn with_caps(mut self, stdout_cap: usize, stderr_cap: usize) -> Self {
        self.stdout_cap = stdout_cap;
        self.stderr_cap = stderr_cap;
        self
    }
}

/// What a command produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExecOutput {
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    pub exit_status: u32,
    pub stdout_truncated: bool,
    pub stderr_truncated: bool,
    pub elapsed: Duration,
}

/// Something that runs commands on a host.
pub trait Exec: Send + Sync {
    fn exec(
        &self,
        req: &ExecRequest,
    ) -> impl std::future::Future<Output = Result<ExecOutput, TransportError>> + Send;
    /// Name for messages.
    fn host(&self) -> &str;
}

impl Exec for SshSession {
    fn exec(
        &self,
        req: &ExecRequest,
    ) -> impl std::future::Future<Output = Result<ExecOutput, TransportError>> + Send {
        SshSession::exec(self, req)
    }
    fn host(&self) -> &str {
        SshSession::host(self)
    }
}

impl Exec for LocalExec {
    fn exec(
        &self,
        req: &ExecRequest,
    ) -> impl std::future::Future<Output = Result<ExecOutput, TransportError>> + Send {
        LocalExec::exec(self, req)
    }
    fn host(&self) -> &str {
        LocalExec::host(self)
    }
}

/// How to connect.
#[derive(Clone, Default)]
pub struct ConnectOptions {
    /// Client config file (`ssh -F`); `None`: `~/.ssh/config` and `/etc/ssh/ssh_config`.
    pub config_file: Option<PathBuf>,
    /// Record unknown host keys (`--accept-new`), as `StrictHostKeyChecking accept-new`.
    pub accept_new: bool,
    /// Overrides `ConnectTimeout` (default 10 s). Per hop (each jump host and the target), it
    /// bounds the TCP connect plus the SSH key exchange, and then separately the authentication
    /// (time at the passphrase prompt not counted), so a hop gives up after at most twice this
    /// long even when the server stalls after its banner or in the middle of authentication.
    pub connect_timeout: Option<Duration>,
    /// Use only this known_hosts file (read and write), instead of the configured ones.
    pub known_hosts_file: Option<PathBuf>,
    /// Never prompt (`BatchMode yes`).
    pub batch_mode: bool,
    /// Asks for a key's passphrase (on a TTY); `None`: encrypted keys are skipped with a reason.
    ///
    /// Invoked at most once per key file per [`connect`] call, jump hosts included: the answer
    /// (right, wrong or refused) is kept for that connection, and a wrong passphrase skips the
    /// key with "wrong passphrase" instead of asking again. Never invoked in `batch_mode`. To
    /// ask once per key across many hosts, pass one [`cached_prompt`] to every connect.
    pub passphrase_prompt: Option<PassphrasePrompt>,
}

impl std::fmt::Debug for ConnectOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConnectOptions")
            .field("config_file", &self.config_file)
            .field("accept_new", &self.accept_new)
            .field("connect_timeout", &self.connect_timeout)
            .field("known_hosts_file", &self.known_hosts_file)
            .field("batch_mode", &self.batch_mode)
            .field("passphrase_prompt", &self.passphrase_prompt.is_some())
            .finish()
    }
}

/// An open connection: SSH or this machine.
#[derive(Debug)]
pub enum Connection {
    Ssh(SshSession),
    Local(LocalExec),
}

impl Connection {
    /// Messages for the user produced while connecting (host keys recorded, settings
    /// reinterpreted). Never empty strings.
    pub fn notices(&self) -> Vec<String> {
        match self {
            Connection::Ssh(s) => s.notices.clone(),
            Connection::Local(_) => Vec::new(),
        }
    }

    /// Closes the connection (and its jump hosts), bounded in time.
    pub async fn close(self) {
        if let Connection::Ssh(s) = self {
            s.close().await;
        }
    }

    /// `user@host:port` (plus ` via ...` for jump hosts), or `local`.
    pub fn address(&self) -> String {
        match self {
            Connection::Ssh(s) => s.address(),
            Connection::Local(_) => "local".to_string(),
        }
    }
}

impl Exec for Connection {
    async fn exec(&self, req: &ExecRequest) -> Result<ExecOutput, TransportError> {
        match self {
            Connection::Ssh(s) => s.exec(req).await,
            Connection::Local(l) => l.exec(req).await,
        }
    }
    fn host(&self) -> &str {
        match self {
            Connection::Ssh(s) => s.host(),
            Connection::Local(l) => l.host(),
        }
    }
}

/// Connects to `target` (`host`, `user@host:port`, an ssh_config alias), or returns the local
/// executor for `local`.
///
/// ```
/// use std::time::Duration;
///
/// use probe_transport::{ConnectOptions, Exec, ExecRequest, connect};
///
/// let runtime = tokio::runtime::Runtime::new().unwrap();
/// let output = runtime.block_on(async {
///     let connection = connect("local", &ConnectOptions::default()).await?;
///     let request = ExecRequest {
///         command: "echo hello".into(),
///         stdin: None,
///         timeout: Duration::from_secs(10),
///         stdout_cap: 1024,
///         stderr_cap: 1024,
///     };
///     connection.exec(&request).await
/// });
/// let output = output.unwrap();
/// assert_eq!(output.stdout, b"hello\n");
/// assert_eq!(output.exit_status, 0);
/// ```
pub async fn connect(target: &str, opts: &ConnectOptions) -> Result<Connection, TransportError> {
    if target == "local" {
        return Ok(Connection::Local(LocalExec::new()));
    }
    let ctx = session::ConnectCtx {
        opts,
        notices: Arc::new(Mutex::new(Vec::new())),
        cache: Default::default(),
    };
    let mut s = session::connect_ssh(target, &ctx).await?;
    s.notices = ctx.notices.lock().map(|n| n.clone()).unwrap_or_default();
    Ok(Connection::Ssh(s))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn is_send<T: Send>(_: &T) {}

    #[test]
    fn futures_are_send_for_fleet_fan_out() {
        let opts = ConnectOptions::default();
        let connecting = connect("local", &opts);
        is_send(&connecting);
        let req = ExecRequest::new("true");
        let local = Connection::Local(LocalExec::new());
        is_send(&Exec::exec(&local, &req));
    }

    #[test]
    fn request_defaults_and_setters() {
        let r = ExecRequest::new("x")
            .with_stdin("in")
            .with_timeout(Duration::from_secs(5))
            .with_caps(10, 20);
        assert_eq!(r.stdin.as_deref(), Some(&b"in"[..]));
        assert_eq!(
            (r.timeout, r.stdout_cap, r.stderr_cap),
            (Duration::from_secs(5), 10, 20)
        );
        let d = ExecRequest::new("x");
        assert_eq!(
            (d.timeout, d.stdout_cap, d.stderr_cap),
            (Duration::from_secs(60), 16 << 20, 1 << 20)
        );
    }

    #[test]
    fn remote_wrapper_quotes_and_bounds() {
        let w = wrap_remote("echo 'a'", Duration::from_millis(1500));
        assert_eq!(
            w,
            r#"exec sh -c 'if command -v timeout >/dev/null 2>&1; then exec timeout -s KILL 3 sh -c "$0"; else exec sh -c "$0"; fi' 'echo '\''a'\'''"#
        );
        let w = wrap_remote("sh -s", Duration::from_secs(118));
        assert_eq!(
            w,
            r#"exec sh -c 'if command -v timeout >/dev/null 2>&1; then exec timeout -s KILL 119 sh -s; else exec sh -s; fi'"#
        );
        let w = wrap_remote("sh -s; id", Duration::from_secs(1));
        assert!(w.ends_with(r#" 'sh -s; id'"#), "{w}");
    }
}
