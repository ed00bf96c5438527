//! A fleet simulator: one process serving thousands of SSH endpoints on loopback addresses
//! (127.77.x.y, one port), so that a benchmark or a test can audit a fleet far larger than the
//! fixture hosts allow and measure the client rather than the hosts.
//!
//! What it models:
//! - **Real SSH** (russh's server side): TCP, version exchange, key exchange, a host key of its
//!   own per host (ed25519, checked by the client against the known_hosts file the simulator
//!   writes, strict checking on), public-key authentication of the one client key, session
//!   channels, exec requests, stdin, stdout, exit status, EOF and close, and refused
//!   `direct-tcpip` channels (so asking a model server finds none).
//! - **Recorded collections**: every section a real collection of a fixture host printed
//!   ([`recording`]), answered for each `sec` call of the script a channel receives, with that
//!   script's boundary and the host's own machine-id and host name (same length as the
//!   recorded one) put in. Any grouping of sections works: probe's groups and the one combined
//!   script `ssh HOST sh -s` sends alike. A section whose `sec` call changed since it was
//!   recorded is not answered and counted as stale ([`SimStats::stale`]); a recording made with
//!   another collection script fails [`Recording::check_fresh`].
//! - **Time without work**: each channel waits the configured latency plus its host's own
//!   jitter, then sends its answer; the remote side waits instead of computing, so the
//!   simulator's CPU per session is the SSH handshake, the cipher and a copy of the answer.
//! - **Misbehaving hosts** ([`Behaviour`]): an exact share refuses connections, never speaks
//!   SSH (time out), stalls every command, serves a changed host key, drifts between runs
//!   ([`SimFleet::next_run`]), or closes one group's channel without an exit status (its
//!   sections lost, the audit's `partial`).
//!
//! What it does not model: no shell and no filesystem (a script is never run: its `sec` calls
//! only select recorded sections, so round-2 answers are the recorded host's whatever the
//! round-2 inputs say), no processes or their CPU on the host, no per-section timing (one delay
//! per channel), no `MaxSessions` limit, no network loss or bandwidth limit, no model server
//! behind a forwarded port, and one recorded host for the whole fleet: every host's sections
//! other than its identity are the same bytes, so a content-addressed store shares them
//! across hosts in a way a real fleet would not.

mod behaviour;
pub mod recording;
pub mod replay;
mod server;

use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

pub use behaviour::{Behaviour, DROPPED_SECTION, Shares, assign};
pub use recording::{Exchange, RecordMeta, Recording, RecordingError, fingerprint};
use russh::keys::PrivateKey;
use russh::keys::ssh_key::private::Ed25519Keypair;

use crate::KeyPair;

/// The recording of `sglang-story` committed with the testkit.
pub fn default_recording_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("recordings/sglang-story.rec")
}

/// How to simulate.
#[derive(Debug, Clone)]
pub struct SimOptions {
    pub hosts: usize,
    /// Every channel waits this long before it answers...
    pub latency: Duration,
    /// ...plus its host's own share of this (fixed per host, uniform in `0..=jitter`).
    pub jitter: Duration,
    pub shares: Shares,
    pub seed: u64,
    /// Second octet of the addresses (127.SUBNET.x.y); each host gets one address.
    pub subnet: u8,
}

impl Default for SimOptions {
    fn default() -> Self {
        SimOptions {
            hosts: 100,
            latency: Duration::from_millis(50),
            jitter: Duration::from_millis(20),
            shares: Shares::default(),
            seed: 1,
            subnet: 77,
        }
    }
}

/// One simulated host.
#[derive(Debug, Clone)]
pub struct SimHost {
    /// Inventory name (`sim00042`).
    pub name: String,
    pub addr: Ipv4Addr,
    pub behaviour: Behaviour,
    pub machine_id: String,
    pub hostname: String,
}

/// What the simulator served so far.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SimStats {
    pub connections: u64,
    pub authenticated: u64,
    pub execs: u64,
    pub sections: u64,
    pub stale: u64,
    pub stale_names: Vec<String>,
    pub bytes_out: u64,
    pub peak_sessions: u64,
}

/// A running simulated fleet; stops when dropped.
pub struct SimFleet {
    pub hosts: Vec<SimHost>,
    pub port: u16,
    shared: Arc<server::Shared>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
    client_key: KeyPair,
    dir: tempfile::TempDir,
}

