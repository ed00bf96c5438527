//! Differential test: `probe_transport::config::resolve(..).ssh_g()` against the real
//! `ssh -G -F FILE [-l USER] [-p PORT] HOST` (OpenSSH 9.2, Debian) for every case in
//! `tests/ssh_config/cases.txt`.
//!
//! `HOME` for both sides is a temporary copy of `tests/ssh_config/home` (so relative and `~/`
//! `Include`s resolve there, with the permissions OpenSSH insists on). OpenSSH expands `~` and `%d`
//! in `UserKnownHostsFile`/`IdentityAgent` with the passwd home directory rather than `$HOME`;
//! those two keys are compared after replacing that directory by the temporary home.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use probe_transport::config::{ResolveOptions, resolve};
use probe_transport::target::parse_target;

/// Keys compared; `ResolvedConfig::ssh_g` prints exactly these.
const KEYS: &[&str] = &[
    "host",
    "user",
    "hostname",
    "port",
    "batchmode",
    "identitiesonly",
    "stricthostkeychecking",
    "serveralivecountmax",
    "serveraliveinterval",
    "hostkeyalgorithms",
    "hostkeyalias",
    "identityagent",
    "identityfile",
    "globalknownhostsfile",
    "userknownhostsfile",
    "connecttimeout",
    "proxyjump",
    "proxycommand",
];

fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/ssh_config")
}

fn copy_tree(from: &Path, to: &Path) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::create_dir_all(to).unwrap();
    std::fs::set_permissions(to, std::fs::Permissions::from_mode(0o755)).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let dst = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_tree(&e.path(), &dst);
        } else {
            std::fs::copy(e.path(), &dst).unwrap();
            std::fs::set_permissions(&dst, std::fs::Permissions::from_mode(0o644)).unwrap();
        }
    }
}

/// `key -> values` for the compared keys (several values only for `identityfile`).
fn parse_g(out: &str) -> BTreeMap<String, Vec<String>> {
    let mut m: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for line in out.lines() {
        let (k, v) = line.split_once(' ').unwrap_or((line, ""));
        if KEYS.contains(&k) {
            m.entry(k.to_string()).or_default().push(v.to_string());
        }
    }
    m
}

/// First `line N` in OpenSSH's error output, with the file it names when it names one.
fn ssh_error_line(stderr: &str) -> Option<(String, usize)> {
    for l in stderr.lines() {
        for pat in [": line ", " line "] {
            if let Some((file, rest)) = l.split_once(pat) {
                let n: String = rest.chars().take_while(char::is_ascii_digit).collect();
                if let Ok(n) = n.parse() {
                    return Some((file.to_string(), n));
                }
            }
        }
    }
    None
}

struct Case {
    config: String,
    target: String,
}

fn cases() -> Vec<Case> {
    let text = std::fs::read_to_string(data_dir().join("cases.txt")).unwrap();
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| {
            let (c, t) = l.split_once(' ').expect("CONFIG TARGET");
            Case {
                config: c.to_string(),
                target: t.trim().to_string(),
            }
        })
        .collect()
}

