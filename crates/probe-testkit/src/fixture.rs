//! Fixture hosts: a real OpenSSH `sshd` on its own 127.0.0.N inside its own mount, UTS and PID
//! namespaces, with root-owned files bind-mounted over the real paths, real long-running
//! "engine" processes (small Python modules that write realistic log lines and sleep) and
//! stand-ins only for what cannot exist here (`nvidia-smi`, `systemctl`, `journalctl`, `docker`).
//!
//! A host is defined by a directory `fixtures/<name>/` (see `fixtures/README.md`):
//! - `host.conf`: one directive a line (`addr`, `bind`, `user`, `lib`, `mtime`, `chown`, `mode`,
//!   `ready`, `ready-count`), read here (addr, lib, ready, ready-count) and by `fixtures/_lib/setup.sh` (the rest);
//! - `root/`: the files, laid out at their absolute paths (`root/etc/systemd/system/...`);
//! - optional `prepare.sh` (generates content, runs before the bind mounts) and `start.sh` (starts
//!   the processes, runs after them), both sourced by `setup.sh` inside the namespace.
//!
//! The definition is copied into a temporary directory first; everything the namespace changes
//! (ownership, mtimes, generated files, logs) happens in that copy, and the real host's files
//! are only ever covered by bind mounts inside the namespace. Dropping the host kills `unshare`,
//! whose `--kill-child` takes the namespace's PID 1 and with it every process in it.

use std::fmt::Write as _;
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use crate::keys::KeyPair;
use crate::sshd::{Sshd, SshdOptions};

mod definition;

use definition::{Manifest, copy_tree, read_manifest};

/// Every fixture host definition, in address order (127.0.0.11 ...).
pub const ALL: &[&str] = &[
    "sglang-hybrid",
    "vllm-systemd",
    "docker-vllm",
    "bare",
    "hostile",
    "attacks",
    "secrets",
    "vllm-upgrade",
    "gpu-faults",
];

/// `crates/probe-testkit/fixtures`.
pub fn definitions_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures")
}

/// Fails with a clear reason when this machine cannot make the namespaces fixture hosts need
/// (not root, no `unshare`, or a kernel/container that forbids them). Checked once per process.
pub fn require_namespaces() -> Result<(), crate::MachineLacks> {
    static RESULT: std::sync::OnceLock<Result<(), crate::MachineLacks>> =
        std::sync::OnceLock::new();
    RESULT
        .get_or_init(|| {
            let out = Command::new("/usr/bin/unshare")
                .args([
                    "--mount",
                    "--uts",
                    "--pid",
                    "--fork",
                    "--mount-proc",
                    "true",
                ])
                .output()
                .map_err(|e| {
                    crate::MachineLacks(format!("fixture hosts need util-linux unshare: {e}"))
                })?;
            if out.status.success() {
                Ok(())
            } else {
                Err(crate::MachineLacks(format!(
                    "fixture hosts need root and mount/UTS/PID namespaces: unshare failed: {}",
                    String::from_utf8_lossy(&out.stderr).trim()
                )))
            }
        })
        .clone()
}

/// One running fixture host.
pub struct FixtureHost {
    /// Definition name (`sglang-hybrid`).
    pub name: String,
    /// ssh alias in [`FixtureHost::ssh_config`] (`fx-sglang-hybrid`).
    pub alias: String,
    pub addr: Ipv4Addr,
    pub port: u16,
    /// Root of the copied definition; `dir/root` holds the files bind-mounted in the namespace.
    pub dir: PathBuf,
    /// How long `start` took, for reports.
    pub start_time: Duration,
    // Field order matters: the server (and with it the namespace) goes before the temp dirs.
    sshd: Option<Sshd>,
    key: KeyPair,
    client_dir: PathBuf,
    keeper: Option<Keeper>,
    _own_key_dir: Option<tempfile::TempDir>,
    _copy: tempfile::TempDir,
    /// Last: the address is free for another process only once the namespace is gone.
    _addr_lock: crate::addr_lock::AddrLock,
}

/// Where a copy of a definition runs ([`FixtureHost::start_copy`]).
#[derive(Debug, Clone)]
pub struct CopyAt {
    pub addr: Ipv4Addr,
    /// 32 lowercase hex digits.
    pub machine_id: String,
}

