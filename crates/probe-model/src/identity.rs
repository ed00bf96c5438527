//! What names a host, a process or a GPU, not what it runs: host names, machine ids, addresses,
//! PIDs, boot times, GPU UUIDs and serials, random seeds. Two snapshots always differ in some of
//! them; none is a cause. The one list of them: a comparison shows them in its header
//! ([`crate::SnapshotRef`]) and keeps them out of its changes, its verdict, fleet outliers and
//! exit codes.

/// Change keys that are identity (`*` matches any run of characters; a key with a server prefix,
/// `10.0.0.1:8000/pid`, matches the `*` forms).
pub const IDENTITY_KEYS: &[&str] = &[
    "host.hostname",
    "host.machine_id",
    "host.boot_time",
    "host.uptime_s",
    "pid",
    "*/pid",
    "*.pid",
    "address",
    "*.address",
    "gpu.*.uuid",
    "gpu.*.serial",
    "seed",
    "random-seed",
    "random_seed",
    "*/seed",
    "*/random-seed",
];

/// Whether a change key names identity, not configuration.
pub fn is_identity(key: &str) -> bool {
    IDENTITY_KEYS.iter().any(|pattern| glob(pattern, key))
}

fn glob(pattern: &str, text: &str) -> bool {
    match pattern.split_once('*') {
        None => pattern == text,
        Some((head, tail)) => {
            text.len() >= head.len() + tail.len() && text.starts_with(head) && text.ends_with(tail)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::is_identity;

    #[test]
    fn identity_keys() {
        let cases = [
            ("host.hostname", true),
            ("host.machine_id", true),
            ("host.boot_time", true),
            ("10.0.0.1:8000/pid", true),
            ("gpu.0.uuid", true),
            ("gpu.3.serial", true),
            ("seed", true),
            ("vllm:8000/seed", true),
            ("host.kernel", false),
            ("host.cpu_model", false),
            ("tensor-parallel-size", false),
            ("gpu.0.power_limit_w", false),
            ("package:torch", false),
        ];
        for (key, want) in cases {
            assert_eq!(is_identity(key), want, "{key}");
        }
    }
}
