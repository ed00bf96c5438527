//! Command execution over a real sshd (and the local executor): output, exit status, stdin,
//! deadlines that really stop the remote command, caps, concurrency, jump hosts, and connect
//! failures that must be quick and named.
#![expect(
    clippy::print_stderr,
    reason = "progress lines on stderr while fixture hosts start and stop"
)]

use crate::ssh_support;

use std::net::Ipv4Addr;
use std::process::Command;
use std::time::{Duration, Instant};

use probe_transport::{ConnectOptions, Exec, ExecRequest, FailureClass, LocalExec};
use ssh_support::*;

const SCRIPT: &[u8] =
    b"echo script-start\nx=$((6*7))\necho answer=$x\necho to-stderr >&2\nexit 3\n";

#[tokio::test]
async fn stdout_stderr_exit_status_and_stdin_script() {
    let env = Env::new();
    let c = env.connect().await;
    let out = c
        .exec(&req("echo out; echo err >&2; exit 7"))
        .await
        .unwrap();
    assert_eq!(last_line(&out.stdout), "out");
    assert!(text(&out.stderr).contains("err"));
    assert_eq!(out.exit_status, 7);
    assert!(!out.stdout_truncated && !out.stderr_truncated);

    let out = c.exec(&req("sh -s").with_stdin(SCRIPT)).await.unwrap();
    assert!(
        text(&out.stdout).contains("script-start\nanswer=42\n"),
        "{}",
        text(&out.stdout)
    );
    assert!(text(&out.stderr).contains("to-stderr"));
    assert_eq!(out.exit_status, 3);

    // Quotes and dollar signs survive the remote wrapping.
    let out = c
        .exec(&req(r#"printf '%s|' "a b" 'c'"'"'d' "$((1+1))""#))
        .await
        .unwrap();
    assert!(
        text(&out.stdout).ends_with("a b|c'd|2|"),
        "{}",
        text(&out.stdout)
    );

    // Caps: the rest is dropped and marked.
    let out = c
        .exec(&req("head -c 100000 /dev/zero; head -c 5000 /dev/zero >&2").with_caps(1000, 10))
        .await
        .unwrap();
    assert_eq!((out.stdout.len(), out.stdout_truncated), (1000, true));
    assert_eq!((out.stderr.len(), out.stderr_truncated), (10, true));
    assert_eq!(out.exit_status, 0);
    assert!(c.notices().is_empty());
    assert_eq!(c.address(), format!("root@127.0.0.1:{}", env.sshd.port));
    c.close().await;
}

#[tokio::test]
async fn deadline_kills_the_remote_command_as_root() {
    let env = Env::new();
    let c = env.connect().await;
    // The marker is the sleep's own argument, so pgrep finds the sleep itself, not just a shell.
    let marker = format!("sleep 3{}.{}", env.sshd.port, std::process::id() % 1000);
    let started = Instant::now();
    let request = ExecRequest::new(format!("echo started; {marker}; echo never"))
        .with_timeout(Duration::from_secs(2));
    let seen_running = {
        let marker = marker.clone();
        // Seen as soon as it runs, before the deadline.
        async move {
            let deadline = Instant::now() + Duration::from_millis(1900);
            while Instant::now() < deadline {
                if pgrep(&marker) {
                    return true;
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            false
        }
    };
    let (result, seen_running) = tokio::join!(c.exec(&request), seen_running);
    let err = result.unwrap_err();
    let took = started.elapsed();
    assert!(
        seen_running,
        "the marker must be visible while the command runs"
    );
    assert_eq!(err.class(), FailureClass::TimedOut, "{err}");
    assert!(err.to_string().contains("timed out after 2s"), "{err}");
    assert!(took < Duration::from_secs(4), "took {took:?}");
    // The remote `timeout -s KILL` fires a second after the client's deadline.
    assert!(
        gone_within(&marker, Duration::from_secs(4)),
        "remote command {marker} still running"
    );
    // The connection is still usable afterwards.
    assert_eq!(
        last_line(&c.exec(&req("echo after")).await.unwrap().stdout),
        "after"
    );
    c.close().await;
}

#[tokio::test]
async fn more_channels_than_the_limit_run_concurrently() {
    let env = Env::new();
    let c = env.connect().await;
    // Each command reports when it ran by the server's clock (/proc/uptime, centiseconds).
    let futs = (0..12).map(|i| {
        let c = &c;
        async move {
            c.exec(&req(&format!(
                "read a _ </proc/uptime; sleep 0.5; read b _ </proc/uptime; echo \"$a $b\"; \
                 echo n{i}; exit {}",
                i % 4
            )))
            .await
        }
    });
    let results = futures_join_all(futs).await;
    let mut intervals: Vec<(f64, f64)> = Vec::new();
    for (i, r) in results.into_iter().enumerate() {
        let out = r.unwrap_or_else(|e| panic!("channel {i}: {e}"));
        assert_eq!(last_line(&out.stdout), format!("n{i}"));
        assert_eq!(out.exit_status, (i % 4) as u32);
        let text = String::from_utf8_lossy(&out.stdout);
        let times: Vec<f64> = text
            .lines()
            .next()
            .unwrap_or_default()
            .split(' ')
            .filter_map(|t| t.parse().ok())
            .collect();
        assert_eq!(times.len(), 2, "channel {i}: {text:?}");
        intervals.push((times[0], times[1]));
    }
    // 12 commands of 0.5 s on 8 channels: they ran side by side (more than one at a time),
    // never more than the limit at once. Measured by the server's clock, not by how long the
    // test took, so a loaded machine cannot fail it.
    let most_at_once = intervals
        .iter()
        .map(|&(start, _)| {
            intervals
                .iter()
                .filter(|&&(a, b)| a <= start && start < b)
                .count()
        })
        .max()
        .unwrap_or(0);
    assert!(
        (2..=probe_transport::MAX_CHANNELS).contains(&most_at_once),
        "{most_at_once} at once: {intervals:?}"
    );
    c.close().await;
}

/// Runs futures concurrently on this task (no extra dependency).
async fn futures_join_all<F: std::future::Future>(futs: impl Iterator<Item = F>) -> Vec<F::Output> {
    let mut set = Vec::new();
    for f in futs {
        set.push(Box::pin(f));
    }
    let mut out: Vec<Option<F::Output>> = set.iter().map(|_| None).collect();
    std::future::poll_fn(|cx| {
        let mut pending = false;
        for (i, f) in set.iter_mut().enumerate() {
            if out[i].is_none() {
                match f.as_mut().poll(cx) {
                    std::task::Poll::Ready(v) => out[i] = Some(v),
                    std::task::Poll::Pending => pending = true,
                }
            }
        }
        if pending {
            std::task::Poll::Pending
        } else {
            std::task::Poll::Ready(())
        }
    })
    .await;
    out.into_iter().map(|o| o.unwrap()).collect()
}

#[tokio::test]
async fn jump_chain_of_two() {
    let dir = tempfile::tempdir().unwrap();
    let k = key(dir.path(), "id", "ed25519", "", None);
    let auth = vec![k.public.clone()];
    let j1 = sshd_at(Ipv4Addr::new(127, 0, 0, 2), auth.clone(), "");
    let j2 = sshd_at(Ipv4Addr::new(127, 0, 0, 3), auth.clone(), "");
    let target = sshd_at(Ipv4Addr::new(127, 0, 0, 4), auth, "");
    let kh = dir.path().join("known_hosts");
    std::fs::write(
        &kh,
        format!(
            "{}{}{}",
            j1.known_hosts_lines(),
            j2.known_hosts_lines(),
            target.known_hosts_lines()
        ),
    )
    .unwrap();
    let cfg = dir.path().join("config");
    std::fs::write(
        &cfg,
        format!(
            "Host jump1\n  HostName 127.0.0.2\n  Port {}\nHost jump2\n  HostName 127.0.0.3\n  Port {}\n\
             Host gpu\n  HostName 127.0.0.4\n  Port {}\n  ProxyJump jump1,jump2\n\
             Host *\n  User root\n  IdentityFile {}\n  UserKnownHostsFile {}\n  IdentityAgent none\n",
            j1.port,
            j2.port,
            target.port,
            k.private.display(),
            kh.display()
        ),
    )
    .unwrap();
    let opts = ConnectOptions {
        config_file: Some(cfg),
        ..Default::default()
    };
    let started = Instant::now();
    let c = probe_transport::connect("gpu", &opts)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let out = c.exec(&req("echo $SSH_CONNECTION")).await.unwrap();
    let took = started.elapsed();
    // The target saw the connection come from the second jump host... over loopback, so it
    // shows the address the jump host connected from and the target's own address.
    assert!(
        last_line(&out.stdout).ends_with(&format!("127.0.0.4 {}", target.port)),
        "{}",
        text(&out.stdout)
    );
    assert!(
        c.address().contains("via root@127.0.0.2"),
        "{}",
        c.address()
    );
    eprintln!("jump chain of two: connect+exec {took:?}");
    c.close().await;

    // An unknown key on the second hop is refused and named.
    let mut kh_text = std::fs::read_to_string(&kh).unwrap();
    kh_text = kh_text
        .lines()
        .filter(|l| !l.contains("127.0.0.3"))
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(&kh, kh_text).unwrap();
    let err = probe_transport::connect("gpu", &opts).await.unwrap_err();
    assert_eq!(err.class(), FailureClass::HostKeyRefused);
    assert!(
        err.to_string()
            .starts_with("gpu: via jump host jump2: host key not known"),
        "{err}"
    );
}

fn cfg_for(dir: &std::path::Path, extra: &str) -> ConnectOptions {
    let cfg = dir.join("config");
    std::fs::write(
        &cfg,
        format!(
            "{extra}\nHost *\n  User root\n  IdentityAgent none\n  UserKnownHostsFile {}\n",
            dir.join("kh").display()
        ),
    )
    .unwrap();
    ConnectOptions {
        config_file: Some(cfg),
        ..Default::default()
    }
}

#[tokio::test]
async fn silent_server_is_bounded_by_connect_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let opts = cfg_for(dir.path(), "Host *\n  ConnectTimeout 1\n");
    let started = Instant::now();
    let err = probe_transport::connect(&format!("127.0.0.1:{port}"), &opts)
        .await
        .unwrap_err();
    let took = started.elapsed();
    assert_eq!(err.class(), FailureClass::TimedOut, "{err}");
    assert!(
        err.to_string()
            .starts_with("127.0.0.1: connection timed out after 1s"),
        "{err}"
    );
    assert!(
        took >= Duration::from_millis(900) && took < Duration::from_secs(3),
        "{took:?}"
    );
    // ConnectOptions overrides the config value.
    let opts = ConnectOptions {
        connect_timeout: Some(Duration::from_millis(300)),
        ..opts
    };
    let started = Instant::now();
    let err = probe_transport::connect(&format!("127.0.0.1:{port}"), &opts)
        .await
        .unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(1), "{err}");
    drop(listener);
}

#[tokio::test]
async fn refused_port_and_dns_failure_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let opts = cfg_for(dir.path(), "");
    let port = probe_testkit::sshd::free_port(Ipv4Addr::LOCALHOST);
    let err = probe_transport::connect(&format!("root@127.0.0.1:{port}"), &opts)
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        format!("127.0.0.1: connection refused on 127.0.0.1:{port}")
    );
    assert_eq!(err.class(), FailureClass::Unreachable);

    let started = Instant::now();
    let err = probe_transport::connect("no-such-host.invalid", &opts)
        .await
        .unwrap_err();
    let msg = err.to_string();
    eprintln!("{msg}");
    assert!(
        msg.starts_with("no-such-host.invalid: cannot resolve host name no-such-host.invalid"),
        "{msg}"
    );
    assert_eq!(err.class(), FailureClass::Unreachable);
    assert!(started.elapsed() < Duration::from_secs(11));
}

