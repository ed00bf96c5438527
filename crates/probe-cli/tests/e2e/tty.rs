//! End-to-end on a real pseudo-terminal: util-linux `script` gives the built `probe` a pty for
//! stdout and stderr, so the terminal-only behaviour is exercised the way an operator sees it
//! (the audit progress bar, colour) and compared with the same command writing to pipes.
//! Fixture hosts over real SSH as in `e2e_fleet.rs`; `hostile` is left out (its hanging
//! nvidia-smi costs seconds that prove nothing here).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use probe_testkit::fixture::SharedFleet;

use crate::util::{self, store};

const HOSTS: &[&str] = &["sglang-hybrid", "vllm-systemd", "bare"];

struct Env {
    fleet: SharedFleet,
    dir: tempfile::TempDir,
    inventory: PathBuf,
}

fn env() -> &'static Env {
    static ENV: OnceLock<Env> = OnceLock::new();
    ENV.get_or_init(|| {
        let script = Command::new("script").arg("--version").output();
        assert!(
            script.is_ok_and(|out| out.status.success()),
            "util-linux `script` is needed to give probe a pseudo-terminal"
        );
        let fleet = util::fleet(HOSTS);
        let dir = tempfile::tempdir().unwrap();
        let inventory = dir.path().join("fleet.toml");
        let text: String = fleet
            .hosts
            .iter()
            .map(|host| format!("[hosts.{}]\naddress = \"{}\"\n\n", host.name, host.alias))
            .collect();
        std::fs::write(&inventory, text).unwrap();
        Env {
            fleet,
            dir,
            inventory,
        }
    })
}

/// Where the output went.
#[derive(Clone, Copy, PartialEq)]
enum Sink {
    /// stdout and stderr on one pseudo-terminal (what `script` records).
    Terminal,
    /// stdout and stderr on pipes.
    Pipes,
}

struct Run {
    code: Option<i32>,
    /// On a terminal: everything the terminal received. On pipes: stdout.
    out: String,
    /// On pipes only.
    err: String,
}

fn sh_quote(arg: &str) -> String {
    format!("'{}'", arg.replace('\'', r"'\''"))
}