fn ssh_version() -> String {
    let out = Command::new("ssh").arg("-V").output().expect(
        "OpenSSH client `ssh` must be installed for this test (apt-get install openssh-client)",
    );
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn resolve_matches_ssh_g() {
    let version = ssh_version();
    assert!(
        version.starts_with("OpenSSH_9.2"),
        "cases are recorded against OpenSSH 9.2 (Debian 12); found {version}"
    );
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    copy_tree(&data_dir().join("home"), &home);
    let cases = cases();
    assert!(cases.len() >= 60, "need at least 60 cases");
    let configs: std::collections::BTreeSet<_> = cases.iter().map(|c| &c.config).collect();
    assert!(configs.len() >= 20, "need at least 20 config files");

    let base = ResolveOptions::from_env(None);
    let pw_home = std::env::var("PROBE_TEST_PW_HOME")
        .ok()
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            // OpenSSH's `~` is the passwd home; ResolveOptions::from_env takes $HOME first, so ask
            // the shell's `~user` for it.
            let out = Command::new("sh")
                .arg("-c")
                .arg(format!("eval echo ~{}", base.local_user))
                .output()
                .unwrap();
            PathBuf::from(String::from_utf8_lossy(&out.stdout).trim())
        });

    // Start every ssh -G at once (each takes a few ms), then collect.
    let started = std::time::Instant::now();
    let children: Vec<_> = cases
        .iter()
        .map(|c| {
            let mut cmd = Command::new("ssh");
            cmd.arg("-G").arg("-F").arg(data_dir().join(&c.config));
            match parse_target(&c.target) {
                Ok(t) => {
                    if let Some(u) = &t.user {
                        cmd.arg("-l").arg(u);
                    }
                    if let Some(p) = t.port {
                        cmd.arg("-p").arg(p.to_string());
                    }
                    cmd.arg("--").arg(&t.host);
                }
                // A target we refuse: OpenSSH must refuse it too.
                Err(_) => {
                    cmd.arg("--").arg(&c.target);
                }
            }
            cmd.env("HOME", &home)
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("spawn ssh -G")
        })
        .collect();
    let outputs: Vec<_> = children
        .into_iter()
        .map(|c| c.wait_with_output().unwrap())
        .collect();

    let mut failures = Vec::new();
    let mut compared = 0usize;
    for (c, out) in cases.iter().zip(outputs) {
        let file = data_dir().join(&c.config);
        let case = format!("{} {}", c.config, c.target);
        let t = match parse_target(&c.target) {
            Ok(t) => t,
            Err(e) => {
                if out.status.success() {
                    failures.push(format!(
                        "{case}: we refuse the target ({e}), ssh -G accepts it"
                    ));
                }
                compared += 1;
                continue;
            }
        };
        let opts = ResolveOptions {
            config_file: Some(file.clone()),
            home: home.clone(),
            local_user: base.local_user.clone(),
        };
        let ours = resolve(&t, &opts);
        let stderr = String::from_utf8_lossy(&out.stderr);
        if !out.status.success() {
            let Some((efile, eline)) = ssh_error_line(&stderr) else {
                // Fatal errors after parsing (e.g. a bad %token in HostName) name no line.
                if ours.is_ok() {
                    failures.push(format!(
                        "{case}: ssh -G failed ({stderr}), resolve succeeded"
                    ));
                }
                compared += 1;
                continue;
            };
            match ours {
                Ok(_) => failures.push(format!(
                    "{case}: ssh -G failed ({}) but resolve succeeded",
                    stderr.lines().next().unwrap_or("")
                )),
                Err(e) => {
                    let same_file = e.file.ends_with(Path::new(&efile))
                        || Path::new(&efile).ends_with(&e.file)
                        || e.file.file_name() == Path::new(&efile).file_name();
                    if e.line != eline || !same_file {
                        failures.push(format!(
                            "{case}: error at {}:{} but ssh says {efile}:{eline} ({e})",
                            e.file.display(),
                            e.line
                        ));
                    }
                    compared += 1;
                }
            }
            continue;
        }
        let ours = match ours {
            Ok(r) => r,
            Err(e) => {
                failures.push(format!("{case}: ssh -G succeeded but resolve failed: {e}"));
                continue;
            }
        };
        let mut theirs = parse_g(&String::from_utf8_lossy(&out.stdout));
        let pw = pw_home.to_string_lossy().into_owned();
        let h = home.to_string_lossy().into_owned();
        for k in ["userknownhostsfile", "identityagent"] {
            if let Some(vs) = theirs.get_mut(k) {
                for v in vs {
                    *v = v.replace(&pw, &h);
                }
            }
        }
        let mine = parse_g(&ours.ssh_g());
        for k in KEYS {
            let a = theirs.get(*k);
            let b = mine.get(*k);
            if a != b {
                failures.push(format!("{case}: key {k}: ssh -G {a:?} vs probe {b:?}"));
            }
        }
        compared += 1;
    }
    let elapsed = started.elapsed();
    assert!(
        failures.is_empty(),
        "{} of {} cases differ from ssh -G:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
    assert_eq!(compared, cases.len());
    assert!(
        elapsed.as_secs() < 20,
        "differential test took {elapsed:?}, budget is well under 30 s"
    );
}

#[test]
fn warnings_for_match_exec_and_no_commands_run() {
    let tmp = tempfile::tempdir().unwrap();
    let marker = tmp.path().join("ran");
    let cfg = tmp.path().join("config");
    std::fs::write(
        &cfg,
        format!(
            "Match exec \"touch {}\"\n    User exec-user\nHost *\n    User plain\n",
            marker.display()
        ),
    )
    .unwrap();
    let opts = ResolveOptions {
        config_file: Some(cfg),
        home: tmp.path().to_path_buf(),
        local_user: "me".into(),
    };
    let r = resolve(&parse_target("h").unwrap(), &opts).unwrap();
    assert_eq!(r.user, "plain");
    assert!(!marker.exists(), "Match exec must never run a command");
    assert_eq!(r.warnings.len(), 1, "{:?}", r.warnings);
    assert!(r.warnings[0].contains("exec"), "{:?}", r.warnings);
}