#[tokio::test]
async fn local_exec_same_semantics() {
    let c = probe_transport::connect("local", &ConnectOptions::default())
        .await
        .unwrap();
    assert_eq!(c.address(), "local");
    assert_eq!(c.host(), "local");
    let out = c
        .exec(&req("echo out; echo err >&2; exit 7"))
        .await
        .unwrap();
    assert_eq!(
        (
            text(&out.stdout).as_str(),
            text(&out.stderr).as_str(),
            out.exit_status
        ),
        ("out\n", "err\n", 7)
    );
    let out = c.exec(&req("sh -s").with_stdin(SCRIPT)).await.unwrap();
    assert_eq!(text(&out.stdout), "script-start\nanswer=42\n");
    assert_eq!(out.exit_status, 3);
    let out = c
        .exec(&req("head -c 100000 /dev/zero").with_caps(1000, 10))
        .await
        .unwrap();
    assert_eq!(
        (out.stdout.len(), out.stdout_truncated, out.exit_status),
        (1000, true, 0)
    );

    let marker = format!("sleep 4{}.5", std::process::id());
    let started = Instant::now();
    let l = LocalExec::new();
    let err = l
        .exec(
            &ExecRequest::new(format!("{marker} & {marker}1; echo never"))
                .with_timeout(Duration::from_millis(500)),
        )
        .await
        .unwrap_err();
    assert_eq!(err.class(), FailureClass::TimedOut);
    assert!(started.elapsed() < Duration::from_secs(2));
    assert!(
        gone_within(&marker, Duration::from_secs(2)),
        "local process group survived"
    );
}

