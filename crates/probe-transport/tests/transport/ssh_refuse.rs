//! A server that opens channels towards the client (agent, X11, forwarded and direct TCP and
//! stream-local, sessions) gets every one refused, and the command the client asked for still
//! runs. OpenSSH's sshd only opens what a client asked for, so the server here is russh's,
//! started in the test: after authentication, when the client's exec arrives, it opens each
//! kind, records the client's answer, then answers the exec.

use std::sync::{Arc, Mutex};

use probe_transport::{ConnectOptions, Exec};
use russh::keys::PrivateKey;
use russh::keys::ssh_key::private::Ed25519Keypair;
use russh::server::{Auth, ChannelOpenHandle, Msg, PublicKeyOffer, Session, VerifiedPublicKey};
use russh::{Channel, ChannelId, ChannelMsg};
use tokio::net::TcpListener;

use crate::ssh_support::{key, req, text};

/// What the server saw: each channel kind it opened with the client's answer (`Ok(())`
/// confirmed, `Err` the refusal), and the channel requests the client made.
#[derive(Default)]
struct Seen {
    opened: Vec<(&'static str, Result<(), String>)>,
    requests: Vec<String>,
}

struct Opener {
    seen: Arc<Mutex<Seen>>,
}

impl Opener {
    fn request(&self, what: &str) {
        self.seen.lock().unwrap().requests.push(what.to_string());
    }
}

impl russh::server::Handler for Opener {
    type Error = russh::Error;

    async fn auth_publickey_offered(
        &mut self,
        _user: &str,
        _offer: PublicKeyOffer<'_>,
    ) -> Result<Auth, Self::Error> {
        Ok(Auth::Accept)
    }

    async fn auth_publickey(
        &mut self,
        _user: &str,
        _key: VerifiedPublicKey<'_>,
    ) -> Result<Auth, Self::Error> {
        Ok(Auth::Accept)
    }

    async fn channel_open_session(
        &mut self,
        channel: Channel<Msg>,
        reply: ChannelOpenHandle,
        session: &mut Session,
    ) -> Result<(), Self::Error> {
        reply.accept().await;
        tokio::spawn(exec_channel(channel, session.handle(), self.seen.clone()));
        Ok(())
    }

    async fn exec_request(
        &mut self,
        channel: ChannelId,
        _data: &[u8],
        session: &mut Session,
    ) -> Result<(), Self::Error> {
        self.request("exec");
        session.channel_success(channel)
    }

    async fn agent_request(
        &mut self,
        _channel: ChannelId,
        _session: &mut Session,
    ) -> Result<bool, Self::Error> {
        self.request("auth-agent-req@openssh.com");
        Ok(false)
    }

    async fn x11_request(
        &mut self,
        _channel: ChannelId,
        _single_connection: bool,
        _x11_auth_protocol: &str,
        _x11_auth_cookie: &str,
        _x11_screen_number: u32,
        _session: &mut Session,
    ) -> Result<(), Self::Error> {
        self.request("x11-req");
        Ok(())
    }

    #[allow(clippy::too_many_arguments)]
    async fn pty_request(
        &mut self,
        _channel: ChannelId,
        _term: &str,
        _col_width: u32,
        _row_height: u32,
        _pix_width: u32,
        _pix_height: u32,
        _modes: &[(russh::Pty, u32)],
        _session: &mut Session,
    ) -> Result<(), Self::Error> {
        self.request("pty-req");
        Ok(())
    }

