//! A real PostgreSQL server for store tests and benchmarks: Debian's `initdb` and `postgres`
//! (package `postgresql`), a cluster in a temporary directory, listening on 127.0.0.1 at a free
//! port with its unix socket in the same directory.
//!
//! PostgreSQL refuses to run as root, so when the tests run as root the cluster belongs to a
//! dedicated unprivileged user, `probe-pg` (created with `useradd` when missing), and every server
//! program runs under it through `setpriv`. The superuser `probe` authenticates over TCP with a
//! password (SCRAM), written only to a `pgpass` file in the temporary directory: tests reach the
//! server the way operators do, through libpq's conventions, never with a password in a URL.
//!
//! The server is a child of a keeper thread and carries a parent-death signal, so a killed test
//! process takes it along; dropping [`Postgres`] stops it (fast shutdown, then SIGKILL) and removes
//! the directory.

use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The unprivileged owner of test clusters when the tests run as root.
pub const CLUSTER_USER: &str = "probe-pg";
/// The cluster's superuser.
pub const SUPERUSER: &str = "probe";

/// The directory holding `initdb`, `postgres` and `pg_isready`: `$PG_BINDIR`, else the newest
/// `/usr/lib/postgresql/N/bin`. An error says how to install them.
pub fn require_postgres() -> Result<PathBuf, crate::MachineLacks> {
    if let Some(dir) = std::env::var_os("PG_BINDIR").map(PathBuf::from) {
        return if dir.join("initdb").is_file() {
            Ok(dir)
        } else {
            Err(crate::MachineLacks(format!(
                "PG_BINDIR={} has no initdb: point it at PostgreSQL's bin directory",
                dir.display()
            )))
        };
    }
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| {
            let version = entry.file_name().to_str()?.parse::<u32>().ok()?;
            let bin = entry.path().join("bin");
            bin.join("initdb").is_file().then_some((version, bin))
        })
        .collect();
    versions.sort();
    versions.pop().map(|(_, bin)| bin).ok_or_else(|| {
        crate::MachineLacks(
            "PostgreSQL server binaries are missing (no /usr/lib/postgresql/N/bin/initdb): \
             install Debian's postgresql package (.ci/run does), or set PG_BINDIR"
                .to_string(),
        )
    })
}

/// Server settings of a test cluster.
#[derive(Debug, Clone)]
pub struct PostgresOptions {
    /// Keep fsync and synchronous commit (for benchmarks of write latency). Tests turn both
    /// off: a crash of a test cluster loses nothing anyone needs.
    pub durable: bool,
    pub max_connections: u32,
}

impl Default for PostgresOptions {
    fn default() -> Self {
        PostgresOptions {
            durable: false,
            max_connections: 100,
        }
    }
}

/// A running PostgreSQL cluster. Dropping it stops the server and removes its files.
pub struct Postgres {
    pub port: u16,
    pub addr: Ipv4Addr,
    /// Directory of the unix socket (`host=` for a socket connection).
    pub socket_dir: PathBuf,
    /// A libpq password file with the superuser's password (mode 0600, owned by the caller).
    pub pgpass: PathBuf,
    pub password: String,
    bin: PathBuf,
    run_as: Option<(u32, u32)>,
    // Field order: the server goes before its directory.
    server: Option<Keeper>,
    dir: tempfile::TempDir,
}

