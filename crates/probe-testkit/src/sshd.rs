//! A real OpenSSH server on a loopback address, with its own config, host keys, authorized_keys
//! and PidFile in a temporary directory. Stopped by PID when dropped.

use std::fmt::Write as _;
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::keys::KeyPair;

/// Debian's server, by absolute path (sshd refuses to re-exec otherwise).
pub const SSHD: &str = "/usr/sbin/sshd";

/// How long a start waits for sshd to accept connections. A fixture host's sshd comes up after
/// its namespace's setup (copies, mounts, `start.sh`), which takes a second on a quiet machine
/// and well over 10 s at a load average of 60-100; the wait ends at the first connection, so a
/// generous bound costs nothing when it is quiet.
const READY_WAIT: Duration = Duration::from_secs(120);

/// How to start one server.
#[derive(Debug, Clone)]
pub struct SshdOptions {
    /// Loopback address to listen on, 127.0.0.x.
    pub addr: Ipv4Addr,
    /// Port; `None` picks a free one.
    pub port: Option<u16>,
    /// Public key lines accepted for every user.
    pub authorized_keys: Vec<String>,
    /// Extra `sshd_config` lines (`MaxSessions 20`, ...).
    pub extra_config: String,
    /// Wrap the server start (e.g. `unshare ... sh -c`), given the full sshd command line. The
    /// wrapper must keep sshd in the foreground so the child's PID is the server's.
    pub wrapper: Option<Vec<String>>,
}

impl Default for SshdOptions {
    fn default() -> Self {
        SshdOptions {
            addr: Ipv4Addr::new(127, 0, 0, 1),
            port: None,
            authorized_keys: Vec::new(),
            extra_config: String::new(),
            wrapper: None,
        }
    }
}

/// A running sshd. Dropping it kills the server.
pub struct Sshd {
    pub dir: tempfile::TempDir,
    pub addr: Ipv4Addr,
    pub port: u16,
    /// Host public keys as `.pub` lines (ed25519 first, then rsa, then ecdsa).
    pub host_keys: Vec<String>,
    child: Child,
}

impl Sshd {
    /// Starts a server and waits until it accepts connections.
    pub fn start(opts: SshdOptions) -> Sshd {
        crate::require_openssh().unwrap_or_else(|e| panic!("{e}"));
        std::fs::create_dir_all("/run/sshd").expect("mkdir /run/sshd");
        let dir = crate::owned_tempdir("probe-sshd-");
        let port = opts.port.unwrap_or_else(|| free_port(opts.addr));
        let mut host_keys = Vec::new();
        let mut config = String::new();
        writeln!(config, "ListenAddress {}:{}", opts.addr, port).unwrap();
        for kind in ["ed25519", "rsa", "ecdsa"] {
            let pair = KeyPair::generate(dir.path(), &format!("host_{kind}"), kind, "", None);
            writeln!(config, "HostKey {}", pair.private.display()).unwrap();
            host_keys.push(pair.public);
        }
        let authorized = dir.path().join("authorized_keys");
        std::fs::write(&authorized, opts.authorized_keys.join("\n") + "\n")
            .expect("write authorized_keys");
        let pid_file = dir.path().join("sshd.pid");
        writeln!(config, "PidFile {}", pid_file.display()).unwrap();
        writeln!(config, "AuthorizedKeysFile {}", authorized.display()).unwrap();
        config.push_str(
            "UsePAM no\nPermitRootLogin prohibit-password\nPasswordAuthentication no\n\
             KbdInteractiveAuthentication no\nPubkeyAuthentication yes\nStrictModes no\n\
             MaxStartups 1000:30:1000\nMaxSessions 20\nLogLevel VERBOSE\n",
        );
        config.push_str(&opts.extra_config);
        config.push('\n');
        let config_path = dir.path().join("sshd_config");
        std::fs::write(&config_path, config).expect("write sshd_config");
        let log = dir.path().join("sshd.log");
        let sshd_argv: Vec<String> = vec![
            SSHD.into(),
            "-D".into(),
            "-f".into(),
            config_path.display().to_string(),
            "-E".into(),
            log.display().to_string(),
        ];
        let argv = match &opts.wrapper {
            Some(wrapper) => {
                let mut argv = wrapper.clone();
                argv.extend(sshd_argv);
                argv
            }
            None => sshd_argv,
        };
        let child = Command::new(&argv[0])
            .args(&argv[1..])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap_or_else(|e| panic!("start {argv:?}: {e}"));
        let mut sshd = Sshd {
            dir,
            addr: opts.addr,
            port,
            host_keys,
            child,
        };
        sshd.wait_ready();
        sshd
    }

    fn wait_ready(&mut self) {
        let deadline = Instant::now() + READY_WAIT;
        let addr = SocketAddr::from((self.addr, self.port));
        while Instant::now() < deadline {
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!("sshd exited early ({status}); log:\n{}", self.log());
            }
            if TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        panic!(
            "sshd on {addr} not ready after {} s; log:\n{}",
            READY_WAIT.as_secs(),
            self.log()
        );
    }

    /// PID of the process started (sshd itself, or the wrapper holding it).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn config_path(&self) -> PathBuf {
        self.dir.path().join("sshd_config")
    }

    /// The server's log (`-E`).
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("sshd.log")).unwrap_or_default()
    }

    /// `host:port` as a target string (`127.0.0.1` with a non-22 port needs the port).
    pub fn target(&self, user: &str) -> String {
        format!("{user}@{}:{}", self.addr, self.port)
    }

    /// The known_hosts name of this server: `[127.0.0.1]:2222`.
    pub fn known_hosts_name(&self) -> String {
        if self.port == 22 {
            self.addr.to_string()
        } else {
            format!("[{}]:{}", self.addr, self.port)
        }
    }

    /// known_hosts lines for every host key of this server.
    pub fn known_hosts_lines(&self) -> String {
        self.host_keys
            .iter()
            .map(|k| {
                let mut parts = k.split_whitespace();
                format!(
                    "{} {} {}\n",
                    self.known_hosts_name(),
                    parts.next().unwrap(),
                    parts.next().unwrap()
                )
            })
            .collect()
    }

    /// Writes a known_hosts file holding this server's keys and returns its path.
    pub fn write_known_hosts(&self, path: &Path) {
        std::fs::write(path, self.known_hosts_lines()).expect("write known_hosts");
    }
}

impl Drop for Sshd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A port that was free a moment ago on `addr`.
pub fn free_port(addr: Ipv4Addr) -> u16 {
    let listener = TcpListener::bind((addr, 0)).expect("bind a free port");
    listener.local_addr().expect("local addr").port()
}
