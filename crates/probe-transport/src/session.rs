//! SSH connections: TCP (or a jump host's direct-tcpip channel), handshake with our host key
//! verification, authentication, and the [`SshSession`] that runs commands on it.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use russh::Disconnect;
use russh::client::{self, Handle};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::Semaphore;

use crate::auth::{self, AuthInput, KeyCache};
use crate::error::{ErrorKind, TransportError, clean};
use crate::host_key::{Client, Lost, Verifier};
use crate::settings::{HostSettings, Strict};
use crate::{ConnectOptions, ExecOutput, ExecRequest};

mod drain;

/// Most channels open at once on one connection: sshd's default MaxSessions (10). A server
/// that allows fewer refuses a channel, and the limit then drops (see [`SshSession`]).
pub const MAX_CHANNELS: usize = 10;
const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
const DEFAULT_KEEPALIVE: Duration = Duration::from_secs(15);
const RETRIES: u32 = 3;
/// Handshake attempts when the server resets the connection (MaxStartups).
const HANDSHAKE_TRIES: u32 = 6;

/// Backoff with random jitter, so clients that were reset together do not retry together.
fn backoff(attempt: u32, base_ms: u64) -> Duration {
    use std::hash::{BuildHasher as _, Hasher as _};
    let jitter = std::collections::hash_map::RandomState::new()
        .build_hasher()
        .finish()
        % (base_ms * 2 + 1);
    Duration::from_millis((base_ms << attempt.min(5)) + jitter)
}

/// Everything one `connect` call shares between its hops.
pub(crate) struct ConnectCtx<'a> {
    pub opts: &'a ConnectOptions,
    pub notices: Arc<Mutex<Vec<String>>>,
    pub cache: KeyCache,
}

impl ConnectCtx<'_> {
    fn notice(&self, n: String) {
        if let Ok(mut v) = self.notices.lock()
            && !v.contains(&n)
        {
            v.push(n);
        }
    }
}

/// Applies the connect options on top of the resolved settings.
pub(crate) fn apply_options(s: &mut HostSettings, ctx: &ConnectCtx<'_>) {
    let opts = ctx.opts;
    if let Some(f) = &opts.known_hosts_file {
        s.user_known_hosts = vec![f.clone()];
        s.global_known_hosts.clear();
    }
    if opts.connect_timeout.is_some() {
        s.connect_timeout = opts.connect_timeout;
    }
    if opts.batch_mode {
        s.batch_mode = true;
    }
    if s.strict == Strict::No {
        ctx.notice(format!(
            "{}: StrictHostKeyChecking no treated as accept-new (unknown keys are recorded, changed keys refused)",
            s.alias
        ));
    }
    if opts.accept_new && s.strict == Strict::Yes {
        s.strict = Strict::AcceptNew;
    }
}

fn client_for(
    s: &HostSettings,
    ctx: &ConnectCtx<'_>,
) -> Result<(Arc<client::Config>, Client), ErrorKind> {
    let verifier = Verifier::for_host(s, ctx.notices.clone());
    let (keys, certs) = verifier.preferences(s.host_key_algorithms.as_deref())?;
    let preferred = russh::Preferred {
        key: keys.into(),
        host_key_certificates: certs.into(),
        ..Default::default()
    };
    let keepalive = s
        .server_alive_interval
        .filter(|d| !d.is_zero())
        .unwrap_or(DEFAULT_KEEPALIVE);
    let config = client::Config {
        keepalive_interval: Some(keepalive),
        keepalive_max: s.server_alive_count_max.unwrap_or(3).max(1),
        inactivity_timeout: None,
        nodelay: true,
        preferred,
        ..Default::default()
    };
    Ok((Arc::new(config), Client::new(verifier)))
}

