//! The SSH side of the simulator: one listener per simulated host, russh's server for key
//! exchange, public-key authentication and session channels; each exec channel reads its script
//! from stdin, waits the host's latency and sends the replayed answer.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::Duration;

use russh::keys::{PrivateKey, PublicKey};
use russh::server::{Auth, ChannelOpenHandle, Msg, PublicKeyOffer, Session, VerifiedPublicKey};
use russh::{Channel, ChannelId, ChannelMsg};
use tokio::io::AsyncReadExt;
use tokio::net::{TcpListener, TcpStream};

use super::behaviour::{Behaviour, DROPPED_SECTION};
use super::recording::Recording;
use super::replay::{self, Identity};

/// The most stdin an exec channel keeps (a collection script is ~30 KB).
const MAX_SCRIPT: usize = 4 << 20;

/// Counters of what the simulator served, for tests and benchmarks.
#[derive(Debug, Default)]
pub struct Counters {
    pub connections: AtomicU64,
    pub authenticated: AtomicU64,
    pub execs: AtomicU64,
    pub sections: AtomicU64,
    /// Sections asked for that the recording does not hold or holds for another `sec` call.
    pub stale: AtomicU64,
    pub bytes_out: AtomicU64,
    /// Sessions open now, and the most open at once.
    pub open: AtomicU64,
    pub peak_open: AtomicU64,
}

/// What every host shares.
pub(crate) struct Shared {
    pub recording: Arc<Recording>,
    pub latency: Duration,
    pub client_key: PublicKey,
    pub run: AtomicU32,
    pub counters: Counters,
    /// Names of stale sections, the first few.
    pub stale_names: std::sync::Mutex<Vec<String>>,
}

/// One simulated host as the server sees it.
pub(crate) struct HostCtx {
    pub behaviour: Behaviour,
    pub machine_id: String,
    pub hostname: String,
    /// Its own extra delay per channel.
    pub jitter: Duration,
    pub config: Arc<russh::server::Config>,
}

/// The server configuration of a host serving `key`.
pub(crate) fn config(key: PrivateKey) -> Arc<russh::server::Config> {
    Arc::new(russh::server::Config {
        keys: vec![key],
        auth_rejection_time: Duration::from_millis(10),
        auth_rejection_time_initial: Some(Duration::ZERO),
        inactivity_timeout: Some(Duration::from_secs(600)),
        nodelay: true,
        ..Default::default()
    })
}

/// Accepts connections on `listener` for `host` until the task is dropped.
pub(crate) async fn serve(listener: TcpListener, host: Arc<HostCtx>, shared: Arc<Shared>) {
    loop {
        let Ok((sock, _)) = listener.accept().await else {
            tokio::time::sleep(Duration::from_millis(5)).await;
            continue;
        };
        shared.counters.connections.fetch_add(1, Ordering::Relaxed);
        let (host, shared) = (host.clone(), shared.clone());
        tokio::spawn(async move {
            if host.behaviour == Behaviour::Timeout {
                hold(sock).await;
            } else {
                session(sock, host, shared).await;
            }
        });
    }
}

/// Reads and drops whatever the client sends until it closes: a host that never answers.
async fn hold(mut sock: TcpStream) {
    let mut buf = [0u8; 1024];
    while matches!(sock.read(&mut buf).await, Ok(n) if n > 0) {}
}

async fn session(sock: TcpStream, host: Arc<HostCtx>, shared: Arc<Shared>) {
    let _ = sock.set_nodelay(true);
    let c = &shared.counters;
    let open = c.open.fetch_add(1, Ordering::Relaxed) + 1;
    c.peak_open.fetch_max(open, Ordering::Relaxed);
    let handler = Handler {
        host: host.clone(),
        shared: shared.clone(),
    };
    if let Ok(running) = russh::server::run_stream(host.config.clone(), sock, handler).await {
        let _ = running.await;
    }
    shared.counters.open.fetch_sub(1, Ordering::Relaxed);
}

