//! A running server's own view, next to the launch it came from: which options it runs with
//! that differ from the launch, which defaults it resolved, what it runs with that no launch
//! text shows ([`effective`]); lifetime performance from its counters and uptime
//! ([`lifetime`]); and named findings from the `[[server-rule]]` block of
//! `configs/impact.toml` ([`rules`]).
//!
//! Pure: the readings come from [`probe_model::Snapshot::servers`] (collected by
//! `probe-collect`), the launches from [`probe_launch::launches_of`].

pub mod effective;
pub mod histogram;
pub mod lifetime;
pub mod of_run;
pub mod rules;

use probe_model::{LaunchConfig, ServerReading, ServerView, Snapshot};

pub use effective::effective;
pub use lifetime::lifetime_of;
pub use of_run::{LIFETIME_SOURCE, NOW_SOURCE, annotate_runs, join_lifetime, source_of};
pub use rules::findings;

/// The launch a reading was asked for (by its evidence label).
pub fn launch_of<'a>(
    reading: &ServerReading,
    launches: &'a [LaunchConfig],
) -> Option<&'a LaunchConfig> {
    launches
        .iter()
        .find(|l| probe_launch::evidence_label(l) == reading.launch)
}

/// One view per server reading of `snapshot`; `launches` are the snapshot's launches
/// ([`probe_launch::launches_of`]).
pub fn views(snapshot: &Snapshot, launches: &[LaunchConfig]) -> Vec<ServerView> {
    snapshot
        .servers
        .iter()
        .map(|reading| {
            let launch = launch_of(reading, launches);
            let reading = ServerReading {
                lifetime: lifetime_of(reading),
                ..reading.clone()
            };
            ServerView {
                effective: launch.map(|l| effective(&reading, l)).unwrap_or_default(),
                findings: findings(&reading, launch),
                reading,
            }
        })
        .collect()
}
