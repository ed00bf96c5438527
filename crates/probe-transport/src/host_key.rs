//! The host-key verifier: the russh handler that checks the server's key or certificate
//! against the operator's known_hosts (strict by default: an unknown key is refused unless
//! accept-new is asked for and a file to record it in exists; a changed or revoked key always
//! is), and the host key algorithms offered for it. The same handler refuses every channel the
//! server opens towards the client (agent, X11, forwarded or direct TCP and stream-local,
//! session): probe asks for none.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use russh::client::{self, ChannelOpenHandle};
use russh::keys::PublicKeyOrCertificate;
use russh::keys::ssh_key::{Algorithm, EcdsaCurve, HashAlg};
use russh::{Channel, ChannelOpenFailure};

use crate::error::{ErrorKind, KeyAt, UnknownKey, clean};
use crate::known_hosts::{self, KnownHosts, Recorded, Verdict};
use crate::settings::{HostSettings, Strict};

/// The russh handler of one connection attempt: verifies the server's host key; a refusal
/// is kept in [`Client::verdict`] (russh only learns "rejected").
pub(crate) struct Client {
    verifier: Arc<Verifier>,
    pub(crate) verdict: Arc<Mutex<Option<ErrorKind>>>,
    /// Why the connection ended, once it has (russh's handle only learns that it did).
    pub(crate) lost: Lost,
}

/// Why a connection ended, once it has.
pub(crate) type Lost = Arc<Mutex<Option<Ended>>>;

/// What ended a connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Ended {
    /// The server closed the connection without a word (end of stream, reset).
    ServerClosed,
    /// The server sent a disconnect message: its text, else its reason code.
    ServerDisconnected(String),
    /// The server sent a packet larger than any client takes; probe closed the connection.
    Oversized(usize),
    /// Anything else, in russh's words.
    Lost(String),
}

impl std::fmt::Display for Ended {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Ended::ServerClosed => write!(f, "the server closed the connection"),
            Ended::ServerDisconnected(why) => write!(f, "the server disconnected: {why}"),
            Ended::Oversized(n) => write!(
                f,
                "the server sent a packet of {}, over the {} an SSH packet may be, and probe \
                 closed the connection",
                size(*n),
                size(PACKET_LIMIT)
            ),
            Ended::Lost(why) => write!(f, "the connection was lost ({why})"),
        }
    }
}

impl Client {
    pub(crate) fn new(verifier: Verifier) -> Client {
        Client {
            verifier: Arc::new(verifier),
            verdict: Arc::new(Mutex::new(None)),
            lost: Arc::new(Mutex::new(None)),
        }
    }
}

/// The most a packet may be (RFC 4253 asks for 32 KiB; russh and OpenSSH take 256 KiB).
const PACKET_LIMIT: usize = 256 * 1024;

/// What ended a connection.
fn ended(reason: &client::DisconnectReason<russh::Error>) -> Ended {
    match reason {
        client::DisconnectReason::ReceivedDisconnect(info) => {
            let message = clean(&info.message);
            Ended::ServerDisconnected(if message.is_empty() {
                format!("{:?}", info.reason_code)
            } else {
                message
            })
        }
        client::DisconnectReason::Error(russh::Error::PacketSize(n)) if *n > PACKET_LIMIT => {
            Ended::Oversized(*n)
        }
        client::DisconnectReason::Error(russh::Error::HUP | russh::Error::Disconnect) => {
            Ended::ServerClosed
        }
        client::DisconnectReason::Error(russh::Error::IO(io))
            if matches!(
                io.kind(),
                std::io::ErrorKind::UnexpectedEof
                    | std::io::ErrorKind::ConnectionReset
                    | std::io::ErrorKind::BrokenPipe
            ) =>
        {
            Ended::ServerClosed
        }
        client::DisconnectReason::Error(e) => Ended::Lost(clean(&e.to_string())),
    }
}

/// A byte count as people say it: `1.0 MiB`, `256 KiB`, `300 bytes`.
fn size(n: usize) -> String {
    const KIB: usize = 1024;
    const MIB: usize = 1024 * 1024;
    if n >= MIB {
        format!("{:.1} MiB", n as f64 / MIB as f64)
    } else if n >= KIB && n.is_multiple_of(KIB) {
        format!("{} KiB", n / KIB)
    } else if n >= KIB {
        format!("{:.1} KiB", n as f64 / KIB as f64)
    } else {
        format!("{n} bytes")
    }
}

