//! Records a real collection of a fixture host for the fleet simulator
//! (`probe_testkit::sim`): starts the fixture host (real sshd in namespaces), collects it over
//! SSH with every exec channel's script and output kept, and writes the recording.
//!
//! `cargo run -p probe-collect --example sim_record -- [FIXTURE [OUT]]` (default `sglang-story`
//! into `crates/probe-testkit/recordings/FIXTURE.rec`). Run it again whenever the collection
//! script changes: a recording remembers the script's fingerprint and the tests refuse a stale
//! one.
#![expect(
    clippy::print_stderr,
    reason = "an example tells the person running it what it started"
)]

use std::path::PathBuf;
use std::sync::Mutex;

use probe_collect::{CollectOptions, script};
use probe_testkit::fixture::FixtureHost;
use probe_testkit::sim::{Exchange, RecordMeta, Recording, fingerprint};
use probe_transport::{ConnectOptions, Exec, ExecOutput, ExecRequest, TransportError};

/// Keeps every exec channel's script and output.
struct Recorder<'a, E: Exec> {
    inner: &'a E,
    log: Mutex<Vec<Exchange>>,
}

impl<E: Exec> Exec for Recorder<'_, E> {
    async fn exec(&self, req: &ExecRequest) -> Result<ExecOutput, TransportError> {
        let out = self.inner.exec(req).await;
        if let Ok(o) = &out {
            self.log.lock().unwrap().push(Exchange {
                script: req.stdin.as_deref().map(<[u8]>::to_vec).unwrap_or_default(),
                stdout: o.stdout.clone(),
            });
        }
        out
    }

    fn host(&self) -> &str {
        self.inner.host()
    }
}

/// The same-length change a drifting host makes: the driver version's last digit.
fn drifted(version: &str) -> String {
    let mut chars: Vec<char> = version.chars().collect();
    if let Some(last) = chars.iter_mut().rev().find(|c| c.is_ascii_digit()) {
        *last = if *last == '9' {
            '8'
        } else {
            (*last as u8 + 1) as char
        };
    }
    chars.into_iter().collect()
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let fixture = args.first().map_or("sglang-story", String::as_str);
    let out = args.get(1).map_or_else(
        || probe_testkit::sim::default_recording_path().with_file_name(format!("{fixture}.rec")),
        PathBuf::from,
    );
    let host = FixtureHost::start(fixture);
    let options = ConnectOptions {
        config_file: Some(host.ssh_config()),
        batch_mode: true,
        ..Default::default()
    };
    let connection = probe_transport::connect(&host.alias, &options)
        .await
        .unwrap_or_else(|e| panic!("connect {}: {e}", host.alias));
    let recorder = Recorder {
        inner: &connection,
        log: Mutex::new(Vec::new()),
    };
    let snapshot = probe_collect::collect(&recorder, &CollectOptions::default())
        .await
        .unwrap_or_else(|e| panic!("collect {fixture}: {e}"));
    let exchanges = recorder.log.into_inner().unwrap();
    connection.close().await;
    let driver = snapshot
        .gpu
        .driver_version
        .clone()
        .expect("the fixture host has a GPU driver version");
    let meta = RecordMeta {
        fingerprint: fingerprint(&script::commands()),
        source: fixture.to_string(),
        machine_id: snapshot.host.machine_id.clone().expect("machine-id"),
        hostname: snapshot.host.hostname.clone().expect("hostname"),
        drift: (driver.clone(), drifted(&driver)),
    };
    let recording = Recording::from_exchanges(meta, &exchanges).expect("recording");
    let bytes = recording.to_bytes();
    std::fs::write(&out, &bytes).unwrap_or_else(|e| panic!("{}: {e}", out.display()));
    eprintln!(
        "{fixture}: {} channels, {} sections, {} bytes -> {}",
        exchanges.len(),
        recording.sections.len(),
        bytes.len(),
        out.display()
    );
}