/// Opens a TCP connection, mapping failures to distinct messages.
async fn tcp(s: &HostSettings) -> Result<tokio::net::TcpStream, ErrorKind> {
    let addrs: Vec<std::net::SocketAddr> =
        match tokio::net::lookup_host((s.hostname.as_str(), s.port)).await {
            Ok(a) => a.collect(),
            Err(e) => {
                return Err(ErrorKind::Dns {
                    name: s.hostname.clone(),
                    cause: dns_cause(&e),
                });
            }
        };
    let mut last: Option<(&std::net::SocketAddr, std::io::Error)> = None;
    for addr in &addrs {
        match tokio::net::TcpStream::connect(addr).await {
            Ok(sock) => {
                let _ = sock.set_nodelay(true);
                return Ok(sock);
            }
            Err(e) => last = Some((addr, e)),
        }
    }
    let Some((addr, e)) = last else {
        return Err(ErrorKind::Dns {
            name: s.hostname.clone(),
            cause: "no addresses".into(),
        });
    };
    Err(match e.kind() {
        std::io::ErrorKind::ConnectionRefused => ErrorKind::Refused {
            addr: addr.to_string(),
        },
        _ => ErrorKind::Unreachable {
            addr: addr.to_string(),
            cause: clean(&e.to_string()),
        },
    })
}

fn dns_cause(e: &std::io::Error) -> String {
    let msg = e.to_string();
    if msg.contains("failed to lookup address information") {
        msg.split(": ").last().unwrap_or("not found").to_string()
    } else {
        clean(&msg)
    }
}

fn is_reset(e: &russh::Error) -> bool {
    match e {
        russh::Error::IO(io) => matches!(
            io.kind(),
            std::io::ErrorKind::ConnectionReset
                | std::io::ErrorKind::BrokenPipe
                | std::io::ErrorKind::UnexpectedEof
        ),
        russh::Error::HUP | russh::Error::Disconnect => true,
        _ => false,
    }
}

/// Where the bytes of one hop come from.
#[derive(Clone, Copy)]
enum Via<'a> {
    Direct,
    Jump(&'a Handle<Client>),
}

/// Connects and authenticates one hop, retrying resets during the handshake.
async fn connect_hop(
    s: &HostSettings,
    via: Via<'_>,
    ctx: &ConnectCtx<'_>,
) -> Result<Handle<Client>, TransportError> {
    let limit = s
        .connect_timeout
        .filter(|d| !d.is_zero())
        .unwrap_or(DEFAULT_CONNECT_TIMEOUT);
    let err = |kind| TransportError::new(s.alias.clone(), kind);
    let mut attempt = 0u32;
    let give_up = Instant::now() + limit;
    let (mut handle, lost) = loop {
        attempt += 1;
        match start_session(s, via, ctx, limit).await {
            Ok(started) => break started,
            Err((kind, retry))
                if retry && attempt < HANDSHAKE_TRIES && Instant::now() < give_up =>
            {
                tracing::debug!("{}: {kind}; retrying", s.alias);
                tokio::time::sleep(backoff(attempt, 50)).await;
            }
            Err((kind, _)) => return Err(err(kind)),
        }
    };
    let input = AuthInput {
        prompt: ctx.opts.passphrase_prompt.as_ref(),
        batch: s.batch_mode,
        cache: &ctx.cache,
    };
    // Authentication has its own deadline of the same length (time at the passphrase prompt
    // not counted): a server that finished the key exchange and then stalls (a hung
    // AuthorizedKeysCommand, a wedged PAM module) must not hang us.
    let authenticated = within_auth_deadline(
        limit,
        &ctx.cache,
        auth::authenticate(&mut handle, s, &input, &lost),
    )
    .await;
    match authenticated {
        Some(Ok(())) => Ok(handle),
        Some(Err(e)) => Err(e),
        None => {
            let _ = tokio::time::timeout(
                Duration::from_millis(500),
                handle.disconnect(Disconnect::ByApplication, "", "en"),
            )
            .await;
            Err(err(ErrorKind::ConnectTimeout {
                after: limit,
                phase: "SSH authentication",
            }))
        }
    }
}

