//! Starts fixture hosts and keeps them up for a human (or a benchmark) to explore:
//!
//! ```text
//! cargo run -p probe-testkit --example fixture_up -- [NAMES...]
//! ```
//!
//! With no names it starts every host of [`probe_testkit::fixture::ALL`]. It prints the client
//! ssh_config (one `Host fx-<name>` block per host, sharing one key and one known_hosts), the
//! aliases and a ready-to-paste `probe -F <cfg> host <alias>` line, then waits until standard
//! input reaches end of file (Ctrl-D, or a closed pipe) or SIGINT/SIGTERM arrives, and drops
//! the fleet: every namespace is killed and the temporary copies are removed.
//!
//! Needs root and mount/UTS/PID namespaces, like the tests. Only loopback addresses are used.
#![expect(
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "an example tells the person running it what it started"
)]

use std::io::Read as _;
use std::process::ExitCode;
use std::time::Instant;

use probe_testkit::fixture::{self, Fleet};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.iter().any(|a| a == "-h" || a == "--help") {
        println!(
            "usage: fixture_up [NAMES...]\n\nStarts the named fixture hosts (default: {}) and keeps \
             them up until stdin reaches EOF or SIGINT/SIGTERM.",
            fixture::ALL.join(" ")
        );
        return ExitCode::SUCCESS;
    }
    let names: Vec<&str> = if args.is_empty() {
        fixture::ALL.to_vec()
    } else {
        args.iter().map(String::as_str).collect()
    };
    let defs = fixture::definitions_dir();
    for name in &names {
        if !defs.join(name).join("host.conf").is_file() {
            eprintln!(
                "fixture_up: no fixture host {name:?} (known: {})",
                fixture::ALL.join(", ")
            );
            return ExitCode::from(2);
        }
    }
    if let Err(e) = probe_testkit::require_openssh().and_then(|()| fixture::require_namespaces()) {
        eprintln!("fixture_up: {e}");
        return ExitCode::from(2);
    }

    // Signals first, so a Ctrl-C during the start still ends in a clean drop.
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("fixture_up: tokio runtime: {e}");
            return ExitCode::from(2);
        }
    };
    let signals = rt.block_on(async {
        use tokio::signal::unix::{SignalKind, signal};
        Ok::<_, std::io::Error>((
            signal(SignalKind::interrupt())?,
            signal(SignalKind::terminate())?,
        ))
    });
    let (mut sigint, mut sigterm) = match signals {
        Ok(s) => s,
        Err(e) => {
            eprintln!("fixture_up: signal handlers: {e}");
            return ExitCode::from(2);
        }
    };

    eprintln!(
        "starting {} fixture host(s): {}",
        names.len(),
        names.join(" ")
    );
    let started = Instant::now();
    let fleet = Fleet::start(&names);
    let cfg = fleet.ssh_config();
    println!(
        "{} fixture host(s) up in {:.1} s",
        fleet.hosts.len(),
        started.elapsed().as_secs_f64()
    );
    println!("ssh_config:  {}", cfg.display());
    println!("known_hosts: {}", fleet.known_hosts().display());
    println!("client key:  {}", fleet.client_key().private.display());
    println!();
    println!("{:<20} {:<22} {:>8}", "alias", "address", "start");
    for h in &fleet.hosts {
        println!(
            "{:<20} {:<22} {:>6.1} s",
            h.alias,
            format!("{}:{}", h.addr, h.port),
            h.start_time.as_secs_f64()
        );
    }
    println!();
    if let Some(first) = fleet.hosts.first() {
        println!("try:");
        println!("  probe -F {} host {}", cfg.display(), first.alias);
        println!("  ssh -F {} {} uname -a", cfg.display(), first.alias);
    }
    println!("\nwaiting for end of input (Ctrl-D) or SIGINT/SIGTERM to stop ...");

    // Standard input is read on a plain thread (a blocked read must not hold up the runtime's
    // shutdown); its end is one of the three ways out.
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    std::thread::spawn(move || {
        let mut sink = [0u8; 4096];
        let mut stdin = std::io::stdin().lock();
        while matches!(stdin.read(&mut sink), Ok(n) if n > 0) {}
        let _ = tx.send(());
    });
    let why = rt.block_on(async {
        tokio::select! {
            _ = sigint.recv() => "SIGINT",
            _ = sigterm.recv() => "SIGTERM",
            _ = rx => "end of input",
        }
    });
    eprintln!("{why}: stopping {} host(s) ...", fleet.hosts.len());
    let t = Instant::now();
    drop(fleet);
    eprintln!("stopped in {:.1} s", t.elapsed().as_secs_f64());
    ExitCode::SUCCESS
}