impl CopyAt {
    /// Copy `index` on `addr`, its machine-id made from the index.
    pub fn new(addr: Ipv4Addr, index: usize) -> CopyAt {
        CopyAt {
            addr,
            machine_id: format!("{:032x}", 0xc0_0000_u64 + index as u64),
        }
    }

    /// Writes the copy's machine-id into the copied definition `dir` and binds it (a `bind
    /// /etc/machine-id` line added to the copy's `host.conf` unless it has one).
    fn write_identity(&self, dir: &Path) {
        let etc = dir.join("root/etc");
        std::fs::create_dir_all(&etc).expect("mkdir root/etc");
        std::fs::write(etc.join("machine-id"), format!("{}\n", self.machine_id))
            .expect("write machine-id");
        let conf = dir.join("host.conf");
        let text = std::fs::read_to_string(&conf).expect("read host.conf");
        if !text.lines().any(|l| l.trim() == "bind /etc/machine-id") {
            std::fs::write(&conf, format!("{text}\nbind /etc/machine-id\n"))
                .expect("write host.conf");
        }
    }
}
/// How long a start waits for another test process's copy of the same host to go: a whole
/// test binary's run (the e2e suite holds its shared hosts until it ends).
const ADDR_WAIT: Duration = Duration::from_secs(1200);

/// The thread that spawned a host's `unshare`. It lives exactly as long as the host: the
/// parent-death signal fires when the spawning *thread* ends, so hosts may be started from
/// short-lived threads (as `Fleet` does) and still die with the test process, not before.
struct Keeper {
    stop: Option<std::sync::mpsc::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

fn start_kept(opts: SshdOptions) -> (Sshd, Keeper) {
    let (tx_sshd, rx_sshd) = std::sync::mpsc::channel::<Result<Sshd, String>>();
    let (tx_stop, rx_stop) = std::sync::mpsc::channel::<()>();
    let thread = std::thread::spawn(move || {
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| Sshd::start(opts))) {
            Ok(sshd) => {
                let _ = tx_sshd.send(Ok(sshd));
                let _ = rx_stop.recv();
            }
            Err(e) => {
                let msg = e
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_else(|| "sshd start panicked".into());
                let _ = tx_sshd.send(Err(msg));
            }
        }
    });
    match rx_sshd.recv() {
        Ok(Ok(sshd)) => (
            sshd,
            Keeper {
                stop: Some(tx_stop),
                thread: Some(thread),
            },
        ),
        Ok(Err(msg)) => panic!("{msg}"),
        Err(_) => panic!("fixture keeper thread died"),
    }
}

/// Definition `name`'s directory and what its `host.conf` says, once this machine is known to
/// run fixture hosts (OpenSSH, namespaces).
fn checked_definition(name: &str) -> (PathBuf, Manifest) {
    crate::require_openssh().unwrap_or_else(|e| panic!("{e}"));
    require_namespaces().unwrap_or_else(|e| panic!("{e}"));
    let def = definitions_dir().join(name);
    assert!(
        def.join("host.conf").is_file(),
        "no fixture definition {}",
        def.display()
    );
    let manifest = read_manifest(&def.join("host.conf"));
    (def, manifest)
}

/// A temporary copy of definition `def`: its files, a copy's identity, the `_lib` files its
/// manifest names and `setup.sh`.
fn copy_definition(
    name: &str,
    def: &Path,
    manifest: &Manifest,
    as_copy: Option<&CopyAt>,
) -> tempfile::TempDir {
    let copy = crate::owned_tempdir(&format!("probe-fx-{name}-"));
    let dir = copy.path();
    copy_tree(def, dir);
    std::fs::create_dir_all(dir.join("root")).expect("mkdir root");
    if let Some(c) = as_copy {
        c.write_identity(dir);
    }
    let lib = definitions_dir().join("_lib");
    for (src, dst) in &manifest.libs {
        copy_tree(&lib.join(src), &dir.join("root").join(dst));
    }
    copy_tree(&lib.join("setup.sh"), &dir.join("setup.sh"));
    copy
}