#[test]
fn expansions_and_jump_chain() {
    let tmp = tempfile::tempdir().unwrap();
    let cfg = tmp.path().join("config");
    std::fs::write(
        &cfg,
        "Host tok-*\n  HostName 127.0.0.1\n  User tokuser\n  Port 2222\n  \
         IdentityFile ~/.ssh/id_%h_%r_%p_%n\n  IdentityFile %d/k_%u_%%\n  IdentityFile none\n  \
         UserKnownHostsFile ~/kh/%h:%p\n  GlobalKnownHostsFile /etc/ssh/g_%h\n  \
         ProxyJump ops@b1:2200,[2001:db8::1]:22,b3\n",
    )
    .unwrap();
    let home = tmp.path().to_path_buf();
    let opts = ResolveOptions {
        config_file: Some(cfg.clone()),
        home: home.clone(),
        local_user: "me".into(),
    };
    let r = resolve(&parse_target("tok-test").unwrap(), &opts).unwrap();
    let h = home.display();
    assert_eq!(
        r.expanded_identity_files(),
        vec![
            PathBuf::from(format!("{h}/.ssh/id_127.0.0.1_tokuser_2222_tok-test")),
            PathBuf::from(format!("{h}/k_me_%")),
        ]
    );
    assert_eq!(
        r.expanded_known_hosts_files(),
        vec![
            PathBuf::from(format!("{h}/kh/127.0.0.1:2222")),
            PathBuf::from("/etc/ssh/g_127.0.0.1"),
        ]
    );
    let jumps = r.jump_hosts().unwrap();
    let shown: Vec<String> = jumps.iter().map(ToString::to_string).collect();
    assert_eq!(shown, ["ops@b1:2200", "[2001:db8::1]:22", "b3"]);

    // A target's user and port win over the file, like `ssh -l` / `-p`.
    let r = resolve(&parse_target("root@tok-x:22").unwrap(), &opts).unwrap();
    assert_eq!((r.user.as_str(), r.port), ("root", 22));
    assert!(
        r.ssh_g()
            .starts_with("host tok-x\nuser root\nhostname 127.0.0.1\nport 22\n")
    );
}

#[test]
fn errors_name_file_and_line() {
    let tmp = tempfile::tempdir().unwrap();
    let cfg = tmp.path().join("config");
    std::fs::write(&cfg, "Host a\n  User ok\n\n  Port 0\n").unwrap();
    let opts = ResolveOptions {
        config_file: Some(cfg.clone()),
        home: tmp.path().to_path_buf(),
        local_user: "me".into(),
    };
    let e = resolve(&parse_target("zzz").unwrap(), &opts).unwrap_err();
    assert_eq!(e.line, 4);
    assert_eq!(e.to_string(), format!("{}:4: Bad port '0'", cfg.display()));

    let missing = tmp.path().join("nope");
    let opts = ResolveOptions {
        config_file: Some(missing.clone()),
        ..opts
    };
    let e = resolve(&parse_target("a").unwrap(), &opts).unwrap_err();
    assert!(
        e.to_string()
            .starts_with(&format!("{}:0: Can't open", missing.display())),
        "{e}"
    );
}

#[test]
fn default_paths_read_user_config_and_check_permissions() {
    use std::os::unix::fs::PermissionsExt;
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().to_path_buf();
    std::fs::create_dir_all(home.join(".ssh")).unwrap();
    let cfg = home.join(".ssh/config");
    std::fs::write(&cfg, "Host gpu-*\n  User from-user-config\n  Port 2201\n").unwrap();
    std::fs::set_permissions(&cfg, std::fs::Permissions::from_mode(0o600)).unwrap();
    let opts = ResolveOptions {
        config_file: None,
        home: home.clone(),
        local_user: "me".into(),
    };
    assert_eq!(
        probe_transport::config::default_ssh_config_paths(&home),
        vec![cfg.clone(), PathBuf::from("/etc/ssh/ssh_config")]
    );
    let r = resolve(&parse_target("gpu-1").unwrap(), &opts).unwrap();
    assert_eq!((r.user.as_str(), r.port), ("from-user-config", 2201));

    // Group-writable user config: OpenSSH refuses it ("Bad owner or permissions").
    std::fs::set_permissions(&cfg, std::fs::Permissions::from_mode(0o664)).unwrap();
    let e = resolve(&parse_target("gpu-1").unwrap(), &opts).unwrap_err();
    assert!(e.to_string().contains("Bad owner or permissions"), "{e}");

    let env = ResolveOptions::from_env(None);
    assert!(!env.local_user.is_empty());
    assert!(env.home.is_absolute());
}