/// One attempt at the transport (TCP or a `direct-tcpip` channel of the jump host) and the
/// SSH handshake within `limit`, with where the handler will say why the connection ended. The
/// error says whether a retry may help (a reset).
async fn start_session(
    s: &HostSettings,
    via: Via<'_>,
    ctx: &ConnectCtx<'_>,
    limit: Duration,
) -> Result<(Handle<Client>, Lost), (ErrorKind, bool)> {
    let (config, client) = client_for(s, ctx).map_err(|k| (k, false))?;
    let verdict = client.verdict.clone();
    let lost = client.lost.clone();
    let started = tokio::time::timeout(limit, async {
        match via {
            Via::Direct => {
                let sock = tcp(s).await?;
                handshake(config, sock, client).await
            }
            Via::Jump(j) => {
                let ch = j
                    .channel_open_direct_tcpip(
                        s.hostname.clone(),
                        u32::from(s.port),
                        "127.0.0.1",
                        0,
                    )
                    .await
                    .map_err(|e| {
                        ErrorKind::Channel(format!(
                            "direct-tcpip to {}:{}: {e}",
                            s.hostname, s.port
                        ))
                    })?;
                handshake(config, ch.into_stream(), client).await
            }
        }
    })
    .await;
    match started {
        Err(_) => Err((
            ErrorKind::ConnectTimeout {
                after: limit,
                phase: "TCP connect and SSH handshake",
            },
            false,
        )),
        Ok(Ok(h)) => Ok((h, lost)),
        Ok(Err(HandshakeError::Kind(k))) => Err((k, false)),
        Ok(Err(HandshakeError::Ssh(e))) => {
            let refused = verdict.lock().ok().and_then(|mut v| v.take());
            match refused {
                Some(k) => Err((k, false)),
                None if is_reset(&e) => Err((
                    ErrorKind::Reset {
                        phase: "SSH handshake",
                        cause: clean(&e.to_string()),
                    },
                    true,
                )),
                None => Err((ErrorKind::Handshake(clean(&e.to_string())), false)),
            }
        }
    }
}

/// Runs `fut` for at most `limit`, not counting the time spent at the passphrase prompt (which
/// blocks inside `fut`; the deadline is pushed back by that much when it fires).
async fn within_auth_deadline<F: std::future::Future>(
    limit: Duration,
    cache: &KeyCache,
    fut: F,
) -> Option<F::Output> {
    let start = tokio::time::Instant::now();
    let waited_before = cache.prompt_wait();
    let mut deadline = start + limit;
    let mut fut = std::pin::pin!(fut);
    loop {
        tokio::select! {
            biased;
            out = &mut fut => return Some(out),
            () = tokio::time::sleep_until(deadline) => {
                let extended = start + limit + cache.prompt_wait().saturating_sub(waited_before);
                if extended <= tokio::time::Instant::now() {
                    return None;
                }
                deadline = extended;
            }
        }
    }
}

enum HandshakeError {
    Kind(ErrorKind),
    Ssh(russh::Error),
}

impl From<ErrorKind> for HandshakeError {
    fn from(k: ErrorKind) -> Self {
        HandshakeError::Kind(k)
    }
}

async fn handshake<S>(
    config: Arc<client::Config>,
    stream: S,
    client: Client,
) -> Result<Handle<Client>, HandshakeError>
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    client::connect_stream(config, stream, client)
        .await
        .map_err(HandshakeError::Ssh)
}

/// Most hops a route may have, jump hosts' own `ProxyJump`s included.
const MAX_HOPS: usize = 16;

/// A jump host to go through: the hop as written in `ProxyJump`, and its settings.
struct Hop {
    spec: String,
    settings: HostSettings,
}

/// The jump hosts in connection order for a host whose `ProxyJump` is `jumps`, as OpenSSH
/// builds them: `ProxyJump a,b,c` runs `ssh -J a,b -W host:port c`, so `c` is reached through
/// `a,b` and its own `ProxyJump` is ignored (the `-J` wins), and so on down to the first hop
/// `a`, which is connected as a plain `ssh a` whose own `ProxyJump` applies, recursively.
/// `stack` holds the hosts whose route is being built, to refuse a loop. Errors name the hop
/// they belong to, if any.
fn plan_route(
    jumps: &[String],
    ctx: &ConnectCtx<'_>,
    warnings: &mut Vec<String>,
    stack: &mut Vec<String>,
    out: &mut Vec<Hop>,
) -> Result<(), (Option<String>, ErrorKind)> {
    for (i, hop) in jumps.iter().enumerate() {
        let mut hs = crate::settings::resolve(hop, ctx.opts.config_file.as_ref(), warnings)
            .map_err(|e| (Some(hop.clone()), e.kind))?;
        apply_options(&mut hs, ctx);
        if i == 0 && !hs.jumps.is_empty() {
            if stack.contains(hop) {
                let mut path = stack.clone();
                path.push(hop.clone());
                return Err((
                    None,
                    ErrorKind::Config(format!("ProxyJump loop: {}", path.join(" -> "))),
                ));
            }
            stack.push(hop.clone());
            let own = std::mem::take(&mut hs.jumps);
            plan_route(&own, ctx, warnings, stack, out)?;
            stack.pop();
        }
        if out.len() >= MAX_HOPS {
            return Err((
                None,
                ErrorKind::Config(format!("ProxyJump route longer than {MAX_HOPS} hops")),
            ));
        }
        out.push(Hop {
            spec: hop.clone(),
            settings: hs,
        });
    }
    Ok(())
}