/// The command sshd runs under: `setup.sh` of the copy `dir` in new mount, UTS and PID
/// namespaces.
fn unshare_wrapper(dir: &Path, name: &str) -> Vec<String> {
    [
        // If this test process dies without dropping the host (killed, aborted), the kernel
        // kills `unshare` (PR_SET_PDEATHSIG, kept across exec), and --kill-child takes the
        // namespace down with it. The parent is the keeper thread (see `start_kept`).
        "/usr/bin/setpriv",
        "--pdeathsig",
        "KILL",
        "/usr/bin/unshare",
        "--mount",
        "--uts",
        "--pid",
        "--fork",
        "--kill-child",
        "--mount-proc",
        "--propagation",
        "private",
        "/bin/sh",
    ]
    .iter()
    .map(|s| s.to_string())
    .chain([
        dir.join("setup.sh").display().to_string(),
        dir.display().to_string(),
        name.to_string(),
    ])
    .collect()
}

impl FixtureHost {
    /// Starts host `name` with its own client key.
    pub fn start(name: &str) -> FixtureHost {
        Self::start_with_sshd_config(name, "")
    }

    /// Starts host `name` with its own client key and `extra` lines at the end of its
    /// `sshd_config` (a `Match all` block overrides what comes before: `Match all\n  MaxSessions 1`).
    pub fn start_with_sshd_config(name: &str, extra: &str) -> FixtureHost {
        let key_dir = crate::owned_tempdir("probe-fxkey-");
        let key = KeyPair::generate(key_dir.path(), "id_ed25519", "ed25519", "", None);
        let client_dir = key_dir.path().to_path_buf();
        let mut host = Self::start_inner(name, key, &client_dir, extra, None);
        host.write_client_files();
        host._own_key_dir = Some(key_dir);
        host
    }

    /// Starts host `name` accepting `key` (for fleets sharing one key); `client_dir` is where
    /// this host's own `ssh_config`/`known_hosts` go.
    pub fn start_with_key(name: &str, key: KeyPair, client_dir: &Path) -> FixtureHost {
        Self::start_inner(name, key, client_dir, "", None)
    }

    /// Starts a copy of host `name` on `copy.addr` instead of the definition's address, with
    /// its own `/etc/machine-id` (`copy.machine_id`, bound over the real one whatever the
    /// definition binds), so that many copies of one definition run at once as distinct hosts
    /// (the fleet benchmarks). Only for definitions whose servers bind no fixed address and
    /// port (`sglang-story`, not the `serve-*` hosts). `extra` as in
    /// [`FixtureHost::start_with_sshd_config`].
    pub fn start_copy(
        name: &str,
        key: KeyPair,
        client_dir: &Path,
        copy: &CopyAt,
        extra: &str,
    ) -> FixtureHost {
        Self::start_inner(name, key, client_dir, extra, Some(copy))
    }

    fn start_inner(
        name: &str,
        key: KeyPair,
        client_dir: &Path,
        extra: &str,
        as_copy: Option<&CopyAt>,
    ) -> FixtureHost {
        let (def, manifest) = checked_definition(name);
        let addr = as_copy.map(|c| c.addr).or(manifest.addr);
        let addr = addr.unwrap_or_else(|| panic!("{name}: host.conf has no addr"));
        // Another test process running a copy of this host (its servers' ports are fixed) is
        // waited for, not collided with (see `addr_lock`).
        let addr_lock = crate::addr_lock::hold(&addr.to_string(), ADDR_WAIT)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        // The start, not the wait for another process's copy.
        let t0 = Instant::now();
        let copy = copy_definition(name, &def, &manifest, as_copy);
        let dir = copy.path().to_path_buf();
        let (sshd, keeper) = start_kept(SshdOptions {
            addr,
            port: None,
            authorized_keys: vec![key.public.clone()],
            extra_config: format!("MaxSessions 50\n{}{extra}", manifest.sshd_config),
            wrapper: Some(unshare_wrapper(&dir, name)),
        });
        let mut host = FixtureHost {
            name: name.to_string(),
            alias: format!("fx-{name}"),
            addr,
            port: sshd.port,
            dir,
            start_time: Duration::ZERO,
            sshd: Some(sshd),
            key,
            client_dir: client_dir.to_path_buf(),
            keeper: Some(keeper),
            _own_key_dir: None,
            _copy: copy,
            _addr_lock: addr_lock,
        };
        host.wait_ready(&manifest.ready);
        host.start_time = t0.elapsed();
        host
    }