#[tokio::test]
async fn handshake_resets_past_max_startups_are_retried() {
    // sshd drops every unauthenticated connection beyond 2; 6 clients at once would see resets.
    let dir = tempfile::tempdir().unwrap();
    let k = key(dir.path(), "id", "ed25519", "", None);
    let sshd = sshd_at(
        Ipv4Addr::LOCALHOST,
        vec![k.public.clone()],
        "MaxStartups 2:100:2\n",
    );
    let kh = dir.path().join("known_hosts");
    sshd.write_known_hosts(&kh);
    let cfg = dir.path().join("config");
    std::fs::write(
        &cfg,
        format!("Host *\n  User root\n  IdentityFile {}\n  UserKnownHostsFile {}\n  IdentityAgent none\n", k.private.display(), kh.display()),
    )
    .unwrap();
    let opts = ConnectOptions {
        config_file: Some(cfg),
        ..Default::default()
    };
    let target = sshd.target("root");
    let results = futures_join_all((0..6).map(|_| probe_transport::connect(&target, &opts))).await;
    let mut ok = 0;
    for r in results {
        match r {
            Ok(c) => {
                ok += 1;
                c.close().await;
            }
            Err(e) => panic!("{e}"),
        }
    }
    assert_eq!(ok, 6);
    assert!(
        sshd.log().contains("MaxStartups"),
        "the server did drop connections:\n{}",
        sshd.log()
    );
}

