//! Collecting one target: connect (SSH or local), run the collection under a deadline, close.
//! Failures are classified for summaries and exit codes.

use std::time::Duration;

use probe_model::{LaunchConfig, Snapshot};
use probe_transport::{ConnectOptions, FailureClass, TransportError};

use crate::errors::HostFailure;
use crate::settings::Settings;

/// A collected snapshot (finished by `probe_collect::collect_host`), its launches read once,
/// with what the connection and the collection had to say.
#[derive(Debug)]
pub struct Collected {
    pub snapshot: Snapshot,
    pub launches: Vec<LaunchConfig>,
    pub notices: Vec<String>,
}

/// A target that could not be collected.
#[derive(Debug, Clone)]
pub struct CollectFailure {
    pub target: String,
    pub class: HostFailure,
    /// One line, `HOST: cause`.
    pub message: String,
}

impl From<FailureClass> for HostFailure {
    fn from(class: FailureClass) -> HostFailure {
        match class {
            FailureClass::Unreachable => HostFailure::Unreachable,
            FailureClass::AuthFailed => HostFailure::AuthFailed,
            FailureClass::HostKeyRefused => HostFailure::HostKeyRefused,
            FailureClass::TimedOut => HostFailure::TimedOut,
            FailureClass::Config => HostFailure::Config,
            FailureClass::Other => HostFailure::Error,
        }
    }
}

/// Connection options from settings. Batch mode: audits never prompt; a single `probe host` on a
/// terminal may ask for a key passphrase.
pub fn connect_options(settings: &Settings, interactive: bool) -> ConnectOptions {
    ConnectOptions {
        config_file: settings.ssh_config.clone(),
        accept_new: settings.accept_new,
        connect_timeout: settings.connect_timeout,
        known_hosts_file: settings.known_hosts.clone(),
        batch_mode: !interactive,
        passphrase_prompt: if interactive {
            Some(std::sync::Arc::new(tty_passphrase))
        } else {
            None
        },
    }
}

/// Asks for a key's passphrase on the controlling terminal, echo off (`stty -echo`), once per key.
fn tty_passphrase(key: &std::path::Path) -> Option<String> {
    use std::io::{BufRead, Write};
    let tty = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/tty")
        .ok()?;
    let stty = |setting: &str| {
        std::fs::File::open("/dev/tty")
            .ok()
            .and_then(|input| {
                std::process::Command::new("stty")
                    .arg(setting)
                    .stdin(input)
                    .status()
                    .ok()
            })
            .is_some_and(|status| status.success())
    };
    let mut writer = &tty;
    write!(
        writer,
        "Enter passphrase for key '{}': ",
        crate::output::one_line(&key.display().to_string())
    )
    .ok()?;
    writer.flush().ok()?;
    let echo_off = stty("-echo");
    let mut line = String::new();
    let read = std::io::BufReader::new(&tty).read_line(&mut line);
    if echo_off {
        stty("echo");
    }
    let _ = writeln!(writer);
    read.ok()?;
    let passphrase = line.trim_end_matches(['\n', '\r']).to_string();
    (!passphrase.is_empty()).then_some(passphrase)
}

fn transport_failure(target: &str, err: &TransportError) -> CollectFailure {
    CollectFailure {
        target: target.to_string(),
        class: err.class().into(),
        message: err.to_string(),
    }
}

/// Connects to `target` and collects a snapshot, all within the settings' deadline.
pub async fn collect_target(
    target: &str,
    settings: &Settings,
    options: &ConnectOptions,
) -> Result<Collected, CollectFailure> {
    let deadline = settings.deadline;
    let work = async {
        let connection = probe_transport::connect(target, options)
            .await
            .map_err(|err| transport_failure(target, &err))?;
        let mut notices = connection.notices();
        let result = run_collection(&connection, target, settings).await;
        connection.close().await;
        result.map(|collected| {
            notices.extend(collected.notices);
            Collected {
                snapshot: collected.snapshot,
                launches: collected.launches,
                notices,
            }
        })
    };
    match tokio::time::timeout(deadline + Duration::from_secs(5), work).await {
        Ok(result) => result,
        Err(_) => Err(CollectFailure {
            target: target.to_string(),
            class: HostFailure::TimedOut,
            message: format!(
                "{target}: collection did not finish within the deadline ({}s)",
                deadline.as_secs()
            ),
        }),
    }
}

async fn run_collection(
    connection: &probe_transport::Connection,
    target: &str,
    settings: &Settings,
) -> Result<probe_collect::Collected, CollectFailure> {
    let options = probe_collect::CollectOptions {
        target: target.to_string(),
        sudo: settings.sudo,
        redact: settings.redact,
        extra_units: settings.units.clone(),
        deadline: settings.deadline,
        ask_server: settings.ask_server.then(|| ask_options(settings)),
    };
    probe_collect::collect_host(connection, &options)
        .await
        .map_err(|err| {
            let class = match &err.kind {
                probe_collect::CollectErrorKind::Transport(transport) => transport.class().into(),
                probe_collect::CollectErrorKind::Deadline(_) => HostFailure::TimedOut,
                probe_collect::CollectErrorKind::NoOutput { .. } => HostFailure::Error,
            };
            CollectFailure {
                target: target.to_string(),
                class,
                message: crate::output::one_line(&err.to_string()),
            }
        })
}

/// How the running servers are asked (`probe_collect::server`).
fn ask_options(settings: &Settings) -> probe_collect::server::AskOptions {
    probe_collect::server::AskOptions {
        redact: settings.redact,
        deadline: (settings.deadline / 6).max(Duration::from_secs(5)),
    }
}