    fn wait_ready(&self, ready: &[(String, String, usize)]) {
        let deadline = Instant::now() + Duration::from_secs(60);
        for (file, text, count) in ready {
            let path = self.dir.join(file);
            loop {
                let content = std::fs::read(&path).unwrap_or_default();
                if String::from_utf8_lossy(&content)
                    .matches(text.as_str())
                    .count()
                    >= *count
                {
                    break;
                }
                assert!(
                    Instant::now() < deadline,
                    "{}: {} never showed {text:?}; sshd log:\n{}",
                    self.name,
                    path.display(),
                    self.sshd().log()
                );
                std::thread::sleep(Duration::from_millis(10));
            }
        }
    }

    /// The `Host` block for this host in an ssh_config.
    pub fn ssh_config_block(&self, key: &Path, known_hosts: &Path) -> String {
        let mut s = String::new();
        writeln!(s, "Host {}", self.alias).unwrap();
        writeln!(s, "  HostName {}", self.addr).unwrap();
        writeln!(s, "  Port {}", self.port).unwrap();
        writeln!(s, "  User root").unwrap();
        writeln!(s, "  IdentityFile {}", key.display()).unwrap();
        writeln!(s, "  IdentitiesOnly yes").unwrap();
        writeln!(s, "  UserKnownHostsFile {}", known_hosts.display()).unwrap();
        writeln!(s, "  StrictHostKeyChecking yes").unwrap();
        s
    }

    fn write_client_files(&self) {
        std::fs::write(self.known_hosts(), self.sshd().known_hosts_lines())
            .expect("write known_hosts");
        std::fs::write(
            self.ssh_config(),
            self.ssh_config_block(&self.key.private, &self.known_hosts()),
        )
        .expect("write ssh_config");
    }

    /// Client ssh_config with `Host <alias>`.
    pub fn ssh_config(&self) -> PathBuf {
        self.client_dir.join(format!("ssh_config.{}", self.name))
    }

    /// known_hosts with this server's host keys (`[127.0.0.N]:PORT ...`).
    pub fn known_hosts(&self) -> PathBuf {
        self.client_dir.join(format!("known_hosts.{}", self.name))
    }

    /// known_hosts lines for this server.
    pub fn known_hosts_lines(&self) -> String {
        self.sshd().known_hosts_lines()
    }

    pub fn client_key(&self) -> &KeyPair {
        &self.key
    }

    /// The underlying server (log, config path, wrapper PID).
    pub fn sshd(&self) -> &Sshd {
        self.sshd.as_ref().expect("fixture host is running")
    }

    /// Runs `cmd` as root on this host through OpenSSH `ssh -F <ssh_config> <alias>`.
    pub fn ssh(&self, cmd: &str) -> Output {
        ssh_with(&self.ssh_config(), &self.alias, cmd)
    }

    /// Runs `cmd` as `user` (any account of the host's passwd; the same client key is accepted
    /// for every user).
    pub fn ssh_as(&self, user: &str, cmd: &str) -> Output {
        Command::new("/usr/bin/ssh")
            .arg("-F")
            .arg(self.ssh_config())
            .args([
                "-o",
                "BatchMode=yes",
                "-o",
                "KexAlgorithms=curve25519-sha256",
                "-l",
                user,
            ])
            .arg(&self.alias)
            .arg(cmd)
            .output()
            .expect("run ssh")
    }

    /// Processes started by the host's `start.sh`: (label, PID inside the namespace), as
    /// recorded in `/usr/local/share/fixture/run/<label>.pid`.
    pub fn pids(&self) -> Vec<(String, u32)> {
        let run = self.dir.join("root/usr/local/share/fixture/run");
        let mut out = Vec::new();
        if let Ok(entries) = std::fs::read_dir(&run) {
            for entry in entries.flatten() {
                let name = entry.file_name().to_string_lossy().to_string();
                if let Some(label) = name.strip_suffix(".pid")
                    && let Ok(text) = std::fs::read_to_string(entry.path())
                    && let Ok(pid) = text.trim().parse()
                {
                    out.push((label.to_string(), pid));
                }
            }
        }
        out.sort();
        out
    }

    /// The namespace PIDs of the launch processes (see [`FixtureHost::pids`]).
    pub fn launcher_pids(&self) -> Vec<u32> {
        self.pids().into_iter().map(|(_, p)| p).collect()
    }

    /// Host-side PIDs of every process of this fixture (the `unshare` wrapper and all its
    /// descendants), for checking that nothing survives a drop.
    pub fn host_pids(&self) -> Vec<u32> {
        descendants(self.sshd().pid())
    }
}