/// What one host's keys are checked against.
pub(crate) struct Verifier {
    /// Display name of the host.
    name: String,
    /// Names looked up in known_hosts.
    lookup: Vec<String>,
    /// Bare host name certificates must be issued for.
    principal: String,
    known: KnownHosts,
    files_desc: String,
    strict: Strict,
    write_to: Option<PathBuf>,
    notices: Arc<Mutex<Vec<String>>>,
}

impl Verifier {
    /// The verifier of a resolved host: its known_hosts files loaded, the names to look up
    /// (`HostKeyAlias`, else the host and port as OpenSSH writes them).
    pub(crate) fn for_host(s: &HostSettings, notices: Arc<Mutex<Vec<String>>>) -> Verifier {
        let mut files: Vec<PathBuf> = s.user_known_hosts.clone();
        files.extend(s.global_known_hosts.iter().cloned());
        let known = KnownHosts::load(&files);
        let lookup = match &s.host_key_alias {
            Some(alias) => vec![alias.to_ascii_lowercase()],
            None => known_hosts::lookup_names(&s.hostname, s.port),
        };
        let files_desc = if s.user_known_hosts.is_empty() {
            "known_hosts".to_string()
        } else {
            s.user_known_hosts
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        };
        Verifier {
            name: s.alias.clone(),
            principal: s
                .host_key_alias
                .clone()
                .unwrap_or_else(|| s.hostname.clone()),
            lookup,
            known,
            files_desc,
            strict: s.strict,
            write_to: s.user_known_hosts.first().cloned(),
            notices,
        }
    }

    /// The (plain, certificate) host key algorithms to offer this host.
    pub(crate) fn preferences(
        &self,
        configured: Option<&[String]>,
    ) -> Result<(Vec<Algorithm>, Vec<Algorithm>), ErrorKind> {
        host_key_preferences(
            configured,
            &self.known.known_algorithms(&self.lookup),
            self.known.has_cert_authority(&self.lookup),
        )
    }

    /// The known_hosts verdict on what the server presented, and its plain key.
    fn verdict(&self, server_key: &PublicKeyOrCertificate) -> (Verdict, russh::keys::PublicKey) {
        match server_key {
            PublicKeyOrCertificate::PublicKey { key, .. } => {
                (self.known.check_key(&self.lookup, key), key.clone())
            }
            PublicKeyOrCertificate::Certificate(cert) => {
                let plain = russh::keys::PublicKey::new(cert.public_key().clone(), "");
                match self
                    .known
                    .check_certificate(&self.lookup, &self.principal, cert)
                {
                    Verdict::BadCertificate(why) => {
                        match self.known.check_key(&self.lookup, &plain) {
                            ok @ Verdict::Known(_) => (ok, plain),
                            _ => (Verdict::BadCertificate(why), plain),
                        }
                    }
                    other => (other, plain),
                }
            }
        }
    }

    /// Accepts (`Ok`) or refuses (`Err`, the reason) a key with its verdict; an unknown key
    /// under accept-new is recorded first.
    fn decide(&self, verdict: Verdict, key: &russh::keys::PublicKey) -> Result<(), ErrorKind> {
        let key_type = key.algorithm().as_str().to_string();
        let fingerprint = key.fingerprint(HashAlg::Sha256).to_string();
        let at = |loc: known_hosts::Location| {
            Box::new(KeyAt {
                name: self.name.clone(),
                key_type: key_type.clone(),
                fingerprint: fingerprint.clone(),
                file: loc.file,
                line: loc.line,
            })
        };
        match verdict {
            Verdict::Known(_) | Verdict::CertTrusted(_) => Ok(()),
            Verdict::Revoked(loc) => Err(ErrorKind::HostKeyRevoked(at(loc))),
            Verdict::Changed(loc) => Err(ErrorKind::HostKeyChanged(at(loc))),
            Verdict::BadCertificate(reason) => Err(ErrorKind::HostCertificate {
                name: self.name.clone(),
                reason,
            }),
            Verdict::Unknown { .. } if self.strict == Strict::Yes || self.write_to.is_none() => {
                Err(ErrorKind::UnknownHostKey(Box::new(UnknownKey {
                    name: self.lookup.first().cloned().unwrap_or_default(),
                    key_type,
                    fingerprint,
                    files: self.files_desc.clone(),
                })))
            }
            Verdict::Unknown { .. } => self.record(key, &key_type, &fingerprint),
        }
    }