struct Handler {
    host: Arc<HostCtx>,
    shared: Arc<Shared>,
}

impl Handler {
    fn accepts(&self, key: &PublicKey) -> Auth {
        if key.key_data() == self.shared.client_key.key_data() {
            Auth::Accept
        } else {
            Auth::reject()
        }
    }
}

impl russh::server::Handler for Handler {
    type Error = russh::Error;

    async fn auth_publickey_offered(
        &mut self,
        _user: &str,
        offer: PublicKeyOffer<'_>,
    ) -> Result<Auth, Self::Error> {
        Ok(self.accepts(offer.public_key))
    }

    async fn auth_publickey(
        &mut self,
        _user: &str,
        key: VerifiedPublicKey<'_>,
    ) -> Result<Auth, Self::Error> {
        let auth = self.accepts(key.public_key);
        if matches!(auth, Auth::Accept) {
            self.shared
                .counters
                .authenticated
                .fetch_add(1, Ordering::Relaxed);
        }
        Ok(auth)
    }

    async fn channel_open_session(
        &mut self,
        channel: Channel<Msg>,
        reply: ChannelOpenHandle,
        _session: &mut Session,
    ) -> Result<(), Self::Error> {
        reply.accept().await;
        let (host, shared) = (self.host.clone(), self.shared.clone());
        tokio::spawn(exec_channel(channel, host, shared));
        Ok(())
    }

    async fn exec_request(
        &mut self,
        channel: ChannelId,
        _data: &[u8],
        session: &mut Session,
    ) -> Result<(), Self::Error> {
        session.channel_success(channel)
    }
}

/// One session channel: the exec request and its stdin, then the host's answer after its delay.
async fn exec_channel(mut ch: Channel<Msg>, host: Arc<HostCtx>, shared: Arc<Shared>) {
    let mut script = Vec::new();
    let mut exec = false;
    while let Some(msg) = ch.wait().await {
        match msg {
            ChannelMsg::Exec { .. } => exec = true,
            ChannelMsg::Data { data } if script.len() < MAX_SCRIPT => {
                script.extend_from_slice(&data);
            }
            ChannelMsg::Eof => break,
            ChannelMsg::Close => return,
            _ => {}
        }
    }
    if !exec {
        return;
    }
    let c = &shared.counters;
    c.execs.fetch_add(1, Ordering::Relaxed);
    if host.behaviour == Behaviour::Stall {
        while ch.wait().await.is_some() {}
        return;
    }
    let dropped = format!("\nsec {DROPPED_SECTION} ");
    if host.behaviour == Behaviour::DropChannel
        && script
            .windows(dropped.len())
            .any(|w| w == dropped.as_bytes())
    {
        let _ = ch.close().await;
        return;
    }
    let drifted = host.behaviour == Behaviour::Drift && shared.run.load(Ordering::Relaxed) % 2 == 1;
    let who = Identity {
        machine_id: host.machine_id.clone(),
        hostname: host.hostname.clone(),
        drifted,
    };
    let answer = replay::reply(&shared.recording, &who, &script);
    c.sections
        .fetch_add(answer.sections as u64, Ordering::Relaxed);
    if !answer.stale.is_empty() {
        c.stale
            .fetch_add(answer.stale.len() as u64, Ordering::Relaxed);
        if let Ok(mut names) = shared.stale_names.lock() {
            for n in answer.stale {
                if names.len() < 20 && !names.contains(&n) {
                    names.push(n);
                }
            }
        }
    }
    tokio::time::sleep(shared.latency + host.jitter).await;
    c.bytes_out
        .fetch_add(answer.stdout.len() as u64, Ordering::Relaxed);
    let _ = ch.data_bytes(answer.stdout).await;
    let _ = ch.exit_status(answer.exit_status).await;
    let _ = ch.eof().await;
    let _ = ch.close().await;
}
