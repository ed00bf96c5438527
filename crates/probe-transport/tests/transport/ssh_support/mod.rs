//! Shared by the `ssh_*` tests: a real sshd, a client key, and a client config file in a temp
//! dir, so no test touches the real `~/.ssh`.
#![allow(dead_code)]

use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use probe_testkit::{KeyPair, Sshd, SshdOptions};
use probe_transport::{ConnectOptions, Connection, ExecRequest};

pub struct Env {
    pub dir: tempfile::TempDir,
    pub key: KeyPair,
    pub sshd: Sshd,
    pub config: PathBuf,
    pub known_hosts: PathBuf,
}

pub fn key(dir: &Path, name: &str, kind: &str, pass: &str, format: Option<&str>) -> KeyPair {
    KeyPair::generate(dir, name, kind, pass, format)
}

pub fn sshd_at(addr: Ipv4Addr, authorized: Vec<String>, extra: &str) -> Sshd {
    Sshd::start(SshdOptions {
        addr,
        authorized_keys: authorized,
        extra_config: extra.to_string(),
        ..Default::default()
    })
}

impl Env {
    /// An sshd on 127.0.0.1 accepting one ed25519 client key; known_hosts already has its keys.
    pub fn new() -> Env {
        Env::with_key("ed25519", "", None)
    }

    pub fn with_key(kind: &str, pass: &str, format: Option<&str>) -> Env {
        Env::with_server(kind, pass, format, "")
    }

    /// Like [`Env::new`], with extra `sshd_config` lines (`Match all` blocks override).
    pub fn with_server(kind: &str, pass: &str, format: Option<&str>, extra: &str) -> Env {
        let dir = tempfile::tempdir().unwrap();
        let key = key(dir.path(), "id_client", kind, pass, format);
        let sshd = sshd_at(Ipv4Addr::LOCALHOST, vec![key.public.clone()], extra);
        let known_hosts = dir.path().join("known_hosts");
        sshd.write_known_hosts(&known_hosts);
        let config = dir.path().join("ssh_config");
        let env = Env {
            dir,
            key,
            sshd,
            config,
            known_hosts,
        };
        env.write_config("");
        env
    }

    /// Writes the client config: `extra` first (wins), then defaults for every host.
    pub fn write_config(&self, extra: &str) {
        let text = format!(
            "{extra}\nHost *\n  User root\n  IdentityFile {}\n  UserKnownHostsFile {}\n  IdentityAgent none\n  ConnectTimeout 5\n",
            self.key.private.display(),
            self.known_hosts.display()
        );
        std::fs::write(&self.config, text).unwrap();
    }

    pub fn opts(&self) -> ConnectOptions {
        ConnectOptions {
            config_file: Some(self.config.clone()),
            ..Default::default()
        }
    }

    pub fn target(&self) -> String {
        self.sshd.target("root")
    }

    pub async fn connect(&self) -> Connection {
        match probe_transport::connect(&self.target(), &self.opts()).await {
            Ok(c) => c,
            Err(e) => panic!("connect failed: {e}\nsshd log:\n{}", self.sshd.log()),
        }
    }
}

pub fn req(cmd: &str) -> ExecRequest {
    ExecRequest::new(cmd).with_timeout(Duration::from_secs(20))
}

pub fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// The last line of stdout (root's .bashrc on this machine may print junk before it).
pub fn last_line(b: &[u8]) -> String {
    text(b).lines().last().unwrap_or("").to_string()
}