#[tokio::test]
async fn server_that_stalls_after_its_banner_is_bounded() {
    use std::io::{Read as _, Write as _};
    // Speaks a valid SSH banner, reads whatever the client sends, never answers it.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let (tx, rx) = std::sync::mpsc::channel::<Vec<u8>>();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { return };
            let tx = tx.clone();
            std::thread::spawn(move || {
                let _ = conn.write_all(b"SSH-2.0-OpenSSH_9.2p1 Debian-2+deb12u3\r\n");
                let mut got = Vec::new();
                let mut buf = [0u8; 4096];
                while let Ok(n) = conn.read(&mut buf) {
                    if n == 0 {
                        break;
                    }
                    got.extend_from_slice(&buf[..n]);
                    let _ = tx.send(got.clone());
                }
            });
        }
    });
    let dir = tempfile::tempdir().unwrap();
    let opts = cfg_for(dir.path(), "Host *\n  ConnectTimeout 1\n");
    let started = Instant::now();
    let err = probe_transport::connect(&format!("127.0.0.1:{port}"), &opts)
        .await
        .unwrap_err();
    let took = started.elapsed();
    assert_eq!(
        err.to_string(),
        "127.0.0.1: connection timed out after 1s (TCP connect and SSH handshake)"
    );
    assert_eq!(err.class(), FailureClass::TimedOut);
    assert!(
        took >= Duration::from_millis(900) && took < Duration::from_millis(2500),
        "{took:?}"
    );
    // We did get past TCP: the peer saw our banner and key exchange init.
    let seen: Vec<u8> = rx.try_iter().last().unwrap_or_default();
    assert!(seen.starts_with(b"SSH-2.0-"), "{:?}", text(&seen));
    assert!(seen.len() > 100, "no KEXINIT sent: {:?}", text(&seen));
}

