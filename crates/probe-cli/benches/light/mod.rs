//! Light-weight fixture hosts for the fleet benchmarks (`shard`, `peers`): one real OpenSSH
//! `sshd` per loopback address, each in its own mount, UTS and PID namespace with its own
//! machine-id and host name, serving this machine's files.

use std::fmt::Write as _;
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};

use probe_testkit::{KeyPair, Sshd, SshdOptions};

/// A light host: an sshd in its own namespaces, kept alive by a thread (the parent-death signal
/// fires when the spawning thread ends).
pub struct LightHost {
    pub alias: String,
    pub sshd_block: String,
    pub stop: std::sync::mpsc::Sender<()>,
    pub thread: std::thread::JoinHandle<()>,
}

pub fn start_light_host(
    first: u8,
    index: usize,
    key: &KeyPair,
    dir: &Path,
    extra_config: &str,
) -> PendingHost {
    let address = Ipv4Addr::new(127, 0, 0, first + index as u8);
    let name = format!("light-{index:03}");
    let machine_id = dir.join(format!("{name}.machine-id"));
    std::fs::write(&machine_id, format!("{:032x}\n", 0xbe_0000 + index)).unwrap();
    let empty = dir.join("empty-bashrc");
    std::fs::write(&empty, "").unwrap();
    let wrapper: Vec<String> = [
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
        "-c",
        // Root's .bashrc on this machine runs `pyenv rehash`, which takes a lock: concurrent
        // sessions wait on each other for seconds. A host's shell start-up is not what is
        // measured: an empty file is bound over it (as `probe_testkit::Sshd` does).
        "mount --bind \"$1\" /etc/machine-id && hostname \"$2\" && { [ ! -e /root/.bashrc ] || mount --bind \"$3\" /root/.bashrc; } && shift 3 && exec \"$@\"",
        "sh",
    ]
    .iter()
    .map(|s| s.to_string())
    .chain([
        machine_id.display().to_string(),
        name.clone(),
        empty.display().to_string(),
    ])
    .collect();
    let options = SshdOptions {
        addr: address,
        port: None,
        authorized_keys: vec![key.public.clone()],
        extra_config: format!("MaxSessions 50\n{extra_config}"),
        wrapper: Some(wrapper),
    };
    let (tx, rx) = std::sync::mpsc::channel::<(String, String)>();
    let (stop, stopped) = std::sync::mpsc::channel::<()>();
    let private = key.private.clone();
    let known_hosts = dir.join("known_hosts");
    let alias = name.clone();
    let thread = std::thread::spawn(move || {
        let sshd = Sshd::start(options);
        let mut block = String::new();
        writeln!(
            block,
            "Host {alias}\n  HostName {}\n  Port {}\n  User root",
            sshd.addr, sshd.port
        )
        .unwrap();
        writeln!(
            block,
            "  IdentityFile {}\n  IdentitiesOnly yes\n  UserKnownHostsFile {}\n  StrictHostKeyChecking yes",
            private.display(),
            known_hosts.display()
        )
        .unwrap();
        let _ = tx.send((block, sshd.known_hosts_lines()));
        let _ = stopped.recv();
        drop(sshd);
    });
    PendingHost {
        alias: name,
        rx,
        stop,
        thread,
    }
}

/// A light host whose sshd is still starting (hosts start in parallel).
pub struct PendingHost {
    alias: String,
    rx: std::sync::mpsc::Receiver<(String, String)>,
    stop: std::sync::mpsc::Sender<()>,
    thread: std::thread::JoinHandle<()>,
}

pub fn wait_light_host(pending: PendingHost, dir: &Path) -> LightHost {
    let PendingHost {
        alias: name,
        rx,
        stop,
        thread,
    } = pending;
    let (sshd_block, known) = rx.recv().expect("light host started");
    use std::io::Write;
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir.join("known_hosts"))
        .and_then(|mut file| file.write_all(known.as_bytes()))
        .unwrap();
    LightHost {
        alias: name,
        sshd_block,
        stop,
        thread,
    }
}

/// A host of a bench fleet: its ssh alias and its `Host` block.
pub trait Named {
    fn alias(&self) -> &str;
    fn block(&self) -> &str;
}

impl Named for LightHost {
    fn alias(&self) -> &str {
        &self.alias
    }
    fn block(&self) -> &str {
        &self.sshd_block
    }
}

/// Writes the ssh_config of `hosts` and a `probe audit` inventory of them (group `bench`):
/// `(DIR/ssh_config, DIR/NAME.toml)`.
pub fn write_fleet<H: Named>(hosts: &[H], dir: &Path, name: &str) -> (PathBuf, PathBuf) {
    let config = dir.join("ssh_config");
    std::fs::write(
        &config,
        hosts
            .iter()
            .map(|h| h.block().to_string())
            .collect::<String>(),
    )
    .unwrap();
    let inventory = dir.join(format!("{name}.toml"));
    let mut text = String::from("[groups.bench]\nhosts = [");
    text.push_str(
        &hosts
            .iter()
            .map(|h| format!("\"{}\"", h.alias()))
            .collect::<Vec<_>>()
            .join(", "),
    );
    text.push_str("]\n\n");
    for h in hosts {
        text.push_str(&format!(
            "[hosts.{}]\naddress = \"{}\"\n\n",
            h.alias(),
            h.alias()
        ));
    }
    std::fs::write(&inventory, text).unwrap();
    (config, inventory)
}

/// Starts `count` light hosts on 127.0.0.FIRST.. in parallel and waits for all of them.
pub fn start_fleet(first: u8, count: usize, key: &KeyPair, dir: &Path) -> Vec<LightHost> {
    let started = std::time::Instant::now();
    let pending: Vec<PendingHost> = (0..count)
        .map(|i| start_light_host(first, i, key, dir, ""))
        .collect();
    let hosts: Vec<LightHost> = pending
        .into_iter()
        .map(|p| wait_light_host(p, dir))
        .collect();
    println!(
        "{} light hosts (sshd in namespaces on 127.0.0.{first}..) started in {:.1} s",
        hosts.len(),
        started.elapsed().as_secs_f64()
    );
    hosts
}
