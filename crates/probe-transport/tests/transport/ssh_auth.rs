//! Authentication against a real sshd: key files of every kind, encrypted keys, the agent,
//! and the failure message.
#![expect(
    clippy::print_stderr,
    reason = "progress lines on stderr while fixture hosts start and stop"
)]

use crate::ssh_support;

use std::net::Ipv4Addr;
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use probe_transport::{ConnectOptions, Exec, FailureClass};
use ssh_support::*;

async fn whoami(env: &Env) -> String {
    let c = env.connect().await;
    let out = c.exec(&req("echo user=$(id -un)")).await.unwrap();
    c.close().await;
    last_line(&out.stdout)
}

#[tokio::test]
async fn ed25519_key_file() {
    let env = Env::new();
    assert_eq!(whoami(&env).await, "user=root");
}

#[tokio::test]
async fn rsa_pem_and_ecdsa_pkcs8_key_files() {
    let env = Env::with_key("rsa", "", Some("PEM"));
    assert_eq!(whoami(&env).await, "user=root");
    let env = Env::with_key("ecdsa", "", Some("PKCS8"));
    assert_eq!(whoami(&env).await, "user=root");
}

#[tokio::test]
async fn encrypted_key_asks_once_and_names_the_key_without_prompt() {
    let env = Env::with_key("ed25519", "s3cret", None);
    // No prompt (no TTY): a clear error naming the key file.
    let err = probe_transport::connect(&env.target(), &env.opts())
        .await
        .unwrap_err();
    let msg = err.to_string();
    assert_eq!(err.class(), FailureClass::AuthFailed);
    assert!(
        msg.contains(&env.key.private.display().to_string()),
        "{msg}"
    );
    assert!(msg.contains("encrypted, no passphrase: no TTY"), "{msg}");
    assert!(
        msg.starts_with("root@127.0.0.1: authentication failed: tried "),
        "{msg}"
    );

    // With a prompt: asked once, and the connection works.
    let asked = Arc::new(AtomicUsize::new(0));
    let seen = asked.clone();
    let key_path = env.key.private.clone();
    let opts = ConnectOptions {
        passphrase_prompt: Some(Arc::new(move |p: &std::path::Path| {
            assert_eq!(p, key_path);
            seen.fetch_add(1, Ordering::SeqCst);
            Some("s3cret".to_string())
        })),
        ..env.opts()
    };
    let c = probe_transport::connect(&env.target(), &opts)
        .await
        .unwrap();
    let out = c.exec(&req("echo ok")).await.unwrap();
    assert_eq!(last_line(&out.stdout), "ok");
    assert_eq!(asked.load(Ordering::SeqCst), 1);

    // Batch mode never prompts.
    let opts = ConnectOptions {
        batch_mode: true,
        ..opts
    };
    let err = probe_transport::connect(&env.target(), &opts)
        .await
        .unwrap_err();
    assert!(err.to_string().contains("batch mode"), "{err}");
    assert_eq!(asked.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn wrong_key_names_every_method_tried() {
    let env = Env::new();
    let other = key(env.dir.path(), "id_other", "ed25519", "", None);
    let missing = env.dir.path().join("id_missing");
    let garbage = env.dir.path().join("id_garbage");
    std::fs::write(&garbage, "not a key\n").unwrap();
    let no_agent = env.dir.path().join("no-agent.sock");
    std::fs::write(
        &env.config,
        format!(
            "Host *\n  User root\n  IdentityFile {}\n  IdentityFile {}\n  IdentityFile {}\n  UserKnownHostsFile {}\n  IdentityAgent {}\n",
            other.private.display(),
            missing.display(),
            garbage.display(),
            env.known_hosts.display(),
            no_agent.display()
        ),
    )
    .unwrap();
    let err = probe_transport::connect(&env.target(), &env.opts())
        .await
        .unwrap_err();
    let msg = err.to_string();
    assert_eq!(err.class(), FailureClass::AuthFailed);
    assert!(
        msg.contains(&format!("{} (rejected)", other.private.display())),
        "{msg}"
    );
    assert!(
        msg.contains(&format!("{} (not found)", missing.display())),
        "{msg}"
    );
    assert!(
        msg.contains(&format!("{} (unreadable key", garbage.display())),
        "{msg}"
    );
    assert!(
        msg.contains(&format!(
            "tried agent (not reachable at {}: ",
            no_agent.display()
        )),
        "{msg}"
    );
    assert!(!msg.contains('\n'));
    eprintln!("{msg}");
}

/// A real `ssh-agent` on a private socket, killed on drop.
struct Agent {
    sock: std::path::PathBuf,
    pid: u32,
}

impl Agent {
    fn start(dir: &std::path::Path) -> Agent {
        let sock = dir.join("agent.sock");
        let out = Command::new("ssh-agent")
            .arg("-a")
            .arg(&sock)
            .arg("-s")
            .output()
            .expect("ssh-agent");
        let text = String::from_utf8_lossy(&out.stdout);
        let pid = text
            .split(';')
            .find_map(|p| p.trim().strip_prefix("SSH_AGENT_PID="))
            .and_then(|p| p.parse().ok())
            .expect("agent pid");
        Agent { sock, pid }
    }

    fn add(&self, key: &std::path::Path) {
        let st = Command::new("ssh-add")
            .arg(key)
            .env("SSH_AUTH_SOCK", &self.sock)
            .output()
            .unwrap();
        assert!(
            st.status.success(),
            "{}",
            String::from_utf8_lossy(&st.stderr)
        );
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        let _ = Command::new("kill").arg(self.pid.to_string()).status();
    }
}

#[tokio::test]
async fn agent_auth_and_identities_only() {
    let dir = tempfile::tempdir().unwrap();
    let agent_key = key(dir.path(), "id_agent", "ed25519", "", None);
    let decoy = key(dir.path(), "id_decoy", "ecdsa", "", None);
    let agent = Agent::start(dir.path());
    agent.add(&decoy.private);
    agent.add(&agent_key.private);
    let sshd = sshd_at(Ipv4Addr::LOCALHOST, vec![agent_key.public.clone()], "");
    let kh = dir.path().join("known_hosts");
    sshd.write_known_hosts(&kh);
    let cfg = dir.path().join("config");
    // No identity file on disk that works: only the agent can log in.
    let nofile = dir.path().join("id_none");
    std::fs::write(
        &cfg,
        format!(
            "Host *\n  User root\n  IdentityAgent {}\n  IdentityFile {}\n  UserKnownHostsFile {}\n",
            agent.sock.display(),
            nofile.display(),
            kh.display()
        ),
    )
    .unwrap();
    let opts = ConnectOptions {
        config_file: Some(cfg.clone()),
        ..Default::default()
    };
    let c = probe_transport::connect(&sshd.target("root"), &opts)
        .await
        .unwrap();
    assert_eq!(
        last_line(&c.exec(&req("echo agent-ok")).await.unwrap().stdout),
        "agent-ok"
    );
    c.close().await;

    // IdentitiesOnly with a file whose key the server does not accept: agent keys are limited
    // to that file's, so login fails and the message says how many agent keys were used.
    std::fs::write(
        &cfg,
        format!(
            "Host *\n  User root\n  IdentityAgent {}\n  IdentityFile {}\n  IdentitiesOnly yes\n  UserKnownHostsFile {}\n",
            agent.sock.display(),
            decoy.private.display(),
            kh.display()
        ),
    )
    .unwrap();
    let err = probe_transport::connect(&sshd.target("root"), &opts)
        .await
        .unwrap_err();
    let msg = err.to_string();
    assert!(msg.contains("agent (1 key, IdentitiesOnly)"), "{msg}");
    assert!(
        msg.contains(&format!("{} (rejected)", decoy.private.display())),
        "{msg}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn passphrase_prompt_time_is_not_counted_and_cached_prompt_asks_once_per_run() {
    let env = Env::with_key("ed25519", "s3cret", None);
    // ConnectTimeout 3, and a user who takes 4 s to type the passphrase: still connects,
    // because the authentication deadline does not count time at the prompt (nor time waiting
    // for another connection's prompt of the same key). The margins leave the handshakes, the
    // key's bcrypt KDF and three concurrent connections 3 s on a loaded machine (at 1 s this
    // flaked under load), while the prompt alone still outlasts the timeout.
    env.write_config("Host *\n  ConnectTimeout 3\n");
    let asked = Arc::new(AtomicUsize::new(0));
    let seen = asked.clone();
    let slow_user: probe_transport::PassphrasePrompt = Arc::new(move |_p: &std::path::Path| {
        seen.fetch_add(1, Ordering::SeqCst);
        std::thread::sleep(std::time::Duration::from_millis(4000));
        Some("s3cret".to_string())
    });
    let opts = ConnectOptions {
        passphrase_prompt: Some(probe_transport::cached_prompt(slow_user)),
        ..env.opts()
    };
    // Three hosts of a fleet at once (here: the same server three times), then one more later.
    let mut set = tokio::task::JoinSet::new();
    for _ in 0..3 {
        let (target, opts) = (env.target(), opts.clone());
        set.spawn(async move {
            let c = probe_transport::connect(&target, &opts).await?;
            let out = c.exec(&req("echo ok")).await?;
            c.close().await;
            Ok::<_, probe_transport::TransportError>(last_line(&out.stdout))
        });
    }
    while let Some(r) = set.join_next().await {
        assert_eq!(r.unwrap().unwrap_or_else(|e| panic!("{e}")), "ok");
    }
    let c = probe_transport::connect(&env.target(), &opts)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        last_line(&c.exec(&req("echo ok")).await.unwrap().stdout),
        "ok"
    );
    c.close().await;
    // Four connections, one question.
    assert_eq!(asked.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_banner_too_large_for_a_packet_is_not_reported_as_a_refused_key() {
    // sshd sends its `Banner` file before it answers the first key. One of 1 MiB (the most it
    // reads) it does not send: its pre-authentication process ends and the connection closes
    // (seen in its log as "mm_request_send: write: Broken pipe"). No key was refused.
    let dir = tempfile::tempdir().unwrap();
    let banner = dir.path().join("banner");
    std::fs::write(&banner, "b".repeat(1024 * 1024 - 1) + "\n").unwrap();
    let env = Env::with_server(
        "ed25519",
        "",
        None,
        &format!("Banner {}\n", banner.display()),
    );
    let err = probe_transport::connect(&env.target(), &env.opts())
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "root@127.0.0.1: authentication did not finish: the server closed the connection \
             before it answered any key (OpenSSH's sshd does this when its pre-authentication \
             Banner file is larger than about 256 KiB); no key was refused (tried {} (no \
             answer, the connection ended))",
            env.key.private.display()
        )
    );
    assert_eq!(err.class(), FailureClass::Other);

    // A banner that fits in a packet is read past, and the key is accepted.
    std::fs::write(&banner, "b".repeat(200 * 1024 - 1) + "\n").unwrap();
    let env = Env::with_server(
        "ed25519",
        "",
        None,
        &format!("Banner {}\n", banner.display()),
    );
    assert_eq!(whoami(&env).await, "user=root");
}

#[tokio::test]
async fn keys_refused_before_the_server_disconnects_are_still_an_authentication_failure() {
    // MaxAuthTries 1: sshd ends the connection at the first key it refuses.
    let env = Env::with_server("ed25519", "", None, "MaxAuthTries 1\n");
    let first = key(env.dir.path(), "id_first", "ed25519", "", None);
    let second = key(env.dir.path(), "id_second", "ed25519", "", None);
    std::fs::write(
        &env.config,
        format!(
            "Host *\n  User root\n  IdentityFile {}\n  IdentityFile {}\n  UserKnownHostsFile {}\n  IdentityAgent none\n",
            first.private.display(),
            second.private.display(),
            env.known_hosts.display(),
        ),
    )
    .unwrap();
    let err = probe_transport::connect(&env.target(), &env.opts())
        .await
        .unwrap_err();
    // sshd's answer to the first key is the disconnect itself: that key was refused.
    assert_eq!(
        err.to_string(),
        format!(
            "root@127.0.0.1: authentication failed: tried {} (the server disconnected: Too many \
             authentication failures)",
            first.private.display()
        )
    );
    assert_eq!(err.class(), FailureClass::AuthFailed);
}