#[tokio::test]
async fn server_that_stalls_during_authentication_is_bounded() {
    // A real sshd whose key lookup hangs (an AuthorizedKeysCommand that sleeps, like a wedged
    // LDAP lookup): the key exchange completes, then the server stops answering. (sshd reads
    // authorized_keys first; the key is not there, so it runs the command.)
    let dir = tempfile::tempdir().unwrap();
    let k = key(dir.path(), "id", "ed25519", "", None);
    let sshd = sshd_at(
        Ipv4Addr::LOCALHOST,
        Vec::new(),
        "AuthorizedKeysCommand /usr/bin/sleep 4\nAuthorizedKeysCommandUser nobody\nLoginGraceTime 5\n",
    );
    let kh = dir.path().join("known_hosts");
    sshd.write_known_hosts(&kh);
    let cfg = dir.path().join("config");
    std::fs::write(
        &cfg,
        format!(
            "Host *\n  User root\n  IdentityFile {}\n  UserKnownHostsFile {}\n  IdentityAgent none\n  ConnectTimeout 1\n",
            k.private.display(),
            kh.display()
        ),
    )
    .unwrap();
    let opts = ConnectOptions {
        config_file: Some(cfg),
        ..Default::default()
    };
    let started = Instant::now();
    let err = match probe_transport::connect(&sshd.target("root"), &opts).await {
        Ok(_) => panic!("connected; sshd log:\n{}", sshd.log()),
        Err(e) => e,
    };
    let took = started.elapsed();
    assert_eq!(
        err.to_string(),
        "127.0.0.1: connection timed out after 1s (SSH authentication)",
        "sshd log:\n{}",
        sshd.log()
    );
    assert_eq!(err.class(), FailureClass::TimedOut);
    assert!(
        took >= Duration::from_millis(900) && took < Duration::from_millis(2500),
        "{took:?}"
    );
}

