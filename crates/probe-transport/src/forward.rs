//! Asking a model server on the host about itself: a TCP stream to a loopback port of the host
//! (an SSH `direct-tcpip` channel over the existing connection, or a plain `TcpStream` for
//! `local`), and one HTTP/1.1 request over it (hyper), under strict limits.
//!
//! The limits hold here, whatever the caller asks: [`Method`] is `GET` or `HEAD` only; the path
//! is a plain absolute path of printable ASCII (no scheme, no authority, no fragment, at most
//! 256 bytes); the request carries no body and exactly three headers (`Host`, `Accept`,
//! `User-Agent`), never `Authorization`, a cookie or any other credential; the destination is a
//! loopback address; one deadline bounds opening, request, response and body; the body is
//! cut at its cap. Which paths are asked is the caller's allow-list.

use std::net::Ipv4Addr;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt as _, Empty};
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite};

use crate::{Connection, LocalExec, SshSession};

/// A byte stream to a port on the host.
pub trait Stream: AsyncRead + AsyncWrite + Send + Unpin {}
impl<T: AsyncRead + AsyncWrite + Send + Unpin> Stream for T {}

/// Why no stream or no answer came back. Each is one line for a report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ForwardError {
    /// The SSH server refuses port forwarding (`AllowTcpForwarding no`, `permitopen`).
    Refused(String),
    /// Nothing listens on that port (connection refused on the host).
    Closed(String),
    /// The deadline passed.
    TimedOut(Duration),
    /// The request was outside the limits (not loopback, a path that is not a plain path).
    NotAllowed(String),
    /// The channel or the HTTP exchange failed otherwise.
    Failed(String),
}

impl std::fmt::Display for ForwardError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ForwardError::Refused(m) => write!(f, "port forwarding refused by the SSH server: {m}"),
            ForwardError::Closed(m) => write!(f, "port closed: {m}"),
            ForwardError::TimedOut(d) => write!(f, "no answer within {} ms", d.as_millis()),
            ForwardError::NotAllowed(m) => write!(f, "not asked: {m}"),
            ForwardError::Failed(m) => write!(f, "{m}"),
        }
    }
}

impl std::error::Error for ForwardError {}

/// Something that opens a TCP stream to a loopback port of its host.
pub trait Forward: Send + Sync {
    fn open_loopback(
        &self,
        ip: Ipv4Addr,
        port: u16,
    ) -> impl std::future::Future<Output = Result<Box<dyn Stream>, ForwardError>> + Send;
}

fn check_loopback(ip: Ipv4Addr) -> Result<(), ForwardError> {
    if ip.is_loopback() {
        Ok(())
    } else {
        Err(ForwardError::NotAllowed(format!(
            "{ip} is not a loopback address"
        )))
    }
}

impl Forward for SshSession {
    async fn open_loopback(
        &self,
        ip: Ipv4Addr,
        port: u16,
    ) -> Result<Box<dyn Stream>, ForwardError> {
        check_loopback(ip)?;
        let (handle, channels) = self.channel_parts();
        let permit = channels
            .clone()
            .acquire_owned()
            .await
            .map_err(|_| ForwardError::Failed("connection closed".into()))?;
        let to = format!("{ip}:{port}");
        match handle
            .channel_open_direct_tcpip(ip.to_string(), u32::from(port), "127.0.0.1", 0)
            .await
        {
            Ok(ch) => Ok(Box::new(Permitted {
                inner: ch.into_stream(),
                _permit: permit,
            })),
            Err(russh::Error::ChannelOpenFailure(f)) => Err(match f {
                russh::ChannelOpenFailure::AdministrativelyProhibited => ForwardError::Refused(
                    format!("direct-tcpip to {to} administratively prohibited"),
                ),
                russh::ChannelOpenFailure::ConnectFailed => {
                    ForwardError::Closed(format!("{to} refused the connection"))
                }
                other => ForwardError::Failed(format!("direct-tcpip to {to}: {other:?}")),
            }),
            Err(e) => Err(ForwardError::Failed(format!(
                "direct-tcpip to {to}: {}",
                crate::error::clean(&e.to_string())
            ))),
        }
    }
}

/// A channel stream that holds one of the session's channel permits while it lives.
struct Permitted<S> {
    inner: S,
    _permit: tokio::sync::OwnedSemaphorePermit,
}

impl<S: AsyncRead + Unpin> AsyncRead for Permitted<S> {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Permitted<S> {
    fn poll_write(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        std::pin::Pin::new(&mut self.inner).poll_write(cx, buf)
    }
    fn poll_flush(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.inner).poll_flush(cx)
    }
    fn poll_shutdown(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

impl Forward for LocalExec {
    async fn open_loopback(
        &self,
        ip: Ipv4Addr,
        port: u16,
    ) -> Result<Box<dyn Stream>, ForwardError> {
        check_loopback(ip)?;
        match tokio::net::TcpStream::connect((ip, port)).await {
            Ok(s) => Ok(Box::new(s)),
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => Err(
                ForwardError::Closed(format!("{ip}:{port} refused the connection")),
            ),
            Err(e) => Err(ForwardError::Failed(format!("connect {ip}:{port}: {e}"))),
        }
    }
}

impl Forward for Connection {
    async fn open_loopback(
        &self,
        ip: Ipv4Addr,
        port: u16,
    ) -> Result<Box<dyn Stream>, ForwardError> {
        match self {
            Connection::Ssh(s) => s.open_loopback(ip, port).await,
            Connection::Local(l) => l.open_loopback(ip, port).await,
        }
    }
}

/// The only methods ever sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    Get,
    Head,
}

impl Method {
    pub fn as_str(self) -> &'static str {
        match self {
            Method::Get => "GET",
            Method::Head => "HEAD",
        }
    }
}