/// Connects to `target` through its jump hosts (and theirs), verifying each hop's host key.
pub(crate) async fn connect_ssh(
    target: &str,
    ctx: &ConnectCtx<'_>,
) -> Result<SshSession, TransportError> {
    let mut warnings = Vec::new();
    let mut settings =
        crate::settings::resolve(target, ctx.opts.config_file.as_ref(), &mut warnings)?;
    apply_options(&mut settings, ctx);
    let jump_err = |hop: String, inner: ErrorKind| {
        TransportError::new(
            settings.alias.clone(),
            ErrorKind::Jump {
                jump: hop,
                inner: Box::new(inner),
            },
        )
    };
    let mut hops = Vec::new();
    let mut stack = vec![target.to_string()];
    plan_route(&settings.jumps, ctx, &mut warnings, &mut stack, &mut hops).map_err(
        |(hop, kind)| match hop {
            Some(hop) => jump_err(hop, kind),
            None => TransportError::new(settings.alias.clone(), kind),
        },
    )?;
    let mut jumps: Vec<Handle<Client>> = Vec::new();
    let mut route = Vec::new();
    for hop in &hops {
        let hs = &hop.settings;
        let via = match jumps.last() {
            Some(h) => Via::Jump(h),
            None => Via::Direct,
        };
        let h = connect_hop(hs, via, ctx)
            .await
            .map_err(|e| jump_err(hop.spec.clone(), e.kind))?;
        route.push(format!("{}@{}:{}", hs.user, hs.hostname, hs.port));
        jumps.push(h);
    }
    let via = match jumps.last() {
        Some(h) => Via::Jump(h),
        None => Via::Direct,
    };
    let handle = connect_hop(&settings, via, ctx).await?;
    for w in warnings {
        ctx.notice(w);
    }
    let mut address = format!("{}@{}:{}", settings.user, settings.hostname, settings.port);
    if !route.is_empty() {
        address.push_str(&format!(" via {}", route.join(",")));
    }
    Ok(SshSession {
        handle: Arc::new(handle),
        jumps,
        channels: Arc::new(Semaphore::new(MAX_CHANNELS)),
        open: Arc::new(AtomicUsize::new(0)),
        host: settings.alias.clone(),
        address,
        notices: Vec::new(),
    })
}

/// One authenticated SSH connection to a host. Commands run on their own channels, at most
/// [`MAX_CHANNELS`] at once, each drained by its own task. A server that allows fewer
/// sessions (`MaxSessions`) refuses a channel: the limit then drops by one for the rest of
/// the connection and the command waits for a channel to end instead of failing.
pub struct SshSession {
    handle: Arc<Handle<Client>>,
    /// Jump host connections, kept alive while the session is used.
    jumps: Vec<Handle<Client>>,
    channels: Arc<Semaphore>,
    /// Channels open now.
    open: Arc<AtomicUsize>,
    host: String,
    address: String,
    pub(crate) notices: Vec<String>,
}

impl std::fmt::Debug for SshSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SshSession")
            .field("host", &self.host)
            .field("address", &self.address)
            .finish()
    }
}

/// Quotes `s` for a POSIX shell.
pub fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r#"'\''"#))
}

/// Wraps a command so the remote `timeout -s KILL` ends it (and its process group) at the
/// deadline, even for root where sshd refuses the signal request. Without `timeout` on the
/// remote, the command runs plainly and the client closes the channel at the deadline. A
/// command of plain words (`sh -s`, what the collector runs on every channel) is run directly
/// rather than through one more `sh -c`: one program start less per channel.
pub fn wrap_remote(command: &str, limit: Duration) -> String {
    let secs = limit.as_secs() + u64::from(limit.subsec_nanos() > 0) + 1;
    let plain = !command.trim().is_empty()
        && !command.starts_with('-')
        && command
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || " ._/-".contains(c));
    if plain {
        let inner = format!(
            "if command -v timeout >/dev/null 2>&1; then exec timeout -s KILL {secs} {command}; else exec {command}; fi"
        );
        return format!("exec sh -c {}", shell_quote(&inner));
    }
    let inner = format!(
        "if command -v timeout >/dev/null 2>&1; then exec timeout -s KILL {secs} sh -c \"$0\"; else exec sh -c \"$0\"; fi"
    );
    format!(
        "exec sh -c {} {}",
        shell_quote(&inner),
        shell_quote(command)
    )
}