#[tokio::test]
async fn jump_hosts_own_proxyjump_is_followed_and_every_hop_verified() {
    let dir = tempfile::tempdir().unwrap();
    let k = key(dir.path(), "id", "ed25519", "", None);
    let auth = vec![k.public.clone()];
    let j1 = sshd_at(Ipv4Addr::new(127, 0, 0, 5), auth.clone(), "");
    let j2 = sshd_at(Ipv4Addr::new(127, 0, 0, 6), auth.clone(), "");
    let target = sshd_at(Ipv4Addr::new(127, 0, 0, 7), auth, "");
    let kh = dir.path().join("known_hosts");
    let all_keys = format!(
        "{}{}{}",
        j1.known_hosts_lines(),
        j2.known_hosts_lines(),
        target.known_hosts_lines()
    );
    std::fs::write(&kh, &all_keys).unwrap();
    let closed = probe_testkit::sshd::free_port(Ipv4Addr::LOCALHOST);
    let cfg = dir.path().join("config");
    std::fs::write(
        &cfg,
        format!(
            "Host target\n  HostName 127.0.0.7\n  Port {}\n  ProxyJump j2\n\
             Host chained\n  HostName 127.0.0.7\n  Port {}\n  ProxyJump j1,j2\n\
             Host j2\n  HostName 127.0.0.6\n  Port {}\n  ProxyJump j1\n\
             Host j1\n  HostName 127.0.0.5\n  Port {}\n\
             Host dead\n  HostName 127.0.0.1\n  Port {closed}\n\
             Host via-dead-j2\n  HostName 127.0.0.7\n  Port {}\n  ProxyJump dead,j2\n\
             Host loop-a\n  ProxyJump loop-b\nHost loop-b\n  ProxyJump loop-a\n\
             Host *\n  User root\n  IdentityFile {}\n  UserKnownHostsFile {}\n  IdentityAgent none\n  ConnectTimeout 5\n",
            target.port,
            target.port,
            j2.port,
            j1.port,
            target.port,
            k.private.display(),
            kh.display()
        ),
    )
    .unwrap();
    let opts = ConnectOptions {
        config_file: Some(cfg),
        ..Default::default()
    };
    // target -> ProxyJump j2, and j2's own config -> ProxyJump j1: j1, then j2, then target.
    let c = probe_transport::connect("target", &opts)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let out = c.exec(&req("echo $SSH_CONNECTION")).await.unwrap();
    assert!(
        last_line(&out.stdout).ends_with(&format!("127.0.0.7 {}", target.port)),
        "{}",
        text(&out.stdout)
    );
    assert_eq!(
        c.address(),
        format!(
            "root@127.0.0.7:{} via root@127.0.0.5:{},root@127.0.0.6:{}",
            target.port, j1.port, j2.port
        )
    );
    c.close().await;
    assert!(
        j1.log().contains("Accepted publickey for root"),
        "{}",
        j1.log()
    );
    assert!(
        j2.log().contains("Accepted publickey for root"),
        "{}",
        j2.log()
    );

    // In an explicit chain `j1,j2`, j2 is reached through j1 as `ssh -J j1 j2`: its own
    // ProxyJump is not added again (the route has two hops, not three).
    let c = probe_transport::connect("chained", &opts)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        c.address(),
        format!(
            "root@127.0.0.7:{} via root@127.0.0.5:{},root@127.0.0.6:{}",
            target.port, j1.port, j2.port
        )
    );
    c.close().await;
    // ... and the chain's first hop is used as written (here: a closed port), not j2's config.
    let err = probe_transport::connect("via-dead-j2", &opts)
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        format!("via-dead-j2: via jump host dead: connection refused on 127.0.0.1:{closed}")
    );

    // A loop in the operator's config is refused, not followed forever.
    let err = probe_transport::connect("loop-a", &opts).await.unwrap_err();
    assert_eq!(
        err.to_string(),
        "loop-a: configuration: ProxyJump loop: loop-a -> loop-b -> loop-a"
    );
    assert_eq!(err.class(), FailureClass::Config);

    // The hop found through j2's config has its host key checked too.
    let without_j1: String = all_keys
        .lines()
        .filter(|l| !l.contains("127.0.0.5"))
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(&kh, without_j1).unwrap();
    let err = probe_transport::connect("target", &opts).await.unwrap_err();
    assert_eq!(err.class(), FailureClass::HostKeyRefused);
    assert!(
        err.to_string()
            .starts_with("target: via jump host j1: host key not known"),
        "{err}"
    );
}

/// A process whose command line holds `marker` runs on this machine.
fn pgrep(marker: &str) -> bool {
    Command::new("pgrep")
        .arg("-f")
        .arg(marker)
        .output()
        .unwrap()
        .status
        .success()
}

/// Waits until no process holds `marker`; false if one still does after `limit`.
fn gone_within(marker: &str, limit: Duration) -> bool {
    let deadline = Instant::now() + limit;
    while pgrep(marker) {
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    true
}
