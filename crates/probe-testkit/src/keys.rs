//! Key pairs made by the real `ssh-keygen`.

use std::path::{Path, PathBuf};
use std::process::Command;

/// A private key file and its public half.
#[derive(Debug, Clone)]
pub struct KeyPair {
    pub private: PathBuf,
    /// The `.pub` line: `ssh-ed25519 AAAA... comment`.
    pub public: String,
}

impl KeyPair {
    /// `kind`: `ed25519`, `rsa`, `ecdsa`. `format`: `None` for OpenSSH's own format, `Some("PEM")`
    /// or `Some("PKCS8")`. An empty passphrase makes an unencrypted key.
    pub fn generate(
        dir: &Path,
        name: &str,
        kind: &str,
        passphrase: &str,
        format: Option<&str>,
    ) -> KeyPair {
        let private = dir.join(name);
        let _ = std::fs::remove_file(&private);
        let _ = std::fs::remove_file(private.with_extension("pub"));
        let mut cmd = Command::new("/usr/bin/ssh-keygen");
        cmd.args(["-q", "-t", kind, "-N", passphrase, "-C", name, "-f"])
            .arg(&private);
        if kind == "rsa" {
            cmd.args(["-b", "2048"]);
        }
        if let Some(format) = format {
            cmd.args(["-m", format]);
        }
        let out = cmd.output().expect("run ssh-keygen");
        assert!(
            out.status.success(),
            "ssh-keygen failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let public = std::fs::read_to_string(format!("{}.pub", private.display()))
            .expect("read public key")
            .trim()
            .to_string();
        KeyPair { private, public }
    }
}
