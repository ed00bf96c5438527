//! Snapshot references as the operator writes them: `gpu7@latest`, `gpu7@~1` (the one before the
//! latest), `gpu7@2026-11-20` (the newest taken on or before that UTC day), or a snapshot id.

use probe_model::UnixTime;

use crate::StoreError;

/// Which snapshot of a host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HostPoint {
    /// The newest (`@latest`, same as `@~0`).
    Latest,
    /// `@~N`: N before the newest.
    Back(u32),
    /// `@YYYY-MM-DD`: the newest taken before the end of that UTC day.
    Before { end: UnixTime, day: String },
}

/// A parsed snapshot reference.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Selector {
    /// `HOST@POINT`: HOST is matched against hostnames, targets, addresses and machine-ids.
    Host { host: String, point: HostPoint },
    /// A snapshot id, exactly as stored.
    Id(String),
}

impl std::fmt::Display for Selector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Selector::Id(id) => write!(f, "id {id}"),
            Selector::Host { host, point } => match point {
                HostPoint::Latest => write!(f, "{host}@latest"),
                HostPoint::Back(n) => write!(f, "{host}@~{n}"),
                HostPoint::Before { day, .. } => write!(f, "{host}@{day}"),
            },
        }
    }
}

/// Parses `HOST@latest`, `HOST@~N` and `HOST@YYYY-MM-DD`.
///
/// Returns `Ok(None)` when the text has no such suffix (it may be a live target such as
/// `root@gpu7`, a snapshot id or a file); `Err` when the suffix looks like a reference but is
/// malformed (`gpu7@~x`, `gpu7@2026-13-40`).
pub fn parse_host_reference(text: &str) -> Result<Option<Selector>, StoreError> {
    let Some((host, suffix)) = text.rsplit_once('@') else {
        return Ok(None);
    };
    let bad = |cause: &str| StoreError::BadReference {
        reference: text.to_string(),
        cause: cause.to_string(),
    };
    let point = if suffix.eq_ignore_ascii_case("latest") {
        HostPoint::Latest
    } else if let Some(n) = suffix.strip_prefix('~') {
        let n: u32 = n
            .parse()
            .map_err(|_| bad("expected `~N` with N a number of snapshots back"))?;
        if n == 0 {
            HostPoint::Latest
        } else {
            HostPoint::Back(n)
        }
    } else if suffix.len() == 10
        && suffix.as_bytes().get(4) == Some(&b'-')
        && suffix.as_bytes().get(7) == Some(&b'-')
    {
        let end = day_end(suffix).ok_or_else(|| bad("expected a date YYYY-MM-DD"))?;
        HostPoint::Before {
            end,
            day: suffix.to_string(),
        }
    } else {
        return Ok(None);
    };
    if host.is_empty() {
        return Err(bad("missing host before `@`"));
    }
    Ok(Some(Selector::Host {
        host: host.to_string(),
        point,
    }))
}

/// The first second after the UTC day `YYYY-MM-DD`.
fn day_end(day: &str) -> Option<UnixTime> {
    let mut parts = day.splitn(3, '-');
    let year: i64 = parts.next()?.parse().ok()?;
    let month: u32 = parts.next()?.parse().ok()?;
    let dom: u32 = parts.next()?.parse().ok()?;
    probe_model::civil::day_end(year, month, dom)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host(text: &str) -> (String, HostPoint) {
        match parse_host_reference(text).unwrap().unwrap() {
            Selector::Host { host, point } => (host, point),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn latest_and_back() {
        assert_eq!(host("gpu7@latest"), ("gpu7".into(), HostPoint::Latest));
        assert_eq!(host("gpu7@~0"), ("gpu7".into(), HostPoint::Latest));
        assert_eq!(host("gpu7@~1"), ("gpu7".into(), HostPoint::Back(1)));
        assert_eq!(
            host("root@gpu7@~12"),
            ("root@gpu7".into(), HostPoint::Back(12))
        );
    }

    #[test]
    fn dates() {
        let (h, point) = host("gpu7@2026-11-20");
        assert_eq!(h, "gpu7");
        // 2026-11-21T00:00:00Z
        assert_eq!(
            point,
            HostPoint::Before {
                end: 1_795_219_200,
                day: "2026-11-20".into()
            }
        );
        assert_eq!(day_end("1970-01-01"), Some(86_400));
        assert_eq!(day_end("2024-02-29"), Some(1_709_251_200));
        assert!(parse_host_reference("gpu7@2026-13-01").is_err());
        assert!(parse_host_reference("gpu7@2025-02-29").is_err());
    }

    #[test]
    fn not_references() {
        assert_eq!(parse_host_reference("root@gpu7").unwrap(), None);
        assert_eq!(parse_host_reference("gpu7").unwrap(), None);
        assert_eq!(parse_host_reference("snap.json").unwrap(), None);
    }

    #[test]
    fn malformed() {
        assert!(parse_host_reference("gpu7@~x").is_err());
        assert!(parse_host_reference("@latest").is_err());
    }
}