struct Keeper {
    pid: u32,
    stop: Option<std::sync::mpsc::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Postgres {
    /// Starts a fast, non-durable cluster (tests).
    pub fn start() -> Postgres {
        Self::start_with(&PostgresOptions::default())
    }

    /// Starts a cluster; panics with the server log when it does not come up.
    pub fn start_with(options: &PostgresOptions) -> Postgres {
        let bin = require_postgres().unwrap_or_else(|e| panic!("{e}"));
        let run_as = cluster_user();
        let dir = crate::owned_tempdir("probe-pg-");
        let data = dir.path().join("data");
        let socket_dir = dir.path().join("socket");
        std::fs::create_dir_all(&socket_dir).expect("mkdir socket dir");
        let password = format!("pw-{:x}-{}", std::process::id(), unique());
        let pwfile = dir.path().join("pwfile");
        std::fs::write(&pwfile, format!("{password}\n")).expect("write pwfile");
        if let Some((uid, gid)) = run_as {
            for path in [dir.path(), socket_dir.as_path(), pwfile.as_path()] {
                std::os::unix::fs::chown(path, Some(uid), Some(gid))
                    .unwrap_or_else(|e| panic!("chown {}: {e}", path.display()));
            }
        }
        let out = command(&bin, "initdb", run_as)
            .arg("-D")
            .arg(&data)
            .args([
                "-U",
                SUPERUSER,
                "--auth-local=trust",
                "--auth-host=scram-sha-256",
            ])
            .arg(format!("--pwfile={}", pwfile.display()))
            .args(["-E", "UTF8", "--locale=C.UTF-8", "--no-sync"])
            .output()
            .expect("run initdb");
        assert!(
            out.status.success(),
            "initdb failed: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let _ = std::fs::remove_file(&pwfile);
        let addr = Ipv4Addr::LOCALHOST;
        let port = crate::sshd::free_port(addr);
        let mut settings = vec![
            format!("listen_addresses={addr}"),
            format!("port={port}"),
            format!("unix_socket_directories={}", socket_dir.display()),
            format!("max_connections={}", options.max_connections),
            "shared_buffers=32MB".into(),
            "logging_collector=off".into(),
        ];
        if !options.durable {
            settings.extend(["fsync=off".into(), "synchronous_commit=off".into()]);
        }
        let log = dir.path().join("server.log");
        let mut server = command(&bin, "postgres", run_as);
        server.arg("-D").arg(&data);
        for setting in &settings {
            server.arg("-c").arg(setting);
        }
        let keeper = spawn_kept(server, &log);
        let pgpass = dir.path().join("pgpass");
        std::fs::write(
            &pgpass,
            format!("127.0.0.1:{port}:*:{SUPERUSER}:{password}\n*:*:*:{SUPERUSER}:{password}\n"),
        )
        .expect("write pgpass");
        set_mode(&pgpass, 0o600);
        let postgres = Postgres {
            port,
            addr,
            socket_dir,
            pgpass,
            password,
            bin,
            run_as,
            server: Some(keeper),
            dir,
        };
        postgres.wait_ready();
        postgres
    }

    fn log_path(&self) -> PathBuf {
        self.dir.path().join("server.log")
    }

    /// The server's log so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.log_path()).unwrap_or_default()
    }

    fn wait_ready(&self) {
        let deadline = Instant::now() + Duration::from_secs(30);
        let addr = SocketAddr::from((self.addr, self.port));
        while Instant::now() < deadline {
            if let Some(keeper) = &self.server
                && !Path::new(&format!("/proc/{}", keeper.pid)).exists()
            {
                panic!("postgres exited early; log:\n{}", self.log());
            }
            if TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok() {
                let ready = command(&self.bin, "pg_isready", self.run_as)
                    .arg("-h")
                    .arg(&self.socket_dir)
                    .arg("-p")
                    .arg(self.port.to_string())
                    .stdout(Stdio::null())
                    .status()
                    .is_ok_and(|status| status.success());
                if ready {
                    return;
                }
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!(
            "postgres on {addr} not ready after 30 s; log:\n{}",
            self.log()
        );
    }

    /// A URL for `database` without a password (it comes from [`Postgres::pgpass`]).
    pub fn url(&self, database: &str) -> String {
        format!(
            "postgres://{SUPERUSER}@{}:{}/{database}?sslmode=disable",
            self.addr, self.port
        )
    }

    /// Environment a client needs next to [`Postgres::url`]: the password file.
    pub fn client_env(&self) -> Vec<(String, String)> {
        vec![("PGPASSFILE".to_string(), self.pgpass.display().to_string())]
    }

    /// Runs SQL as the superuser over the unix socket with `psql`; returns its output.
    pub fn psql(&self, database: &str, sql: &str) -> String {
        let out = command(&self.bin, "psql", self.run_as)
            .arg("-h")
            .arg(&self.socket_dir)
            .arg("-p")
            .arg(self.port.to_string())
            .args([
                "-U",
                SUPERUSER,
                "-d",
                database,
                "-v",
                "ON_ERROR_STOP=1",
                "-AtX",
                "-c",
            ])
            .arg(sql)
            .output()
            .expect("run psql");
        assert!(
            out.status.success(),
            "psql {sql:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Creates a fresh database (each test its own) and returns its URL.
    pub fn create_database(&self, name: &str) -> String {
        self.psql("postgres", &format!("CREATE DATABASE \"{name}\""));
        self.url(name)
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        if let Some(mut keeper) = self.server.take() {
            // SIGINT: fast shutdown (roll back open transactions, disconnect clients).
            signal(keeper.pid, "INT");
            let deadline = Instant::now() + Duration::from_secs(10);
            while Path::new(&format!("/proc/{}", keeper.pid)).exists() && Instant::now() < deadline
            {
                std::thread::sleep(Duration::from_millis(20));
                if is_zombie(keeper.pid) {
                    break;
                }
            }
            signal(keeper.pid, "KILL");
            drop(keeper.stop.take());
            if let Some(thread) = keeper.thread.take() {
                let _ = thread.join();
            }
        }
    }
}

fn is_zombie(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|stat| {
            stat.rsplit_once(')')
                .map(|(_, rest)| rest.trim_start().starts_with('Z'))
        })
        .unwrap_or(true)
}

/// Sends `signal` (`INT`, `KILL`) to a PID we started, with kill(1): no unsafe code here.
fn signal(pid: u32, signal: &str) {
    let _ = Command::new("kill")
        .arg(format!("-{signal}"))
        .arg(pid.to_string())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
}

fn set_mode(path: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
        .unwrap_or_else(|e| panic!("chmod {}: {e}", path.display()));
}

fn unique() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    (u64::from(nanos) << 16) ^ NEXT.fetch_add(1, Ordering::Relaxed)
}

/// A server program, run as the cluster user when we are root.
fn command(bin: &Path, program: &str, run_as: Option<(u32, u32)>) -> Command {
    let path = bin.join(program);
    match run_as {
        Some((uid, gid)) => {
            let mut command = Command::new("/usr/bin/setpriv");
            command
                .arg(format!("--reuid={uid}"))
                .arg(format!("--regid={gid}"))
                .arg("--clear-groups")
                .args(["--pdeathsig", "KILL"])
                .arg(path)
                .env("HOME", "/")
                .env_remove("PGPASSFILE");
            command
        }
        None => Command::new(path),
    }
}

/// `(uid, gid)` of [`CLUSTER_USER`] when running as root (creating the user when missing).
fn cluster_user() -> Option<(u32, u32)> {
    if effective_uid() != Some(0) {
        return None;
    }
    for _ in 0..20 {
        if let Some(ids) = lookup_user(CLUSTER_USER) {
            return Some(ids);
        }
        // Several test binaries may get here at once; useradd locks /etc/passwd, the loser
        // fails and finds the user on the next look.
        let _ = Command::new("useradd")
            .args([
                "--system",
                "--no-create-home",
                "--shell",
                "/usr/sbin/nologin",
            ])
            .arg(CLUSTER_USER)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        std::thread::sleep(Duration::from_millis(100));
    }
    panic!("cannot create the unprivileged user {CLUSTER_USER} for the PostgreSQL test cluster");
}

/// The effective UID, from `/proc/self/status` (`Uid: real effective saved fs`).
fn effective_uid() -> Option<u32> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|line| line.starts_with("Uid:"))?;
    line.split_whitespace().nth(2)?.parse().ok()
}

fn lookup_user(name: &str) -> Option<(u32, u32)> {
    let passwd = std::fs::read_to_string("/etc/passwd").ok()?;
    passwd.lines().find_map(|line| {
        let fields: Vec<&str> = line.split(':').collect();
        (fields.first() == Some(&name) && fields.len() > 3)
            .then(|| Some((fields[2].parse().ok()?, fields[3].parse().ok()?)))
            .flatten()
    })
}

/// Spawns the server from a thread that lives as long as the cluster (the parent-death signal
/// fires when the spawning thread ends).
fn spawn_kept(mut server: Command, log: &Path) -> Keeper {
    let log_file = std::fs::File::create(log).expect("create server log");
    let log_err = log_file.try_clone().expect("clone log");
    server
        .stdin(Stdio::null())
        .stdout(Stdio::from(log_file))
        .stderr(Stdio::from(log_err));
    let (tx_pid, rx_pid) = std::sync::mpsc::channel::<Result<u32, String>>();
    let (tx_stop, rx_stop) = std::sync::mpsc::channel::<()>();
    let thread = std::thread::spawn(move || match server.spawn() {
        Ok(mut child) => {
            let _ = tx_pid.send(Ok(child.id()));
            let _ = rx_stop.recv();
            reap(&mut child);
        }
        Err(e) => {
            let _ = tx_pid.send(Err(format!("start postgres: {e}")));
        }
    });
    match rx_pid.recv() {
        Ok(Ok(pid)) => Keeper {
            pid,
            stop: Some(tx_stop),
            thread: Some(thread),
        },
        Ok(Err(message)) => panic!("{message}"),
        Err(_) => panic!("postgres keeper thread died"),
    }
}

fn reap(child: &mut Child) {
    let _ = child.kill();
    let _ = child.wait();
}