/// One request to a server on the host.
#[derive(Debug, Clone)]
pub struct HttpRequest {
    pub method: Method,
    /// Absolute path (with an optional query), e.g. `/metrics`.
    pub path: String,
    /// The `Accept` header.
    pub accept: String,
    /// Deadline for opening the stream, the request, the response and its body.
    pub timeout: Duration,
    /// Bytes of body kept; the exchange stops there and `truncated` is set.
    pub body_cap: usize,
}

/// What the server answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpReply {
    pub status: u16,
    pub content_type: Option<String>,
    pub body: Vec<u8>,
    pub truncated: bool,
    pub elapsed: Duration,
}

/// Longest path sent.
pub const MAX_PATH: usize = 256;
/// Largest response head accepted (hyper's read buffer).
const MAX_HEAD: usize = 16 << 10;

/// Whether `path` is a plain absolute path (with an optional query) of printable ASCII.
pub fn plain_path(path: &str) -> bool {
    path.len() <= MAX_PATH
        && path.starts_with('/')
        && !path.starts_with("//")
        && path
            .bytes()
            .all(|b| b.is_ascii_graphic() && b != b'#' && b != b'\\')
}

/// Sends one request to `ip:port` on the host of `fwd` and reads the answer, within
/// `req.timeout` and `req.body_cap`.
pub async fn http_request<F: Forward>(
    fwd: &F,
    ip: Ipv4Addr,
    port: u16,
    req: &HttpRequest,
) -> Result<HttpReply, ForwardError> {
    if !plain_path(&req.path) {
        return Err(ForwardError::NotAllowed(format!(
            "{:?} is not a plain path",
            req.path.chars().take(60).collect::<String>()
        )));
    }
    check_loopback(ip)?;
    let started = Instant::now();
    match tokio::time::timeout(req.timeout, exchange(fwd, ip, port, req, started)).await {
        Ok(r) => r,
        Err(_) => Err(ForwardError::TimedOut(req.timeout)),
    }
}

fn http_failed(e: impl std::fmt::Display) -> ForwardError {
    ForwardError::Failed(format!(
        "HTTP: {}",
        crate::error::clean(&e.to_string())
            .chars()
            .take(200)
            .collect::<String>()
    ))
}

async fn exchange<F: Forward>(
    fwd: &F,
    ip: Ipv4Addr,
    port: u16,
    req: &HttpRequest,
    started: Instant,
) -> Result<HttpReply, ForwardError> {
    let stream = fwd.open_loopback(ip, port).await?;
    let (mut sender, conn) = hyper::client::conn::http1::Builder::new()
        .max_buf_size(MAX_HEAD.max(8192))
        .handshake::<_, Empty<Bytes>>(TokioIo::new(stream))
        .await
        .map_err(http_failed)?;
    let driver = tokio::spawn(conn);
    let result = async {
        let request = hyper::Request::builder()
            .method(req.method.as_str())
            .uri(req.path.as_str())
            .header(hyper::header::HOST, format!("{ip}:{port}"))
            .header(hyper::header::ACCEPT, req.accept.as_str())
            .header(
                hyper::header::USER_AGENT,
                concat!("probe/", env!("CARGO_PKG_VERSION")),
            )
            .body(Empty::<Bytes>::new())
            .map_err(http_failed)?;
        let response = sender.send_request(request).await.map_err(http_failed)?;
        let status = response.status().as_u16();
        let content_type = response
            .headers()
            .get(hyper::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .map(|s| s.chars().take(120).collect());
        let mut body = response.into_body();
        let mut buf = Vec::new();
        let mut truncated = false;
        while let Some(frame) = body.frame().await {
            let frame = frame.map_err(http_failed)?;
            if let Ok(data) = frame.into_data() {
                let room = req.body_cap.saturating_sub(buf.len());
                if data.len() > room {
                    buf.extend_from_slice(data.get(..room).unwrap_or_default());
                    truncated = true;
                    break;
                }
                buf.extend_from_slice(&data);
            }
        }
        Ok(HttpReply {
            status,
            content_type,
            body: buf,
            truncated,
            elapsed: started.elapsed(),
        })
    }
    .await;
    driver.abort();
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_plain_paths() {
        let cases = [
            ("/metrics", true),
            ("/server_info?config_format=json", true),
            ("/v1/models", true),
            ("metrics", false),
            ("//evil.example/x", false),
            ("http://x/y", false),
            ("/a b", false),
            ("/a\r\nAuthorization: x", false),
            ("/a#frag", false),
            ("/\\x", false),
            ("/é", false),
        ];
        for (path, ok) in cases {
            assert_eq!(plain_path(path), ok, "{path:?}");
        }
        assert!(!plain_path(&format!("/{}", "a".repeat(MAX_PATH))));
    }

    #[tokio::test]
    async fn refuses_non_loopback_and_bad_paths() {
        let local = LocalExec::new();
        let req = HttpRequest {
            method: Method::Get,
            path: "/metrics".into(),
            accept: "text/plain".into(),
            timeout: Duration::from_secs(1),
            body_cap: 10,
        };
        let e = http_request(&local, Ipv4Addr::new(10, 0, 0, 1), 80, &req)
            .await
            .unwrap_err();
        assert!(matches!(e, ForwardError::NotAllowed(_)), "{e}");
        let bad = HttpRequest {
            path: "http://127.0.0.1/".into(),
            ..req
        };
        let e = http_request(&local, Ipv4Addr::LOCALHOST, 80, &bad)
            .await
            .unwrap_err();
        assert!(matches!(e, ForwardError::NotAllowed(_)), "{e}");
    }
}