impl Drop for FixtureHost {
    /// Kills the namespace and waits (up to 5 s) until none of its processes is left.
    fn drop(&mut self) {
        let Some(sshd) = self.sshd.take() else { return };
        let pids = descendants(sshd.pid());
        drop(sshd);
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline && pids.iter().any(|p| alive(*p)) {
            std::thread::sleep(Duration::from_millis(5));
        }
        if let Some(mut keeper) = self.keeper.take() {
            keeper.stop.take();
            if let Some(t) = keeper.thread.take() {
                let _ = t.join();
            }
        }
    }
}

/// Whether `pid` exists on the host and is not a zombie.
pub fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => {
            stat.rsplit_once(')')
                .and_then(|(_, r)| r.split_whitespace().next())
                != Some("Z")
        }
        Err(_) => false,
    }
}

/// `root` and all its descendants, from the host's /proc.
pub fn descendants(root: u32) -> Vec<u32> {
    let mut parent_of = Vec::new();
    if let Ok(entries) = std::fs::read_dir("/proc") {
        for entry in entries.flatten() {
            let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
                continue;
            };
            let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
                continue;
            };
            let Some((_, rest)) = stat.rsplit_once(')') else {
                continue;
            };
            if let Some(ppid) = rest
                .split_whitespace()
                .nth(1)
                .and_then(|p| p.parse::<u32>().ok())
            {
                parent_of.push((pid, ppid));
            }
        }
    }
    let mut out = vec![root];
    let mut i = 0;
    while i < out.len() {
        let p = out[i];
        out.extend(parent_of.iter().filter(|(_, pp)| *pp == p).map(|(c, _)| *c));
        i += 1;
    }
    out
}

/// `ssh -F config alias cmd` with batch mode and a fast key exchange.
pub fn ssh_with(config: &Path, alias: &str, cmd: &str) -> Output {
    Command::new("/usr/bin/ssh")
        .arg("-F")
        .arg(config)
        .args([
            "-o",
            "BatchMode=yes",
            "-o",
            "KexAlgorithms=curve25519-sha256",
            "-o",
            "ConnectTimeout=10",
        ])
        .arg(alias)
        .arg(cmd)
        .output()
        .expect("run ssh")
}

/// Several fixture hosts sharing one client key, one known_hosts and one ssh_config.
pub struct Fleet {
    pub hosts: Vec<FixtureHost>,
    key: KeyPair,
    dir: tempfile::TempDir,
}

impl Fleet {
    /// Starts the named hosts in parallel.
    pub fn start(names: &[&str]) -> Fleet {
        let dir = crate::owned_tempdir("probe-fleet-");
        let key = KeyPair::generate(dir.path(), "id_ed25519", "ed25519", "", None);
        let hosts: Vec<FixtureHost> = std::thread::scope(|s| {
            let handles: Vec<_> = names
                .iter()
                .map(|name| {
                    let key = key.clone();
                    let d = dir.path();
                    s.spawn(move || FixtureHost::start_with_key(name, key, d))
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("fixture host start panicked"))
                .collect()
        });
        let fleet = Fleet { hosts, key, dir };
        let mut kh = String::new();
        let mut cfg = String::new();
        for h in &fleet.hosts {
            kh.push_str(&h.known_hosts_lines());
            cfg.push_str(&h.ssh_config_block(&fleet.key.private, &fleet.known_hosts()));
            // Each host's own files point at the shared key and known_hosts too.
            std::fs::write(
                h.ssh_config(),
                h.ssh_config_block(&fleet.key.private, &fleet.known_hosts()),
            )
            .expect("write ssh_config");
        }
        std::fs::write(fleet.known_hosts(), &kh).expect("write known_hosts");
        for h in &fleet.hosts {
            std::fs::write(h.known_hosts(), &kh).expect("write known_hosts");
        }
        std::fs::write(fleet.ssh_config(), cfg).expect("write ssh_config");
        fleet
    }

    /// One ssh_config with every alias.
    pub fn ssh_config(&self) -> PathBuf {
        self.dir.path().join("ssh_config")
    }

    pub fn known_hosts(&self) -> PathBuf {
        self.dir.path().join("known_hosts")
    }

    pub fn client_key(&self) -> &KeyPair {
        &self.key
    }

    /// The host started from definition `name`.
    pub fn host(&self, name: &str) -> &FixtureHost {
        self.hosts
            .iter()
            .find(|h| h.name == name)
            .unwrap_or_else(|| panic!("no host {name} in fleet"))
    }
}

/// Fixture hosts shared by every test of one process: each definition is started at most once,
/// on first use, and runs until the process ends (its namespace dies with the process, see
/// `start_kept`). A definition's address and its servers' ports are fixed, so two copies of one
/// host cannot run at once; a test binary whose modules need the same hosts shares them through
/// here instead of each module starting its own [`Fleet`].
struct Registry {
    /// One client key for every shared host, and each host's own `ssh_config.NAME` and
    /// `known_hosts.NAME`.
    dir: tempfile::TempDir,
    key: KeyPair,
    hosts: std::sync::Mutex<
        std::collections::BTreeMap<String, &'static std::sync::OnceLock<FixtureHost>>,
    >,
}

fn registry() -> &'static Registry {
    static REGISTRY: std::sync::OnceLock<Registry> = std::sync::OnceLock::new();
    REGISTRY.get_or_init(|| {
        let dir = crate::owned_tempdir("probe-fleet-");
        let key = KeyPair::generate(dir.path(), "id_ed25519", "ed25519", "", None);
        Registry {
            dir,
            key,
            hosts: std::sync::Mutex::new(std::collections::BTreeMap::new()),
        }
    })
}

