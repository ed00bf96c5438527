//! Host key verification against a real sshd, with known_hosts files written the way operators
//! (and `ssh-keygen -H`) write them.

use crate::ssh_support;

use std::process::Command;
use std::time::Duration;

use probe_transport::{ConnectOptions, Exec, FailureClass};
use ssh_support::*;

fn field(line: &str, n: usize) -> String {
    line.split_whitespace().nth(n).unwrap().to_string()
}

/// The server's `type base64` for host key `i` (0 ed25519, 1 rsa, 2 ecdsa).
fn host_key(env: &Env, i: usize) -> String {
    let k = &env.sshd.host_keys[i];
    format!("{} {}", field(k, 0), field(k, 1))
}

fn fingerprint(env: &Env, i: usize) -> String {
    let pubfile = env.dir.path().join(format!("hk{i}.pub"));
    std::fs::write(&pubfile, format!("{}\n", env.sshd.host_keys[i])).unwrap();
    let out = Command::new("ssh-keygen")
        .arg("-l")
        .arg("-E")
        .arg("sha256")
        .arg("-f")
        .arg(&pubfile)
        .output()
        .unwrap();
    field(&String::from_utf8_lossy(&out.stdout), 1)
}

async fn connect_err(env: &Env, opts: &ConnectOptions) -> probe_transport::TransportError {
    match probe_transport::connect(&env.target(), opts).await {
        Ok(_) => panic!("connect succeeded but should have been refused"),
        Err(e) => e,
    }
}

async fn works(env: &Env, opts: &ConnectOptions) -> Vec<String> {
    let c = match probe_transport::connect(&env.target(), opts).await {
        Ok(c) => c,
        Err(e) => panic!("connect failed: {e}"),
    };
    assert_eq!(
        last_line(&c.exec(&req("echo hi")).await.unwrap().stdout),
        "hi"
    );
    let n = c.notices();
    c.close().await;
    n
}

#[tokio::test]
async fn unknown_host_is_refused_with_fingerprint_and_hint() {
    let env = Env::new();
    std::fs::write(&env.known_hosts, "").unwrap();
    let err = connect_err(&env, &env.opts()).await;
    let msg = err.to_string();
    assert_eq!(err.class(), FailureClass::HostKeyRefused);
    assert!(msg.contains("ssh-ed25519"), "{msg}");
    assert!(msg.contains(&fingerprint(&env, 0)), "{msg}");
    assert!(msg.contains("--accept-new"), "{msg}");
    assert!(
        msg.contains(&env.known_hosts.display().to_string()),
        "{msg}"
    );
    assert_eq!(
        std::fs::read_to_string(&env.known_hosts).unwrap(),
        "",
        "never accept silently"
    );
}

#[tokio::test]
async fn accept_new_writes_a_line_openssh_accepts() {
    let (env, opts) = accept_new_env("# operator's file\n");
    let notices = works(&env, &opts).await;
    let kh = std::fs::read_to_string(&env.known_hosts).unwrap();
    let expected = format!("{} {}", env.sshd.known_hosts_name(), host_key(&env, 0));
    assert_eq!(kh, format!("# operator's file\n{expected}\n"));
    assert_eq!(notices.len(), 1, "{notices:?}");
    assert!(
        notices[0].contains("added ssh-ed25519 key SHA256:"),
        "{notices:?}"
    );
    assert!(
        notices[0].contains(&format!("{}:2", env.known_hosts.display())),
        "{notices:?}"
    );

    // OpenSSH's own client, strict, accepts the recorded line.
    let out = Command::new("ssh")
        .arg("-F")
        .arg(&env.config)
        .args([
            "-o",
            "StrictHostKeyChecking=yes",
            "-o",
            "BatchMode=yes",
            "-o",
            "GlobalKnownHostsFile=/dev/null",
        ])
        .arg("-o")
        .arg(format!("UserKnownHostsFile={}", env.known_hosts.display()))
        .args([
            "-p",
            &env.sshd.port.to_string(),
            "root@127.0.0.1",
            "echo openssh-ok",
        ])
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("openssh-ok"),
        "ssh refused: {}",
        String::from_utf8_lossy(&out.stderr)
    );

    // A second connect finds the key and adds nothing.
    assert!(works(&env, &env.opts()).await.is_empty());
    assert_eq!(
        std::fs::read_to_string(&env.known_hosts)
            .unwrap()
            .lines()
            .count(),
        2
    );
}