/// The address of host `i`: 127.SUBNET.(i / 250).(i % 250 + 1).
fn address(subnet: u8, i: usize) -> Ipv4Addr {
    Ipv4Addr::new(127, subnet, (i / 250) as u8, (i % 250 + 1) as u8)
}

/// A deterministic ed25519 key.
fn host_key(seed: u64, what: &str, i: usize) -> PrivateKey {
    let mut s = [0u8; 32];
    for (k, chunk) in s.chunks_mut(8).enumerate() {
        chunk.copy_from_slice(&behaviour::mix(seed, what, i * 4 + k).to_le_bytes());
    }
    PrivateKey::from(Ed25519Keypair::from_seed(&s))
}

/// A same-length stand-in for `recorded`, unique to host `i`.
fn name_like(recorded: &str, i: usize) -> String {
    let digits = format!("{i}");
    let width = recorded.len().max(digits.len() + 4);
    format!("sim-{digits:0>w$}", w = width - 4)
}

impl SimFleet {
    /// Starts `opts.hosts` hosts answering with `recording`, on their own thread (one tokio
    /// worker: the simulator never takes more than one core from the client it serves).
    pub fn start(recording: Recording, opts: &SimOptions) -> SimFleet {
        assert!(opts.hosts <= 250 * 256, "at most 64,000 simulated hosts");
        let dir = crate::owned_tempdir("probe-sim-");
        let client_key = KeyPair::generate(dir.path(), "id_ed25519", "ed25519", "", None);
        let client_public =
            russh::keys::PublicKey::from_openssh(&client_key.public).expect("client public key");
        let behaviours = assign(opts.hosts, &opts.shares, opts.seed);
        let mut hosts = Vec::with_capacity(opts.hosts);
        let mut ctxs = Vec::with_capacity(opts.hosts);
        let mut known = String::new();
        let jitter_ms = opts.jitter.as_millis() as u64;
        let port = pick_port(opts.subnet);
        for (i, behaviour) in behaviours.into_iter().enumerate() {
            let addr = address(opts.subnet, i);
            let key = host_key(opts.seed, "host-key", i);
            let line = key.public_key().to_openssh().expect("public key");
            known.push_str(&format!("[{addr}]:{port} {line}\n"));
            let served = if behaviour == Behaviour::ChangedKey {
                host_key(opts.seed, "changed-key", i)
            } else {
                key
            };
            let machine_id =
                recording::hex(&behaviour::mix(opts.seed, "machine-id", i).to_le_bytes())
                    + &recording::hex(&behaviour::mix(opts.seed, "machine-id-2", i).to_le_bytes());
            let machine_id = machine_id[..recording.machine_id.len().min(32)].to_string();
            let hostname = name_like(&recording.hostname, i);
            let jitter =
                Duration::from_millis(behaviour::mix(opts.seed, "jitter", i) % (jitter_ms + 1));
            ctxs.push(Arc::new(server::HostCtx {
                behaviour,
                machine_id: machine_id.clone(),
                hostname: hostname.clone(),
                jitter,
                config: server::config(served),
            }));
            hosts.push(SimHost {
                name: format!("sim{i:05}"),
                addr,
                behaviour,
                machine_id,
                hostname,
            });
        }
        let shared = Arc::new(server::Shared {
            recording: Arc::new(recording),
            latency: opts.latency,
            client_key: client_public,
            run: Default::default(),
            counters: Default::default(),
            stale_names: Default::default(),
        });
        let (stop, thread) = spawn_runtime(&hosts, ctxs, shared.clone(), port);
        let fleet = SimFleet {
            hosts,
            port,
            shared,
            stop: Some(stop),
            thread: Some(thread),
            client_key,
            dir,
        };
        std::fs::write(fleet.known_hosts(), known).expect("write known_hosts");
        std::fs::write(fleet.ssh_config(), fleet.ssh_config_text()).expect("write ssh_config");
        fleet
    }

    /// Drifting hosts change (odd runs) or change back (even runs) from now on.
    pub fn next_run(&self) {
        self.shared.run.fetch_add(1, Ordering::SeqCst);
    }

    pub fn stats(&self) -> SimStats {
        let c = &self.shared.counters;
        let get = |a: &std::sync::atomic::AtomicU64| a.load(Ordering::Relaxed);
        SimStats {
            connections: get(&c.connections),
            authenticated: get(&c.authenticated),
            execs: get(&c.execs),
            sections: get(&c.sections),
            stale: get(&c.stale),
            stale_names: self
                .shared
                .stale_names
                .lock()
                .map(|v| v.clone())
                .unwrap_or_default(),
            bytes_out: get(&c.bytes_out),
            peak_sessions: get(&c.peak_open),
        }
    }