    async fn tcpip_forward(
        &mut self,
        _address: &str,
        _port: &mut u32,
        _session: &mut Session,
    ) -> Result<bool, Self::Error> {
        self.request("tcpip-forward");
        Ok(false)
    }
}

fn outcome<T>(r: Result<T, russh::Error>) -> Result<(), String> {
    r.map(|_| ()).map_err(|e| e.to_string())
}

/// The client's exec channel: once the exec request arrived, opens every kind of channel
/// towards the client, records the answers, then answers the command.
async fn exec_channel(mut ch: Channel<Msg>, h: russh::server::Handle, seen: Arc<Mutex<Seen>>) {
    while let Some(msg) = ch.wait().await {
        match msg {
            ChannelMsg::Exec { .. } => break,
            ChannelMsg::Close => return,
            _ => {}
        }
    }
    let opened: Vec<(&'static str, Result<(), String>)> = vec![
        (
            "auth-agent@openssh.com",
            outcome(h.channel_open_agent().await),
        ),
        ("x11", outcome(h.channel_open_x11("127.0.0.1", 6010).await)),
        (
            "forwarded-tcpip",
            outcome(
                h.channel_open_forwarded_tcpip("127.0.0.1", 8000, "127.0.0.1", 40000)
                    .await,
            ),
        ),
        (
            "direct-tcpip",
            outcome(
                h.channel_open_direct_tcpip("127.0.0.1", 22, "127.0.0.1", 40001)
                    .await,
            ),
        ),
        ("session", outcome(h.channel_open_session().await)),
        (
            "forwarded-streamlocal@openssh.com",
            outcome(h.channel_open_forwarded_streamlocal("/tmp/s.sock").await),
        ),
        (
            "direct-streamlocal@openssh.com",
            outcome(h.channel_open_direct_streamlocal("/tmp/s.sock").await),
        ),
    ];
    seen.lock().unwrap().opened = opened;
    let _ = ch.data(&b"still here\n"[..]).await;
    let _ = ch.exit_status(0).await;
    let _ = ch.eof().await;
    let _ = ch.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn channels_the_server_opens_towards_the_client_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let client_key = key(dir.path(), "id_client", "ed25519", "", None);
    let host_key = PrivateKey::from(Ed25519Keypair::from_seed(&[7u8; 32]));
    let host_pub = host_key.public_key().to_openssh().unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let known_hosts = dir.path().join("known_hosts");
    std::fs::write(&known_hosts, format!("[127.0.0.1]:{port} {host_pub}\n")).unwrap();
    let config = dir.path().join("ssh_config");
    std::fs::write(
        &config,
        format!(
            "Host *\n  User root\n  IdentityFile {}\n  UserKnownHostsFile {}\n  IdentityAgent none\n  ConnectTimeout 5\n",
            client_key.private.display(),
            known_hosts.display()
        ),
    )
    .unwrap();

    let seen = Arc::new(Mutex::new(Seen::default()));
    let server_config = Arc::new(russh::server::Config {
        keys: vec![host_key],
        ..Default::default()
    });
    let server = {
        let seen = seen.clone();
        tokio::spawn(async move {
            let (sock, _) = listener.accept().await.unwrap();
            let running = russh::server::run_stream(server_config, sock, Opener { seen })
                .await
                .unwrap();
            let _ = running.await;
        })
    };

    let opts = ConnectOptions {
        config_file: Some(config),
        ..Default::default()
    };
    let c = probe_transport::connect(&format!("root@127.0.0.1:{port}"), &opts)
        .await
        .unwrap_or_else(|e| panic!("connect: {e}"));
    let out = c
        .exec(&req("echo hello"))
        .await
        .unwrap_or_else(|e| panic!("exec: {e}"));
    assert_eq!(text(&out.stdout), "still here\n");
    assert_eq!(out.exit_status, 0);

    let seen = std::mem::take(&mut *seen.lock().unwrap());
    assert_eq!(seen.opened.len(), 7, "every kind was tried");
    for (kind, answer) in &seen.opened {
        let refusal = answer
            .as_ref()
            .err()
            .unwrap_or_else(|| panic!("the client confirmed the {kind} channel"));
        assert!(
            refusal.contains("AdministrativelyProhibited"),
            "{kind}: {refusal}"
        );
    }
    // The client asked for its exec and nothing else: no agent or X11 forwarding, no pty,
    // no remote forward.
    assert_eq!(seen.requests, vec!["exec".to_string()]);
    c.close().await;
    server.abort();
}
