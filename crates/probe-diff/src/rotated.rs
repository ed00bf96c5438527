//! Which logs are a server's: the ones its launches name, the files its processes' stdout and
//! stderr go to, and the rotated and dated copies beside them (logrotate's `server.log.1`,
//! `dateext`'s `server.log-20261130`, a wrapper's `server.log.2026-11-30`).

use probe_model::Snapshot;

use probe_launch::ServerLaunches;

/// The log a rotated or dated copy is of (`/root/llama.log.1` -> `/root/llama.log`).
pub fn base_of(location: &str) -> Option<&str> {
    let base = if let Some((base, n)) = location.rsplit_once('.')
        && (1..=3).contains(&n.len())
        && digits(n)
    {
        base
    } else if let Some((base, date)) = location.rsplit_once(['.', '-'])
        && date.len() == 8
        && digits(date)
    {
        base
    } else {
        let cut = location.len().checked_sub(11)?;
        let (base, date) = (location.get(..cut)?, location.get(cut..)?);
        let iso = date.char_indices().all(|(i, c)| match i {
            0 => c == '.',
            5 | 8 => c == '-',
            _ => c.is_ascii_digit(),
        });
        if !iso {
            return None;
        }
        base
    };
    Some(base).filter(|b| !b.is_empty() && !b.ends_with('/'))
}

fn digits(s: &str) -> bool {
    s.chars().all(|c| c.is_ascii_digit())
}

/// Whether the log at `location` (or the log it is a rotated copy of) is the server's.
pub(crate) fn names_log(
    snapshot: &Snapshot,
    launches: &ServerLaunches<'_>,
    location: &str,
) -> bool {
    let base = base_of(location);
    std::iter::once(location)
        .chain(base)
        .any(|l| launches.names_log(l) || written_by(snapshot, launches, l))
}

/// Whether one of the server's running processes writes its output to `location`.
fn written_by(snapshot: &Snapshot, launches: &ServerLaunches<'_>, location: &str) -> bool {
    snapshot
        .processes
        .iter()
        .filter(|p| p.output_files.iter().any(|f| f == location))
        .any(|p| {
            let label = format!("pid:{}", p.pid);
            launches
                .launches()
                .iter()
                .any(|l| l.source.pid() == Some(p.pid) || l.source.also_seen_in.contains(&label))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rotated_and_dated_copies() {
        let cases = [
            ("/root/llama.log.1", Some("/root/llama.log")),
            ("/root/llama.log.12", Some("/root/llama.log")),
            ("/var/log/vllm.log-20261130", Some("/var/log/vllm.log")),
            ("/var/log/vllm.log.2026-11-30", Some("/var/log/vllm.log")),
            ("/var/log/vllm.log", None),
            ("/var/log/vllm.log.gz", None),
            ("/var/log/vllm-2.log", None),
            ("/var/log/server-1", None),
            ("/var/log/.1", None),
            ("", None),
        ];
        for (location, want) in cases {
            assert_eq!(base_of(location), want, "{location}");
        }
    }
}
