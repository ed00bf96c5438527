//! Collection as one call: collect a host through its connection, then finish the snapshot
//! the way every command needs it: the running servers asked (their first scrape while the
//! collection runs, the reading after it), what was collected before a deadline kept with a
//! notice, sections lost to the connection named, and the address and target filled. The
//! snapshot is redacted throughout (the collection's sections when assembled, the servers'
//! answers when read). The launches of the finished snapshot are read once, here: the servers
//! are asked from them and the caller's analysis takes them on.

use probe_model::{LaunchConfig, Snapshot};
use probe_transport::Connection;

use crate::{CollectError, CollectOptions, collect_with, lost_sections, server};

/// A finished collection of one host.
#[derive(Debug)]
pub struct Collected {
    /// Servers asked (with [`CollectOptions::ask_server`]), address and target filled, redacted
    /// (unless [`CollectOptions::redact`] is off).
    pub snapshot: Snapshot,
    /// Every launch of `snapshot` (`probe_launch::launches_of`), read once.
    pub launches: Vec<LaunchConfig>,
    /// What the caller should say about the collection: a partial one, sections lost to the
    /// connection.
    pub notices: Vec<String>,
}

/// Collects the host behind `connection` and finishes its snapshot (see the module docs). An
/// error only when nothing was collected; a collection cut short keeps what it had, with a
/// notice.
pub async fn collect_host(
    connection: &Connection,
    opts: &CollectOptions,
) -> Result<Collected, CollectError> {
    let ask = opts.ask_server.as_ref();
    // The servers' first scrape runs while the collection does: the reading's own scrape,
    // seconds later, gives the latency of those seconds.
    let first_scrape = |round1: Snapshot| async move {
        match ask {
            Some(ask) => server::scrape_histograms(connection, &round1, ask).await,
            None => Vec::new(),
        }
    };
    let mut notices = Vec::new();
    let (mut snapshot, early) = match collect_with(connection, opts, first_scrape).await {
        Ok((snapshot, _, early)) => (snapshot, early.unwrap_or_default()),
        // What was collected before a deadline is still evidence: keep it, say so.
        Err(CollectError {
            kind,
            partial: Some(partial),
            ..
        }) => {
            notices.push(format!("collection incomplete: {kind}"));
            (*partial, Vec::new())
        }
        Err(err) => return Err(err),
    };
    let lost = lost_sections(&snapshot);
    if !lost.is_empty() {
        notices.push(format!(
            "collection incomplete: {} section{} lost to the connection ({})",
            lost.len(),
            if lost.len() == 1 { "" } else { "s" },
            lost.join(", ")
        ));
    }
    let launches = probe_launch::launches_of(&snapshot);
    if let Some(ask) = ask {
        server::ask_servers_of(connection, &mut snapshot, &launches, ask, &early).await;
    }
    if snapshot.address.is_none() {
        snapshot.address = Some(connection.address());
    }
    if snapshot.target.is_empty() {
        snapshot.target.clone_from(&opts.target);
    }
    Ok(Collected {
        snapshot,
        launches,
        notices,
    })
}
