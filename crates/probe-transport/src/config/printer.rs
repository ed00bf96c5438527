//! The `ssh -G` printer: [`ResolvedConfig::ssh_g`] and the forms it prints values in.

use std::fmt;

use super::{Jump, ResolvedConfig, StrictHostKeyChecking, keywords};

impl ResolvedConfig {
    /// The settings in `ssh -G` form: `key value` lines, lower-case keys, in `ssh -G`'s order and
    /// with its defaults, for the keys this type models (a subset of what `ssh -G` prints).
    pub fn ssh_g(&self) -> String {
        use std::fmt::Write as _;
        let yn = |b: bool| if b { "yes" } else { "no" };
        let mut s = String::new();
        let _ = writeln!(s, "host {}", self.alias);
        let _ = writeln!(s, "user {}", self.user);
        let _ = writeln!(s, "hostname {}", self.hostname);
        let _ = writeln!(s, "port {}", self.port);
        let _ = writeln!(s, "batchmode {}", yn(self.batch_mode));
        let _ = writeln!(s, "identitiesonly {}", yn(self.identities_only));
        let _ = writeln!(
            s,
            "stricthostkeychecking {}",
            self.strict_host_key_checking.as_ssh_g()
        );
        let _ = writeln!(s, "serveralivecountmax {}", self.server_alive_count_max);
        let _ = writeln!(s, "serveraliveinterval {}", self.server_alive_interval);
        let _ = writeln!(
            s,
            "hostkeyalgorithms {}",
            self.host_key_algorithms
                .as_deref()
                .unwrap_or(keywords::DEFAULT_HOST_KEY_ALGS)
        );
        if let Some(a) = &self.host_key_alias {
            let _ = writeln!(s, "hostkeyalias {a}");
        }
        if let Some(a) = &self.identity_agent {
            let _ = writeln!(s, "identityagent {a}");
        }
        for f in &self.identity_files {
            let _ = writeln!(s, "identityfile {f}");
        }
        let _ = writeln!(
            s,
            "globalknownhostsfile {}",
            self.global_known_hosts_files.join(" ")
        );
        let _ = writeln!(
            s,
            "userknownhostsfile {}",
            self.user_known_hosts_files.join(" ")
        );
        match self.connect_timeout {
            Some(t) => {
                let _ = writeln!(s, "connecttimeout {t}");
            }
            None => s.push_str("connecttimeout none\n"),
        }
        if let Some(j) = &self.proxy_jump {
            let _ = writeln!(s, "proxyjump {j}");
        } else if let Some(c) = &self.proxy_command {
            let _ = writeln!(s, "proxycommand {c}");
        }
        s
    }
}

/// A `ProxyJump` hop as `ssh -G` prints it (`[addr]` for numeric hosts).
pub(super) fn format_jump(j: &Jump) -> String {
    let numeric = j.host.contains(':') || j.host.bytes().all(|b| b.is_ascii_digit() || b == b'.');
    let mut s = String::new();
    if let Some(e) = &j.extra {
        s.push_str(e);
        s.push(',');
    }
    if let Some(u) = &j.user {
        s.push_str(u);
        s.push('@');
    }
    if numeric {
        s.push('[');
        s.push_str(&j.host);
        s.push(']');
    } else {
        s.push_str(&j.host);
    }
    if let Some(p) = j.port {
        s.push(':');
        s.push_str(&p.to_string());
    }
    s
}

impl fmt::Display for StrictHostKeyChecking {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_ssh_g())
    }
}
