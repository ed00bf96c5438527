//! How each simulated host behaves: most answer, a configured share misbehaves. The assignment
//! is exact (each share is `floor(share x hosts)` hosts) and deterministic from the seed, so a
//! test knows which host should end which way.

use sha2::{Digest, Sha256};

/// One host's behaviour.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Behaviour {
    /// Answers with the recording.
    Normal,
    /// Nothing listens at its address: the connection is refused.
    Refuse,
    /// Accepts the TCP connection and never speaks SSH: the client's connect timeout ends it.
    Timeout,
    /// SSH works, but no command ever finishes: channels stay open and silent until the client
    /// gives up at its deadline.
    Stall,
    /// Serves a host key other than the one the client's known_hosts holds for it.
    ChangedKey,
    /// Answers with the recording on even runs and with the recording's drift applied on odd
    /// runs ([`super::SimFleet::next_run`]).
    Drift,
    /// Answers every channel but one: the channel whose script runs the `gpu_query` section is
    /// closed without an exit status once its script arrived, as when the session's sshd is
    /// killed mid-command (the OOM killer). That group's sections are lost; the rest arrive.
    DropChannel,
}

/// The section whose channel a [`Behaviour::DropChannel`] host closes.
pub const DROPPED_SECTION: &str = "gpu_query";

impl Behaviour {
    pub const ALL: [Behaviour; 7] = [
        Behaviour::Normal,
        Behaviour::Refuse,
        Behaviour::Timeout,
        Behaviour::Stall,
        Behaviour::ChangedKey,
        Behaviour::Drift,
        Behaviour::DropChannel,
    ];
}

/// Shares of misbehaving hosts, each in `0.0..=1.0`; the rest behave normally.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Shares {
    pub refuse: f64,
    pub timeout: f64,
    pub stall: f64,
    pub changed_key: f64,
    pub drift: f64,
    pub drop_channel: f64,
}

/// A 64-bit value derived from `seed`, a purpose and an index.
pub(crate) fn mix(seed: u64, what: &str, index: usize) -> u64 {
    let h = Sha256::new()
        .chain_update(seed.to_le_bytes())
        .chain_update(what.as_bytes())
        .chain_update((index as u64).to_le_bytes())
        .finalize();
    let mut b = [0u8; 8];
    b.copy_from_slice(&h[..8]);
    u64::from_le_bytes(b)
}

/// The behaviour of each of `hosts` hosts.
pub fn assign(hosts: usize, shares: &Shares, seed: u64) -> Vec<Behaviour> {
    let mut order: Vec<usize> = (0..hosts).collect();
    order.sort_by_key(|&i| mix(seed, "behaviour", i));
    let count = |share: f64| ((share.clamp(0.0, 1.0) * hosts as f64).floor()) as usize;
    let mut out = vec![Behaviour::Normal; hosts];
    let mut taken = order.into_iter();
    for (b, share) in [
        (Behaviour::Refuse, shares.refuse),
        (Behaviour::Timeout, shares.timeout),
        (Behaviour::Stall, shares.stall),
        (Behaviour::ChangedKey, shares.changed_key),
        (Behaviour::Drift, shares.drift),
        (Behaviour::DropChannel, shares.drop_channel),
    ] {
        for i in taken.by_ref().take(count(share)) {
            out[i] = b;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_are_exact_and_deterministic() {
        let shares = Shares {
            refuse: 0.02,
            timeout: 0.02,
            stall: 0.01,
            changed_key: 0.03,
            drift: 0.10,
            drop_channel: 0.02,
        };
        let a = assign(500, &shares, 7);
        assert_eq!(a, assign(500, &shares, 7));
        assert_ne!(a, assign(500, &shares, 8));
        let n = |b| a.iter().filter(|&&x| x == b).count();
        let expected = [
            (Behaviour::Refuse, 10),
            (Behaviour::Timeout, 10),
            (Behaviour::Stall, 5),
            (Behaviour::ChangedKey, 15),
            (Behaviour::Drift, 50),
            (Behaviour::DropChannel, 10),
            (Behaviour::Normal, 400),
        ];
        for (b, count) in expected {
            assert_eq!(n(b), count, "{b:?}");
        }
        let all = Shares {
            refuse: 0.7,
            timeout: 0.7,
            ..Shares::default()
        };
        let v = assign(10, &all, 1);
        assert_eq!(v.iter().filter(|&&x| x == Behaviour::Refuse).count(), 7);
        assert_eq!(v.iter().filter(|&&x| x == Behaviour::Timeout).count(), 3);
    }
}