/// A server whose key the client does not know yet (known_hosts holds `known_hosts`), and
/// options with accept-new.
fn accept_new_env(known_hosts: &str) -> (Env, ConnectOptions) {
    let env = Env::new();
    std::fs::write(&env.known_hosts, known_hosts).unwrap();
    let opts = ConnectOptions {
        accept_new: true,
        ..env.opts()
    };
    (env, opts)
}

/// The notices of one connection to `target`, which must succeed.
async fn notices_of(target: String, opts: ConnectOptions) -> Vec<String> {
    let c = probe_transport::connect(&target, &opts)
        .await
        .unwrap_or_else(|e| panic!("connect: {e}"));
    let notices = c.notices();
    c.close().await;
    notices
}

/// Writes known_hosts as `header` and a line giving the server another ed25519 key.
fn write_another_key(env: &Env, header: &str) {
    let other = key(env.dir.path(), "other_host", "ed25519", "", None);
    let line = format!(
        "{} {} {}",
        env.sshd.known_hosts_name(),
        field(&other.public, 0),
        field(&other.public, 1)
    );
    std::fs::write(&env.known_hosts, format!("{header}{line}\n")).unwrap();
}

/// Connections that meet one new host at once record it once, and a key an operator changes
/// in the file afterwards is seen by the next connection although this process appended last.
#[tokio::test]
async fn concurrent_accept_new_writes_one_line_and_an_outside_edit_is_seen() {
    let (env, opts) = accept_new_env("");
    let handles: Vec<_> = (0..6)
        .map(|_| tokio::spawn(notices_of(env.target(), opts.clone())))
        .collect();
    let mut added = 0;
    for h in handles {
        added += h
            .await
            .unwrap()
            .iter()
            .filter(|n| n.contains("added"))
            .count();
    }
    assert_eq!(added, 1, "one connection records the key");
    let expected = format!("{} {}\n", env.sshd.known_hosts_name(), host_key(&env, 0));
    assert_eq!(std::fs::read_to_string(&env.known_hosts).unwrap(), expected);

    // The operator replaces the line with another key: the next connection is refused.
    write_another_key(&env, "");
    let err = connect_err(&env, &opts).await;
    assert!(err.to_string().contains("HOST KEY CHANGED"), "{err}");
}

#[tokio::test]
async fn strict_no_is_accept_new_with_a_warning() {
    let env = Env::new();
    std::fs::write(&env.known_hosts, "").unwrap();
    env.write_config("Host 127.0.0.1\n  StrictHostKeyChecking no\n");
    let notices = works(&env, &env.opts()).await;
    assert!(
        notices
            .iter()
            .any(|n| n.contains("StrictHostKeyChecking no treated as accept-new")),
        "{notices:?}"
    );
    assert!(
        notices.iter().any(|n| n.contains("added ssh-ed25519")),
        "{notices:?}"
    );
}

#[tokio::test]
async fn changed_key_is_refused_naming_file_and_line() {
    let env = Env::new();
    write_another_key(&env, "# header\n");
    // Even accept-new must not replace a changed key.
    let opts = ConnectOptions {
        accept_new: true,
        ..env.opts()
    };
    let err = connect_err(&env, &opts).await;
    let msg = err.to_string();
    assert_eq!(err.class(), FailureClass::HostKeyRefused);
    assert!(msg.contains("HOST KEY CHANGED"), "{msg}");
    assert!(
        msg.contains(&format!("{}:2", env.known_hosts.display())),
        "{msg}"
    );
    assert!(msg.contains(&fingerprint(&env, 0)), "{msg}");
}

