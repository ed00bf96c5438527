//! The harness itself: a real sshd starts, OpenSSH's own client logs in with the known_hosts the
//! harness writes, and the server is gone after drop.

use probe_testkit::{KeyPair, Sshd, SshdOptions};

#[test]
fn openssh_client_logs_in_to_harness_sshd() {
    let tmp = tempfile::tempdir().unwrap();
    let key = KeyPair::generate(tmp.path(), "id_ed25519", "ed25519", "", None);
    let sshd = Sshd::start(SshdOptions {
        addr: "127.0.0.7".parse().unwrap(),
        authorized_keys: vec![key.public.clone()],
        ..Default::default()
    });
    let kh = tmp.path().join("known_hosts");
    sshd.write_known_hosts(&kh);
    let out = std::process::Command::new("/usr/bin/ssh")
        .args([
            "-F",
            "/dev/null",
            "-o",
            "BatchMode=yes",
            "-o",
            "StrictHostKeyChecking=yes",
        ])
        .arg("-o")
        .arg(format!("UserKnownHostsFile={}", kh.display()))
        .arg("-i")
        .arg(&key.private)
        .args([
            "-p",
            &sshd.port.to_string(),
            "root@127.0.0.7",
            "echo hello-$((6*7))",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "ssh failed: {}\n{}",
        String::from_utf8_lossy(&out.stderr),
        sshd.log()
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout)
            .trim_end()
            .lines()
            .last(),
        Some("hello-42")
    );
    let pid = sshd.pid();
    drop(sshd);
    assert!(
        !std::path::Path::new(&format!("/proc/{pid}")).exists(),
        "sshd {pid} still running"
    );
}
