//! The names a host is known by, and what each is: the one list both stores write into
//! `host_names` (and PostgreSQL's `CHECK` constraint names).

/// What a name of a host is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum HostNameKind {
    /// The host's own name (`hostname`).
    Hostname,
    /// The target the operator gave (`gpu-7`, `user@10.1.230.172:2222`).
    Target,
    /// The address connected to, without its port.
    Address,
    /// `/etc/machine-id`.
    MachineId,
}

impl HostNameKind {
    #[cfg(test)]
    pub(crate) const ALL: [HostNameKind; 4] = [
        HostNameKind::Hostname,
        HostNameKind::Target,
        HostNameKind::Address,
        HostNameKind::MachineId,
    ];

    /// The kind as stored.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            HostNameKind::Hostname => "hostname",
            HostNameKind::Target => "target",
            HostNameKind::Address => "address",
            HostNameKind::MachineId => "machine-id",
        }
    }
}

/// A host's names with their kinds, in the stores' order; empty and missing names left out.
pub(crate) fn host_names<'a>(
    hostname: Option<&'a str>,
    target: &'a str,
    address_host: Option<&'a str>,
    machine_id: Option<&'a str>,
) -> Vec<(&'a str, HostNameKind)> {
    [
        (hostname, HostNameKind::Hostname),
        (Some(target), HostNameKind::Target),
        (address_host, HostNameKind::Address),
        (machine_id, HostNameKind::MachineId),
    ]
    .into_iter()
    .filter_map(|(name, kind)| name.filter(|n| !n.is_empty()).map(|n| (n, kind)))
    .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_kinds() {
        assert_eq!(
            host_names(Some("gpu7"), "gpu-7", None, Some("")),
            [
                ("gpu7", HostNameKind::Hostname),
                ("gpu-7", HostNameKind::Target)
            ]
        );
        let kinds: Vec<&str> = HostNameKind::ALL.iter().map(|k| k.as_str()).collect();
        assert_eq!(kinds, ["hostname", "target", "address", "machine-id"]);
    }

    /// PostgreSQL refuses a kind its `CHECK` does not list: the constraint names every kind.
    #[test]
    fn the_postgres_check_lists_every_kind() {
        let check = crate::postgres::migrate::HOST_NAME_KINDS_CHECK;
        let first_migration = crate::postgres::migrate::MIGRATIONS
            .first()
            .copied()
            .unwrap_or_default();
        let squeezed = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(squeezed(first_migration).contains(check));
        for kind in HostNameKind::ALL {
            assert!(check.contains(&format!("'{}'", kind.as_str())), "{check}");
        }
        assert_eq!(check.matches('\'').count(), 2 * HostNameKind::ALL.len());
    }
}