impl SshSession {
    pub fn host(&self) -> &str {
        &self.host
    }

    pub fn address(&self) -> String {
        self.address.clone()
    }

    /// The connection and its channel limit, for `direct-tcpip` channels ([`crate::forward`]).
    pub(crate) fn channel_parts(&self) -> (&Handle<Client>, &Arc<Semaphore>) {
        (&self.handle, &self.channels)
    }

    pub async fn close(self) {
        let _ = tokio::time::timeout(
            Duration::from_secs(2),
            self.handle.disconnect(Disconnect::ByApplication, "", "en"),
        )
        .await;
        for j in self.jumps.iter().rev() {
            let _ = tokio::time::timeout(
                Duration::from_secs(2),
                j.disconnect(Disconnect::ByApplication, "", "en"),
            )
            .await;
        }
    }

    pub async fn exec(&self, req: &ExecRequest) -> Result<ExecOutput, TransportError> {
        let started = Instant::now();
        let deadline = tokio::time::Instant::now() + req.timeout;
        let err = |kind| TransportError::new(self.host.clone(), kind);
        let timed_out = || err(ErrorKind::ExecTimeout { after: req.timeout });
        let acquire = || async {
            tokio::time::timeout_at(deadline, self.channels.clone().acquire_owned())
                .await
                .map_err(|_| timed_out())?
                .map_err(|_| err(ErrorKind::Channel("connection closed".into())))
        };
        let mut permit = acquire().await?;
        let mut attempt = 0u32;
        let channel = loop {
            attempt += 1;
            match tokio::time::timeout_at(deadline, self.handle.channel_open_session()).await {
                Err(_) => return Err(timed_out()),
                Ok(Ok(ch)) => break ch,
                Ok(Err(russh::Error::ChannelOpenFailure(f)))
                    if self.open.load(Ordering::SeqCst) > 0 =>
                {
                    // The server allows fewer sessions than we opened: one channel fewer from
                    // now on, and wait for one of the others to end.
                    tracing::debug!(
                        "{}: channel refused ({f:?}) with {} open; lowering the limit",
                        self.host,
                        self.open.load(Ordering::SeqCst)
                    );
                    permit.forget();
                    permit = acquire().await?;
                    // A channel ended: a fresh start at the retries.
                    attempt = 0;
                }
                Ok(Err(russh::Error::ChannelOpenFailure(f))) if attempt < RETRIES => {
                    tracing::debug!("{}: channel open failed ({f:?}); retrying", self.host);
                    tokio::time::sleep(backoff(attempt, 25)).await;
                }
                Ok(Err(e @ russh::Error::ChannelOpenFailure(_))) => {
                    tracing::debug!(
                        "{}: channel refused ({e}) with none open; giving up",
                        self.host
                    );
                    return Err(err(ErrorKind::ChannelRefused(clean(&e.to_string()))));
                }
                Ok(Err(e)) => return Err(err(ErrorKind::Channel(clean(&e.to_string())))),
            }
        };
        let open = OpenGuard::new(self.open.clone());
        let wrapped = wrap_remote(&req.command, req.timeout);
        let req = req.clone();
        let host = self.host.clone();
        // The channel is drained by its own task so a slow caller never stalls the connection.
        let task = tokio::spawn(async move {
            let _permit = permit;
            let _open = open;
            drain::drain(channel, wrapped, req, deadline, started, host).await
        });
        match task.await {
            Ok(r) => r,
            Err(e) => Err(err(ErrorKind::Ssh(format!("exec task failed: {e}")))),
        }
    }
}

/// Counts a channel as open while it lives.
struct OpenGuard(Arc<AtomicUsize>);

impl OpenGuard {
    fn new(n: Arc<AtomicUsize>) -> Self {
        n.fetch_add(1, Ordering::SeqCst);
        OpenGuard(n)
    }
}

impl Drop for OpenGuard {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}