impl Registry {
    /// The cell of host `name`, made empty on first ask.
    fn cell(&self, name: &str) -> &'static std::sync::OnceLock<FixtureHost> {
        let mut hosts = self.hosts.lock().unwrap_or_else(|e| e.into_inner());
        hosts
            .entry(name.to_string())
            .or_insert_with(|| Box::leak(Box::new(std::sync::OnceLock::new())))
    }

    /// Host `name`, started now unless it already runs (a caller asking while another starts it
    /// waits for that start).
    fn host(&self, name: &str) -> &'static FixtureHost {
        self.cell(name).get_or_init(|| {
            let host = FixtureHost::start_with_key(name, self.key.clone(), self.dir.path());
            std::fs::write(host.known_hosts(), host.known_hosts_lines())
                .expect("write known_hosts");
            std::fs::write(
                host.ssh_config(),
                host.ssh_config_block(&self.key.private, &host.known_hosts()),
            )
            .expect("write ssh_config");
            host
        })
    }
}

/// The named hosts from this process's shared hosts, those not yet running started in parallel,
/// with an `ssh_config` and `known_hosts` of their own listing exactly them. Every fleet of one
/// process uses the same client key; each host's own [`FixtureHost::ssh_config`] and
/// [`FixtureHost::known_hosts`] name only itself.
pub fn shared_fleet(names: &[&str]) -> SharedFleet {
    let registry = registry();
    let hosts: Vec<&'static FixtureHost> = std::thread::scope(|s| {
        let handles: Vec<_> = names
            .iter()
            .map(|name| s.spawn(move || registry.host(name)))
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("fixture host start panicked"))
            .collect()
    });
    let dir = crate::owned_tempdir("probe-fleet-");
    let fleet = SharedFleet { hosts, dir };
    let known_hosts: String = fleet.hosts.iter().map(|h| h.known_hosts_lines()).collect();
    let config: String = fleet
        .hosts
        .iter()
        .map(|h| h.ssh_config_block(&registry.key.private, &fleet.known_hosts()))
        .collect();
    std::fs::write(fleet.known_hosts(), known_hosts).expect("write known_hosts");
    std::fs::write(fleet.ssh_config(), config).expect("write ssh_config");
    fleet
}

/// Some of the process's shared hosts, with one `ssh_config` and `known_hosts` for them (what
/// [`Fleet`] is for hosts of its own).
pub struct SharedFleet {
    pub hosts: Vec<&'static FixtureHost>,
    dir: tempfile::TempDir,
}

impl SharedFleet {
    /// One ssh_config with every alias of this fleet.
    pub fn ssh_config(&self) -> PathBuf {
        self.dir.path().join("ssh_config")
    }

    pub fn known_hosts(&self) -> PathBuf {
        self.dir.path().join("known_hosts")
    }

    /// The client key every shared host accepts.
    pub fn client_key(&self) -> &KeyPair {
        &registry().key
    }

    /// The host started from definition `name`.
    pub fn host(&self, name: &str) -> &'static FixtureHost {
        self.hosts
            .iter()
            .copied()
            .find(|h| h.name == name)
            .unwrap_or_else(|| panic!("no host {name} in fleet"))
    }
}
