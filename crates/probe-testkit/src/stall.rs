//! A TCP proxy on 127.0.0.1 that stops forwarding and keeps its sockets open: a firewall that
//! drops, a half-dead load balancer, a server whose host froze. What a client sees is a peer
//! that accepted and then says nothing, which no error and no reset ever ends.
//!
//! When the stall starts is decided by the test, never by a clock: at once ([`Stall::AtOnce`]),
//! when the test flips the switch ([`StallingProxy::stall`]), or when the client first sends a
//! given byte string ([`Stall::OnClientBytes`], e.g. the first `INSERT` of a PostgreSQL
//! session, so a store opens and reads and then stalls on its write).

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};

/// When the proxy stops forwarding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Stall {
    /// Every connection is accepted and nothing is ever forwarded.
    AtOnce,
    /// Forwards until [`StallingProxy::stall`] is called.
    OnSwitch,
    /// Forwards until the client sends these bytes (within one read), then forwards nothing
    /// more on any connection, that chunk included.
    OnClientBytes(Vec<u8>),
}

/// The proxy; dropping it closes every socket it holds.
pub struct StallingProxy {
    pub port: u16,
    stalled: Arc<AtomicBool>,
    _runtime: tokio::runtime::Runtime,
}

impl StallingProxy {
    /// Starts a proxy to `upstream` (a loopback address) on a free port of 127.0.0.1.
    pub fn start(upstream: SocketAddr, when: Stall) -> StallingProxy {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("probe-stall")
            .enable_all()
            .build()
            .expect("proxy runtime");
        let stalled = Arc::new(AtomicBool::new(when == Stall::AtOnce));
        let listener = runtime
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .expect("bind the proxy");
        let port = listener.local_addr().expect("proxy address").port();
        let trigger: Option<Arc<Vec<u8>>> = match when {
            Stall::OnClientBytes(bytes) => Some(Arc::new(bytes)),
            Stall::AtOnce | Stall::OnSwitch => None,
        };
        let switch = Arc::clone(&stalled);
        runtime.spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let stalled = Arc::clone(&switch);
                let trigger = trigger.clone();
                tokio::spawn(async move {
                    if stalled.load(Ordering::SeqCst) {
                        let _held = client;
                        std::future::pending::<()>().await;
                        return;
                    }
                    let Ok(server) = tokio::net::TcpStream::connect(upstream).await else {
                        return;
                    };
                    let (mut client_read, mut client_write) = client.into_split();
                    let (mut server_read, mut server_write) = server.into_split();
                    tokio::join!(
                        pump(
                            &mut client_read,
                            &mut server_write,
                            &stalled,
                            trigger.as_deref()
                        ),
                        pump(&mut server_read, &mut client_write, &stalled, None),
                    );
                });
            }
        });
        StallingProxy {
            port,
            stalled,
            _runtime: runtime,
        }
    }

    /// Stops forwarding on every connection, now and later.
    pub fn stall(&self) {
        self.stalled.store(true, Ordering::SeqCst);
    }

    /// Forwards again on connections made from now on (the stalled ones stay stalled).
    pub fn resume(&self) {
        self.stalled.store(false, Ordering::SeqCst);
    }

    /// Whether the proxy has stopped forwarding.
    pub fn is_stalled(&self) -> bool {
        self.stalled.load(Ordering::SeqCst)
    }
}

/// Copies `from` to `to` until either ends; once stalled (or on reading `trigger`), holds both
/// open and passes nothing on.
async fn pump(
    from: &mut OwnedReadHalf,
    to: &mut OwnedWriteHalf,
    stalled: &AtomicBool,
    trigger: Option<&Vec<u8>>,
) {
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = match from.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        let chunk = buf.get(..n).unwrap_or_default();
        if let Some(trigger) = trigger
            && !trigger.is_empty()
            && chunk
                .windows(trigger.len())
                .any(|w| w == trigger.as_slice())
        {
            stalled.store(true, Ordering::SeqCst);
        }
        if stalled.load(Ordering::SeqCst) {
            std::future::pending::<()>().await;
        }
        if to.write_all(chunk).await.is_err() {
            return;
        }
    }
}