    /// The recording the hosts answer with.
    pub fn recording(&self) -> &Recording {
        &self.shared.recording
    }

    pub fn client_key(&self) -> &KeyPair {
        &self.client_key
    }

    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// known_hosts with every host's (unchanged) key, `[addr]:port` as OpenSSH writes it.
    pub fn known_hosts(&self) -> PathBuf {
        self.dir.path().join("known_hosts")
    }

    /// A client config for every address: user, port, the client key, the known_hosts file,
    /// strict host-key checking, batch mode and a 5 s connect timeout.
    pub fn ssh_config(&self) -> PathBuf {
        self.dir.path().join("ssh_config")
    }

    fn ssh_config_text(&self) -> String {
        format!(
            "Host *\n  User root\n  Port {}\n  IdentityFile {}\n  IdentitiesOnly yes\n  \
             UserKnownHostsFile {}\n  StrictHostKeyChecking yes\n  BatchMode yes\n  \
             ConnectTimeout 5\n  LogLevel ERROR\n",
            self.port,
            self.client_key.private.display(),
            self.known_hosts().display()
        )
    }

    /// A probe TOML inventory of the first `n` hosts, all in group `sim`.
    pub fn inventory_toml(&self, n: usize) -> String {
        let hosts = &self.hosts[..n.min(self.hosts.len())];
        let mut s = String::from("[groups.sim]\nhosts = [\n");
        for h in hosts {
            s.push_str(&format!("  \"{}\",\n", h.name));
        }
        s.push_str("]\n\n");
        for h in hosts {
            s.push_str(&format!("[hosts.{}]\naddress = \"{}\"\n", h.name, h.addr));
        }
        s
    }
}

impl Drop for SimFleet {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// A port free on the first host's address (the same port is then bound on every address).
fn pick_port(subnet: u8) -> u16 {
    let probe = std::net::TcpListener::bind((address(subnet, 0), 0)).expect("bind loopback");
    probe.local_addr().expect("local address").port()
}

fn spawn_runtime(
    hosts: &[SimHost],
    ctxs: Vec<Arc<server::HostCtx>>,
    shared: Arc<server::Shared>,
    port: u16,
) -> (
    tokio::sync::oneshot::Sender<()>,
    std::thread::JoinHandle<()>,
) {
    let addrs: Vec<(Ipv4Addr, Behaviour)> = hosts.iter().map(|h| (h.addr, h.behaviour)).collect();
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let (ready_tx, ready_rx) = std::sync::mpsc::channel::<Result<(), String>>();
    let thread = std::thread::Builder::new()
        .name("probe-sim".into())
        .spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("simulator runtime");
            rt.block_on(async move {
                for ((addr, behaviour), ctx) in addrs.into_iter().zip(ctxs) {
                    if behaviour == Behaviour::Refuse {
                        continue;
                    }
                    match bind(addr, port) {
                        Ok(l) => {
                            tokio::spawn(server::serve(l, ctx, shared.clone()));
                        }
                        Err(e) => {
                            let _ = ready_tx.send(Err(format!("bind {addr}:{port}: {e}")));
                            return;
                        }
                    }
                }
                let _ = ready_tx.send(Ok(()));
                let _ = stop_rx.await;
            });
        })
        .expect("spawn simulator thread");
    match ready_rx.recv() {
        Ok(Ok(())) => {}
        Ok(Err(e)) => panic!("simulator: {e}"),
        Err(_) => panic!("simulator thread died while starting"),
    }
    (stop_tx, thread)
}

fn bind(addr: Ipv4Addr, port: u16) -> std::io::Result<tokio::net::TcpListener> {
    let socket = tokio::net::TcpSocket::new_v4()?;
    socket.set_reuseaddr(true)?;
    socket.bind((addr, port).into())?;
    socket.listen(1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_keep_the_recorded_length() {
        for (recorded, i, expected) in [
            ("sglang-story", 42, "sim-00000042"),
            ("sglang-story", 9999, "sim-00009999"),
            ("ab", 7, "sim-7"),
        ] {
            assert_eq!(name_like(recorded, i), expected);
        }
        assert_eq!(address(77, 0), Ipv4Addr::new(127, 77, 0, 1));
        assert_eq!(address(77, 9999), Ipv4Addr::new(127, 77, 39, 250));
    }
}