/// Runs `probe -F CONFIG --store STORE ARGS...` with `envs` set (and `NO_COLOR`, `RUST_LOG`
/// removed unless given), under a deadline.
fn probe(sink: Sink, store: &Path, args: &[&str], envs: &[(&str, &str)]) -> Run {
    let env = env();
    let probe = util::probe_on(env.dir.path(), &env.fleet.ssh_config(), store);
    let mut cmd = match sink {
        Sink::Terminal => {
            // A terminal of known size (a pty made by `script` without a terminal on its
            // stdin starts at 0x0), then probe itself.
            let line: Vec<String> = probe
                .argv(args)
                .iter()
                .map(|a| sh_quote(&a.to_string_lossy()))
                .collect();
            let mut cmd = Command::new("script");
            cmd.arg("-qfec")
                .arg(format!(
                    "stty cols 120 rows 40 2>/dev/null; exec {}",
                    line.join(" ")
                ))
                .arg("/dev/null");
            probe.apply_env(&mut cmd);
            cmd
        }
        Sink::Pipes => probe.command(args),
    };
    // Colour as the test says: NO_COLOR and CLICOLOR_FORCE only where given.
    cmd.env_remove("NO_COLOR")
        .env_remove("CLICOLOR_FORCE")
        .env("TERM", "xterm-256color")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (key, value) in envs {
        cmd.env(key, value);
    }
    let _busy = util::busy();
    let child = cmd.spawn().unwrap();
    let pid = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    let Ok(out) = rx.recv_timeout(Duration::from_secs(60)) else {
        let _ = Command::new("kill").arg(pid.to_string()).status();
        panic!("probe {args:?} did not finish in 60 s");
    };
    let out = out.unwrap();
    Run {
        code: out.status.code(),
        out: String::from_utf8_lossy(&out.stdout).into_owned(),
        err: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// An SGR sequence of the report's styles (bold, dim, colours, reset).
fn has_sgr(text: &str) -> bool {
    ["\u{1b}[1m", "\u{1b}[2m", "\u{1b}[3", "\u{1b}[0m"]
        .iter()
        .any(|sgr| text.contains(sgr))
}

#[test]
fn audit_progress_bar_on_a_terminal_only() {
    let env = env();
    let (_dir, store) = store();
    let inventory = env.inventory.to_str().unwrap();
    let n = HOSTS.len();
    let audit = ["audit", "--inventory", inventory, "--fail-on", "never"];
    // Colour off throughout, so every escape sequence below is the progress bar's.
    let no_color = [("NO_COLOR", "1")];

    let started = Instant::now();
    let tty = probe(Sink::Terminal, &store, &audit, &no_color);
    eprintln!("audit of {n} hosts on a terminal: {:?}", started.elapsed());
    assert_eq!(tty.code, Some(0), "{}", tty.out);
    // indicatif's drawing: the template's host counts and ETA, redrawn in place (carriage
    // return and erase-line), then cleared before the summary.
    assert!(
        tty.out.contains(&format!("/{n} hosts, ")),
        "no progress bar on a terminal:\n{:?}",
        tty.out
    );
    assert!(tty.out.contains("failed, ETA "), "{:?}", tty.out);
    assert!(
        tty.out.contains("\u{1b}[2K"),
        "no line erase: {:?}",
        tty.out
    );
    assert!(
        tty.out.contains(&format!("{n} hosts:")),
        "no summary: {:?}",
        tty.out
    );
    for host in HOSTS {
        assert!(tty.out.contains(host), "missing {host}: {:?}", tty.out);
    }

    // The same audit into pipes: no bar, no escape, no carriage return anywhere.
    let piped = probe(Sink::Pipes, &store, &audit, &no_color);
    assert_eq!(piped.code, Some(0), "{}{}", piped.out, piped.err);
    assert!(piped.out.contains(&format!("{n} hosts:")), "{}", piped.out);
    for text in [&piped.out, &piped.err] {
        assert!(
            !text.contains(" hosts, ") && !text.contains("ETA"),
            "progress bar into a pipe: {text:?}"
        );
        assert!(
            !text.contains('\u{1b}') && !text.contains('\r'),
            "control sequence into a pipe: {text:?}"
        );
    }

    // On a terminal, `--progress never` and NO_COLOR: plain text (the pty turns "\n" into
    // "\r\n"; nothing else).
    let mut quiet: Vec<&str> = audit.to_vec();
    quiet.extend(["--progress", "never"]);
    let plain = probe(Sink::Terminal, &store, &quiet, &no_color);
    assert_eq!(plain.code, Some(0), "{}", plain.out);
    assert!(
        plain.out.contains(&format!("{n} hosts:")),
        "{:?}",
        plain.out
    );
    assert!(!plain.out.contains(" hosts, "), "{:?}", plain.out);
    assert!(!plain.out.contains('\u{1b}'), "{:?}", plain.out);
    assert!(
        !plain.out.replace("\r\n", "\n").contains('\r'),
        "{:?}",
        plain.out
    );
}

#[test]
fn report_colour_follows_terminal_no_color_and_flag() {
    let (_dir, store) = store();
    let host = ["host", "fx-bare"];
    let started = Instant::now();
    // A terminal: coloured (bold headings at least).
    let tty = probe(Sink::Terminal, &store, &host, &[]);
    eprintln!("probe host on a terminal: {:?}", started.elapsed());
    assert_eq!(tty.code, Some(0), "{}", tty.out);
    assert!(tty.out.contains("probe report: fx-bare"), "{:?}", tty.out);
    assert!(has_sgr(&tty.out), "no colour on a terminal: {:?}", tty.out);
    // NO_COLOR on a terminal: none.
    let no_color = probe(Sink::Terminal, &store, &host, &[("NO_COLOR", "1")]);
    assert_eq!(no_color.code, Some(0), "{}", no_color.out);
    assert!(no_color.out.contains("probe report: fx-bare"));
    assert!(
        !no_color.out.contains('\u{1b}'),
        "escape despite NO_COLOR: {:?}",
        no_color.out
    );
    // `--color always` wins over NO_COLOR, and colours a pipe too; `--color never` a terminal.
    let forced = probe(
        Sink::Terminal,
        &store,
        &["--color", "always", "host", "fx-bare"],
        &[("NO_COLOR", "1")],
    );
    assert!(has_sgr(&forced.out), "{:?}", forced.out);
    let forced_pipe = probe(
        Sink::Pipes,
        &store,
        &["--color", "always", "host", "fx-bare"],
        &[],
    );
    assert_eq!(forced_pipe.code, Some(0), "{}", forced_pipe.err);
    assert!(has_sgr(&forced_pipe.out), "{:?}", forced_pipe.out);
    let never = probe(
        Sink::Terminal,
        &store,
        &["--color", "never", "host", "fx-bare"],
        &[],
    );
    assert_eq!(never.code, Some(0), "{}", never.out);
    assert!(!never.out.contains('\u{1b}'), "{:?}", never.out);
    // A pipe without flags: none.
    let piped = probe(Sink::Pipes, &store, &host, &[]);
    assert_eq!(piped.code, Some(0), "{}", piped.err);
    assert!(!piped.out.contains('\u{1b}'), "{:?}", piped.out);
}
