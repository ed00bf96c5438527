//! Starts a simulated fleet (`probe_testkit::sim`) for a person to explore or measure by hand:
//! `cargo run -p probe-testkit --example sim_up -- [HOSTS [LATENCY_MS]]` prints the client
//! config, the known_hosts file and a probe inventory of every host, then serves until
//! standard input ends. Misbehaving shares come from `PROBE_SIM_SHARES`
//! (`refuse,timeout,stall,changed_key,drift,drop_channel`, e.g. `0.02,0.02,0.02,0.02,0.04,0.02`).
#![expect(
    clippy::print_stderr,
    clippy::print_stdout,
    reason = "an example tells the person running it what it started"
)]

use std::io::Read;
use std::time::Duration;

use probe_testkit::sim::{Recording, Shares, SimFleet, SimOptions, default_recording_path};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let hosts: usize = args.first().and_then(|a| a.parse().ok()).unwrap_or(100);
    let latency: u64 = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(50);
    let shares: Vec<f64> = std::env::var("PROBE_SIM_SHARES")
        .unwrap_or_default()
        .split(',')
        .filter_map(|s| s.trim().parse().ok())
        .collect();
    let share = |i: usize| shares.get(i).copied().unwrap_or(0.0);
    let recording = Recording::load(&default_recording_path()).unwrap_or_else(|e| panic!("{e}"));
    let sim = SimFleet::start(
        recording,
        &SimOptions {
            hosts,
            latency: Duration::from_millis(latency),
            jitter: Duration::from_millis(latency / 2),
            shares: Shares {
                refuse: share(0),
                timeout: share(1),
                stall: share(2),
                changed_key: share(3),
                drift: share(4),
                drop_channel: share(5),
            },
            ..SimOptions::default()
        },
    );
    let inventory = sim.dir().join("fleet.toml");
    std::fs::write(&inventory, sim.inventory_toml(hosts)).expect("write inventory");
    println!("ssh_config  {}", sim.ssh_config().display());
    println!("known_hosts {}", sim.known_hosts().display());
    println!("inventory   {}", inventory.display());
    println!(
        "probe -F {} --store /tmp/sim.db audit --inventory {} -j 64",
        sim.ssh_config().display(),
        inventory.display()
    );
    println!("waiting for end of input ...");
    let _ = std::io::stdin().read_to_end(&mut Vec::new());
    eprintln!("{:?}", sim.stats());
}