#[tokio::test]
async fn revoked_key_is_refused_loudly() {
    let env = Env::new();
    let mut kh = env.sshd.known_hosts_lines();
    kh.push_str(&format!("@revoked * {}\n", host_key(&env, 0)));
    std::fs::write(&env.known_hosts, kh).unwrap();
    let err = connect_err(&env, &env.opts()).await;
    let msg = err.to_string();
    assert!(msg.contains("REVOKED HOST KEY"), "{msg}");
    assert!(
        msg.contains(&format!("{}:4", env.known_hosts.display())),
        "{msg}"
    );
}

#[tokio::test]
async fn hashed_entry_is_found() {
    let env = Env::new();
    let st = Command::new("ssh-keygen")
        .arg("-H")
        .arg("-f")
        .arg(&env.known_hosts)
        .output()
        .unwrap();
    assert!(st.status.success());
    let kh = std::fs::read_to_string(&env.known_hosts).unwrap();
    assert!(kh.starts_with("|1|") && !kh.contains("127.0.0.1"), "{kh}");
    assert!(works(&env, &env.opts()).await.is_empty());
}

#[tokio::test]
async fn only_rsa_known_is_offered_first() {
    // If ed25519 were negotiated (russh's default order), the key would be unknown and refused.
    let env = Env::new();
    std::fs::write(
        &env.known_hosts,
        format!("{} {}\n", env.sshd.known_hosts_name(), host_key(&env, 1)),
    )
    .unwrap();
    assert!(works(&env, &env.opts()).await.is_empty());
    std::fs::write(
        &env.known_hosts,
        format!("{} {}\n", env.sshd.known_hosts_name(), host_key(&env, 2)),
    )
    .unwrap();
    assert!(works(&env, &env.opts()).await.is_empty());
}

#[tokio::test]
async fn wildcard_tabs_and_negation() {
    let env = Env::new();
    let port = env.sshd.port;
    std::fs::write(
        &env.known_hosts,
        format!(
            "foo,[127.0.0.*]:{port}\t\t{}   some comment\n",
            host_key(&env, 0)
        ),
    )
    .unwrap();
    assert!(works(&env, &env.opts()).await.is_empty());
    std::fs::write(
        &env.known_hosts,
        format!(
            "[127.0.0.*]:{port},![127.0.0.1]:{port} {}\n",
            host_key(&env, 0)
        ),
    )
    .unwrap();
    assert_eq!(
        connect_err(&env, &env.opts()).await.class(),
        FailureClass::HostKeyRefused
    );
}

#[tokio::test]
async fn host_key_alias_is_honoured() {
    let env = Env::new();
    env.write_config("Host 127.0.0.1\n  HostKeyAlias gpu-box\n");
    std::fs::write(&env.known_hosts, format!("gpu-box {}\n", host_key(&env, 0))).unwrap();
    assert!(works(&env, &env.opts()).await.is_empty());
}

