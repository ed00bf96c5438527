//! `--shard I/N`: a deterministic partition of the inventory over N runners by rendezvous
//! (highest-random-weight) hashing of the host name. A host's shard depends only on its name and
//! N, so adding or removing a host moves no other host, and going from N to N + 1 runners moves
//! only the hosts the new shard wins (about 1/(N + 1) of them).

use sha2::{Digest, Sha256};

use crate::inventory::InventoryHost;

/// The most runners a fleet can be split over.
pub const MAX_SHARDS: u32 = 4096;

/// Shard `index` of `count` (0-based, as Kubernetes' `JOB_COMPLETION_INDEX`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    pub index: u32,
    pub count: u32,
}

impl std::fmt::Display for Shard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

/// Why a shard is not one: the reason, for one line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ShardError {
    #[error("expected I/N (shard I of N, 0-based), not {0:?}")]
    NotIOfN(String),
    #[error("shard index {0:?} is not a number")]
    IndexNotANumber(String),
    #[error("shard count {0:?} is not a number")]
    CountNotANumber(String),
    #[error("shard count must be 1 to {MAX_SHARDS}, not {0}")]
    Count(u32),
    #[error("shard index {index} is out of range for {count} shards (0 to {})", count - 1)]
    Index { index: u32, count: u32 },
}

impl std::str::FromStr for Shard {
    type Err = ShardError;

    fn from_str(text: &str) -> Result<Shard, ShardError> {
        let (index, count) = text
            .trim()
            .split_once('/')
            .ok_or_else(|| ShardError::NotIOfN(text.to_string()))?;
        let index: u32 = index
            .trim()
            .parse()
            .map_err(|_| ShardError::IndexNotANumber(index.to_string()))?;
        let count: u32 = count
            .trim()
            .parse()
            .map_err(|_| ShardError::CountNotANumber(count.to_string()))?;
        Shard::new(index, count)
    }
}

impl Shard {
    pub fn new(index: u32, count: u32) -> Result<Shard, ShardError> {
        if count == 0 || count > MAX_SHARDS {
            return Err(ShardError::Count(count));
        }
        if index >= count {
            return Err(ShardError::Index { index, count });
        }
        Ok(Shard { index, count })
    }

    /// Whether this shard audits `host`.
    pub fn owns(&self, host: &str) -> bool {
        owner(host, self.count) == self.index
    }

    /// The hosts of this shard, in inventory order.
    pub fn select(&self, hosts: &[InventoryHost]) -> Vec<InventoryHost> {
        hosts
            .iter()
            .filter(|host| self.owns(&host.name))
            .cloned()
            .collect()
    }
}

/// The shard of `host` among `count`: the shard with the highest weight for this name.
pub fn owner(host: &str, count: u32) -> u32 {
    (0..count.max(1))
        .max_by_key(|shard| (weight(host, *shard), std::cmp::Reverse(*shard)))
        .unwrap_or(0)
}

/// A stable pseudo-random weight of (host, shard): SHA-256, so it never changes between
/// releases, platforms or runs (unlike std's randomly keyed hashers).
fn weight(host: &str, shard: u32) -> u64 {
    let mut hasher = Sha256::new();
    hasher.update(b"probe-shard\0");
    hasher.update(shard.to_be_bytes());
    hasher.update(host.as_bytes());
    let digest = hasher.finalize();
    let mut first = [0u8; 8];
    first.copy_from_slice(&digest[..8]);
    u64::from_be_bytes(first)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(count: usize) -> Vec<String> {
        (0..count).map(|i| format!("gpu-{i:04}.dc1")).collect()
    }

    #[test]
    fn parses_and_refuses() {
        let cases = [
            ("0/1", Ok(Shard { index: 0, count: 1 })),
            ("3/4", Ok(Shard { index: 3, count: 4 })),
            (" 2 / 8 ", Ok(Shard { index: 2, count: 8 })),
            ("4/4", Err("out of range")),
            ("1/0", Err("must be 1 to")),
            ("x/4", Err("not a number")),
            ("3", Err("expected I/N")),
        ];
        for (text, expected) in cases {
            match (text.parse::<Shard>(), expected) {
                (Ok(shard), Ok(want)) => assert_eq!(shard, want, "{text}"),
                (Err(err), Err(want)) => assert!(err.to_string().contains(want), "{text}: {err}"),
                (got, want) => panic!("{text}: {got:?}, expected {want:?}"),
            }
        }
        assert_eq!(Shard { index: 1, count: 4 }.to_string(), "1/4");
    }

    #[test]
    fn every_host_in_exactly_one_shard() {
        let hosts = names(500);
        for count in 1..=8u32 {
            let shards: Vec<Shard> = (0..count).map(|i| Shard::new(i, count).unwrap()).collect();
            let mut sizes = vec![0usize; count as usize];
            for host in &hosts {
                let owners: Vec<u32> = shards
                    .iter()
                    .filter(|shard| shard.owns(host))
                    .map(|shard| shard.index)
                    .collect();
                assert_eq!(owners.len(), 1, "{host} with {count} shards: {owners:?}");
                sizes[owners[0] as usize] += 1;
            }
            // Balanced: every shard within half of the mean.
            let mean = hosts.len() / count as usize;
            assert!(
                sizes
                    .iter()
                    .all(|size| *size * 2 > mean && *size < mean * 3 / 2 + 1),
                "{count}: {sizes:?}"
            );
        }
    }

    #[test]
    fn stable_under_adding_hosts_and_minimal_movement_when_adding_a_shard() {
        let mut hosts = names(400);
        for count in 1..=8u32 {
            let before: Vec<u32> = hosts.iter().map(|host| owner(host, count)).collect();
            hosts.push(format!("new-host-{count}"));
            let after: Vec<u32> = hosts.iter().map(|host| owner(host, count)).collect();
            assert_eq!(before[..], after[..before.len()], "{count} shards");
        }
        for count in 1..=7u32 {
            let moved: Vec<&String> = hosts
                .iter()
                .filter(|host| owner(host, count) != owner(host, count + 1))
                .collect();
            // Only hosts the new shard wins move, and they move to it.
            assert!(moved.iter().all(|host| owner(host, count + 1) == count));
            let expected = hosts.len() / (count as usize + 1);
            assert!(
                moved.len() < expected * 3 / 2 + 5,
                "{count}->{}: {} moved, about {expected} expected",
                count + 1,
                moved.len()
            );
        }
        // Pinned: the partition never changes between releases (SHA-256, not std's hasher),
        // so upgrading probe on some runners does not move hosts between shards.
        assert_eq!(
            (0..8)
                .map(|i| owner(&format!("gpu{i}"), 4))
                .collect::<Vec<_>>(),
            [1, 1, 3, 2, 3, 1, 2, 0]
        );
    }
}