    /// Appends an unknown key to the user's known_hosts (accept-new), with a notice; when
    /// another connection recorded the host first, decides on what that one wrote.
    fn record(
        &self,
        key: &russh::keys::PublicKey,
        key_type: &str,
        fingerprint: &str,
    ) -> Result<(), ErrorKind> {
        let file = self.write_to.clone().unwrap_or_default();
        let name = self.lookup.first().cloned().unwrap_or_default();
        match known_hosts::record_key(&file, &self.lookup, key) {
            // Never `Unknown`, so this does not come back here.
            Ok(Recorded::Meanwhile(verdict)) => self.decide(verdict, key),
            Ok(Recorded::Appended(line)) => {
                if let Ok(mut n) = self.notices.lock() {
                    n.push(format!(
                        "added {key_type} key {fingerprint} for {name} to {}:{line}",
                        file.display()
                    ));
                }
                Ok(())
            }
            Err(e) => Err(ErrorKind::KnownHostsWrite {
                file,
                cause: e.to_string(),
            }),
        }
    }
}

impl client::Handler for Client {
    type Error = russh::Error;

    async fn check_server_key(
        &mut self,
        server_key: &PublicKeyOrCertificate,
    ) -> Result<bool, Self::Error> {
        let (verdict, key) = self.verifier.verdict(server_key);
        match self.verifier.decide(verdict, &key) {
            Ok(()) => Ok(true),
            Err(kind) => {
                if let Ok(mut slot) = self.verdict.lock() {
                    *slot = Some(kind);
                }
                Ok(false)
            }
        }
    }

    async fn disconnected(
        &mut self,
        reason: client::DisconnectReason<Self::Error>,
    ) -> Result<(), Self::Error> {
        if let Ok(mut slot) = self.lost.lock() {
            *slot = Some(ended(&reason));
        }
        match reason {
            client::DisconnectReason::ReceivedDisconnect(_) => Ok(()),
            client::DisconnectReason::Error(e) => Err(e),
        }
    }

    // Channels the server opens towards us. We ask for none of them (no agent or X11
    // forwarding, no remote forwards, no sessions), so each is refused as OpenSSH's client
    // refuses what it did not ask for; russh's defaults would accept them.

    async fn server_channel_open_agent_forward(
        &mut self,
        _channel: Channel<client::Msg>,
        reply: ChannelOpenHandle,
        _session: &mut client::Session,
    ) -> Result<(), Self::Error> {
        refuse(reply, "auth-agent@openssh.com").await;
        Ok(())
    }

    async fn server_channel_open_x11(
        &mut self,
        _channel: Channel<client::Msg>,
        _originator_address: &str,
        _originator_port: u32,
        reply: ChannelOpenHandle,
        _session: &mut client::Session,
    ) -> Result<(), Self::Error> {
        refuse(reply, "x11").await;
        Ok(())
    }

    async fn server_channel_open_forwarded_tcpip(
        &mut self,
        _channel: Channel<client::Msg>,
        _connected_address: &str,
        _connected_port: u32,
        _originator_address: &str,
        _originator_port: u32,
        reply: ChannelOpenHandle,
        _session: &mut client::Session,
    ) -> Result<(), Self::Error> {
        refuse(reply, "forwarded-tcpip").await;
        Ok(())
    }

    async fn server_channel_open_forwarded_streamlocal(
        &mut self,
        _channel: Channel<client::Msg>,
        _socket_path: &str,
        reply: ChannelOpenHandle,
        _session: &mut client::Session,
    ) -> Result<(), Self::Error> {
        refuse(reply, "forwarded-streamlocal@openssh.com").await;
        Ok(())
    }

    async fn server_channel_open_direct_tcpip(
        &mut self,
        _channel: Channel<client::Msg>,
        _host_to_connect: &str,
        _port_to_connect: u32,
        _originator_address: &str,
        _originator_port: u32,
        reply: ChannelOpenHandle,
        _session: &mut client::Session,
    ) -> Result<(), Self::Error> {
        refuse(reply, "direct-tcpip").await;
        Ok(())
    }

    async fn server_channel_open_direct_streamlocal(
        &mut self,
        _channel: Channel<client::Msg>,
        _socket_path: &str,
        reply: ChannelOpenHandle,
        _session: &mut client::Session,
    ) -> Result<(), Self::Error> {
        refuse(reply, "direct-streamlocal@openssh.com").await;
        Ok(())
    }