#[tokio::test]
async fn cert_authority_host_certificate() {
    let env = Env::new();
    let ca = key(env.dir.path(), "host_ca", "ed25519", "", None);
    let sshd_dir = env.sshd.dir.path();
    let st = Command::new("ssh-keygen")
        .args(["-q", "-s"])
        .arg(&ca.private)
        .args(["-I", "host", "-h", "-n", "127.0.0.1"])
        .arg(sshd_dir.join("host_ed25519.pub"))
        .output()
        .unwrap();
    assert!(
        st.status.success(),
        "{}",
        String::from_utf8_lossy(&st.stderr)
    );
    let mut conf = std::fs::read_to_string(env.sshd.config_path()).unwrap();
    conf.push_str(&format!(
        "HostCertificate {}\n",
        sshd_dir.join("host_ed25519-cert.pub").display()
    ));
    std::fs::write(env.sshd.config_path(), conf).unwrap();
    // sshd -D re-executes itself on SIGHUP and rereads its config; it is ready again when its
    // log says it listens once more.
    let listening = |log: String| log.matches("Server listening on").count();
    let before = listening(env.sshd.log());
    Command::new("kill")
        .args(["-HUP", &env.sshd.pid().to_string()])
        .status()
        .unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while listening(env.sshd.log()) <= before {
        assert!(
            std::time::Instant::now() < deadline,
            "sshd did not listen again after SIGHUP:\n{}",
            env.sshd.log()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    // Only the CA is known: the certificate must carry the connection.
    std::fs::write(
        &env.known_hosts,
        format!(
            "@cert-authority {} {}\n",
            env.sshd.known_hosts_name(),
            ca.public
        ),
    )
    .unwrap();
    assert!(works(&env, &env.opts()).await.is_empty());
    // A CA for other hosts only does not count.
    std::fs::write(
        &env.known_hosts,
        format!("@cert-authority *.example {}\n", ca.public),
    )
    .unwrap();
    assert_eq!(
        connect_err(&env, &env.opts()).await.class(),
        FailureClass::HostKeyRefused
    );
}

#[tokio::test]
async fn host_key_algorithms_from_the_config_are_honoured_in_order() {
    let env = Env::new();
    // Which key the server proved it holds shows in the accept-new notice.
    async fn negotiated(env: &Env, extra: &str) -> String {
        std::fs::write(&env.known_hosts, "").unwrap();
        env.write_config(extra);
        let opts = ConnectOptions {
            accept_new: true,
            ..env.opts()
        };
        let notices = works(env, &opts).await;
        assert_eq!(notices.len(), 1, "{notices:?}");
        field(&notices[0], 1)
    }
    assert_eq!(negotiated(&env, "").await, "ssh-ed25519");
    assert_eq!(
        negotiated(
            &env,
            "Host *\n  HostKeyAlgorithms ecdsa-sha2-nistp256,ssh-ed25519\n"
        )
        .await,
        "ecdsa-sha2-nistp256"
    );
    assert_eq!(
        negotiated(
            &env,
            "Host *\n  HostKeyAlgorithms rsa-sha2-512,ssh-ed25519\n"
        )
        .await,
        "ssh-rsa"
    );
    // `^` puts algorithms first, the way OpenSSH expands it.
    assert_eq!(
        negotiated(&env, "Host *\n  HostKeyAlgorithms ^ecdsa-sha2-nistp256\n").await,
        "ecdsa-sha2-nistp256"
    );

    // An explicit list is not reordered by what known_hosts holds (OpenSSH does not either):
    // only the rsa key is known, but ed25519 comes first in the list, so it is negotiated, is
    // unknown, and is refused.
    env.write_config("Host *\n  HostKeyAlgorithms ssh-ed25519,rsa-sha2-512\n");
    std::fs::write(
        &env.known_hosts,
        format!("{} {}\n", env.sshd.known_hosts_name(), host_key(&env, 1)),
    )
    .unwrap();
    let err = connect_err(&env, &env.opts()).await;
    assert_eq!(err.class(), FailureClass::HostKeyRefused);
    assert!(err.to_string().contains("ssh-ed25519"), "{err}");
    // The default order puts the known rsa key first and connects.
    env.write_config("");
    assert!(works(&env, &env.opts()).await.is_empty());

    // A list with nothing this client can use is a configuration error naming it.
    env.write_config("Host *\n  HostKeyAlgorithms sk-ssh-ed25519@openssh.com\n");
    let err = connect_err(&env, &env.opts()).await;
    assert_eq!(err.class(), FailureClass::Config);
    assert!(
        err.to_string()
            .contains("HostKeyAlgorithms sk-ssh-ed25519@openssh.com: none of these is supported"),
        "{err}"
    );
}

/// What a client made of the server's key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    Accepted,
    Unknown,
    Changed,
}

/// OpenSSH's own client, strict, with the test's config and known_hosts.
fn openssh_outcome(env: &Env) -> Outcome {
    let out = Command::new("ssh")
        .arg("-F")
        .arg(&env.config)
        .args([
            "-o",
            "StrictHostKeyChecking=yes",
            "-o",
            "BatchMode=yes",
            "-o",
            "CheckHostIP=no",
            "-o",
            "GlobalKnownHostsFile=/dev/null",
            "-p",
            &env.sshd.port.to_string(),
            "root@127.0.0.1",
            "echo openssh-ok",
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    if String::from_utf8_lossy(&out.stdout).contains("openssh-ok") {
        Outcome::Accepted
    } else if stderr.contains("REMOTE HOST IDENTIFICATION HAS CHANGED") {
        Outcome::Changed
    } else {
        assert!(stderr.contains("Host key verification failed"), "{stderr}");
        Outcome::Unknown
    }
}

async fn probe_outcome(env: &Env) -> Outcome {
    match probe_transport::connect(&env.target(), &env.opts()).await {
        Ok(c) => {
            c.close().await;
            Outcome::Accepted
        }
        Err(e) => {
            let msg = e.to_string();
            assert_eq!(e.class(), FailureClass::HostKeyRefused, "{msg}");
            if msg.contains("HOST KEY CHANGED") {
                Outcome::Changed
            } else {
                Outcome::Unknown
            }
        }
    }
}

/// Differential: the server listens on a non-default port; for each known_hosts file, probe
/// decides exactly as `ssh` does. `[host]:port` entries and patterns decide; a plain `host`
/// line (port 22's) counts only when it holds the very key and nothing names `[host]:port`
/// ("found matching key w/out port"): a different key there is unknown, never "changed".
#[tokio::test]
async fn non_default_port_matches_exactly_as_openssh() {
    let env = Env::new();
    assert_ne!(env.sshd.port, 22);
    env.write_config("Host *\n  HostKeyAlgorithms ssh-ed25519\n");
    let port = env.sshd.port;
    let ours = host_key(&env, 0);
    let other = key(env.dir.path(), "other_host", "ed25519", "", None);
    let theirs = format!("{} {}", field(&other.public, 0), field(&other.public, 1));
    let cases: Vec<(String, Outcome)> = vec![
        (format!("127.0.0.1 {ours}"), Outcome::Accepted),
        (format!("127.0.0.1 {theirs}"), Outcome::Unknown),
        (format!("127.0.0.* {theirs}"), Outcome::Unknown),
        (format!("127.0.0.* {ours}"), Outcome::Accepted),
        (format!("127.0.0.1,!127.0.0.1 {ours}"), Outcome::Unknown),
        (format!("@revoked 127.0.0.1 {ours}"), Outcome::Unknown),
        (
            format!("127.0.0.1 {ours}\n[127.0.0.1]:{port} {theirs}"),
            Outcome::Changed,
        ),
        (format!("[127.0.0.1]:{port} {ours}"), Outcome::Accepted),
        (format!("[127.0.0.*]:{port} {ours}"), Outcome::Accepted),
        (format!("[127.0.0.1]:* {ours}"), Outcome::Accepted),
        (format!("* {ours}"), Outcome::Accepted),
        (format!("[127.0.0.1]:{port} {theirs}"), Outcome::Changed),
        (
            format!("127.0.0.1 {theirs}\n[127.0.0.1]:{port} {ours}"),
            Outcome::Accepted,
        ),
        (
            format!("[127.0.0.1]:{} {ours}", port.wrapping_add(1)),
            Outcome::Unknown,
        ),
    ];
    for (known, expected) in cases {
        std::fs::write(&env.known_hosts, format!("{known}\n")).unwrap();
        let openssh = openssh_outcome(&env);
        assert_eq!(openssh, expected, "ssh with known_hosts {known:?}");
        assert_eq!(
            probe_outcome(&env).await,
            openssh,
            "probe vs ssh with {known:?}"
        );
    }
}