    async fn server_channel_open_session(
        &mut self,
        _channel: Channel<client::Msg>,
        reply: ChannelOpenHandle,
        _session: &mut client::Session,
    ) -> Result<(), Self::Error> {
        refuse(reply, "session").await;
        Ok(())
    }
}

/// Refuses a channel the server opened, as administratively prohibited (OpenSSH's answer).
async fn refuse(reply: ChannelOpenHandle, kind: &str) {
    tracing::warn!("the server opened a {kind} channel, which was not asked for; refused");
    reply
        .reject(ChannelOpenFailure::AdministrativelyProhibited)
        .await;
}

fn key_order(first: &[Algorithm]) -> Vec<Algorithm> {
    let mut out: Vec<Algorithm> = first.to_vec();
    for a in russh::Preferred::DEFAULT.key.iter() {
        if !out.contains(a) {
            out.push(a.clone());
        }
    }
    out
}

/// Host certificate algorithms we can verify, most preferred first.
fn certificate_algorithms() -> Vec<Algorithm> {
    vec![
        Algorithm::Ed25519,
        Algorithm::Ecdsa {
            curve: EcdsaCurve::NistP256,
        },
        Algorithm::Ecdsa {
            curve: EcdsaCurve::NistP384,
        },
        Algorithm::Ecdsa {
            curve: EcdsaCurve::NistP521,
        },
        Algorithm::Rsa {
            hash: Some(HashAlg::Sha512),
        },
        Algorithm::Rsa {
            hash: Some(HashAlg::Sha256),
        },
    ]
}

/// The host key algorithms to offer, plain and certificate. With `HostKeyAlgorithms`
/// configured: those of the list this client supports, in the configured order (OpenSSH does not
/// reorder an explicit list). Otherwise OpenSSH's `order_hostkeyalgs`: the algorithms already
/// known for the host first, then the defaults. Certificate algorithms only when a
/// `@cert-authority` line applies to the host (a certificate is otherwise of no use to us).
fn host_key_preferences(
    configured: Option<&[String]>,
    known_first: &[Algorithm],
    with_certificates: bool,
) -> Result<(Vec<Algorithm>, Vec<Algorithm>), ErrorKind> {
    let supported_certs = certificate_algorithms();
    let Some(list) = configured else {
        let certs = if with_certificates {
            supported_certs
        } else {
            Vec::new()
        };
        return Ok((key_order(known_first), certs));
    };
    let mut keys: Vec<Algorithm> = Vec::new();
    let mut certs: Vec<Algorithm> = Vec::new();
    for name in list {
        if name.ends_with("-cert-v01@openssh.com") {
            if let Ok(a) = Algorithm::new_certificate(name)
                && supported_certs.contains(&a)
                && !certs.contains(&a)
            {
                certs.push(a);
            }
        } else if let Ok(a) = Algorithm::new(name)
            && russh::Preferred::DEFAULT.key.contains(&a)
            && !keys.contains(&a)
        {
            keys.push(a);
        }
    }
    if !with_certificates {
        certs.clear();
    }
    if keys.is_empty() && certs.is_empty() {
        return Err(ErrorKind::Config(format!(
            "HostKeyAlgorithms {}: none of these is supported here",
            list.join(",")
        )));
    }
    Ok((keys, certs))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_and_an_oversized_packet_read_as_people_say_them() {
        assert_eq!(size(300), "300 bytes");
        assert_eq!(size(256 * 1024), "256 KiB");
        assert_eq!(size(300 * 1024 + 512), "300.5 KiB");
        assert_eq!(size(1024 * 1024 + 40), "1.0 MiB");
        let big = ended(&client::DisconnectReason::Error(russh::Error::PacketSize(
            1024 * 1024 + 40,
        )));
        assert_eq!(
            big.to_string(),
            "the server sent a packet of 1.0 MiB, over the 256 KiB an SSH packet may be, and \
             probe closed the connection"
        );
        let eof = std::io::Error::new(std::io::ErrorKind::UnexpectedEof, "early eof");
        assert_eq!(
            ended(&client::DisconnectReason::Error(russh::Error::IO(eof))),
            Ended::ServerClosed
        );
        let other = ended(&client::DisconnectReason::Error(russh::Error::WrongChannel));
        assert!(
            other.to_string().starts_with("the connection was lost ("),
            "{other}"
        );
    }
}
