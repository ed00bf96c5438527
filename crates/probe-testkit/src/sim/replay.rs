//! The simulator's answer to one exec channel: the recorded sections a script asks for, with
//! this session's boundary and this host's identity put in.

use super::recording::{BOUNDARY_MARK, HOSTNAME_MARK, MACHINE_ID_MARK, Recording, parse_script};

/// Who is answering.
#[derive(Debug, Clone)]
pub struct Identity {
    pub machine_id: String,
    pub hostname: String,
    /// Serve the drifted variant (the recording's drift text replaced).
    pub drifted: bool,
}

/// What the channel sends back.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Reply {
    pub stdout: Vec<u8>,
    pub exit_status: u32,
    /// Sections asked for that the recording does not hold, or holds for another `sec` call
    /// (the probe changed since it was recorded).
    pub stale: Vec<String>,
    /// Sections answered.
    pub sections: usize,
}

/// The reply to `script`. A script that is not a collection script (no boundary, no `sec`
/// calls) gets an empty, successful answer.
pub fn reply(rec: &Recording, who: &Identity, script: &[u8]) -> Reply {
    let Some(ask) = parse_script(script) else {
        return Reply::default();
    };
    let mut out = Reply::default();
    let subs: [(&[u8], &[u8]); 3] = [
        (BOUNDARY_MARK.as_bytes(), ask.boundary.as_bytes()),
        (MACHINE_ID_MARK.as_bytes(), who.machine_id.as_bytes()),
        (HOSTNAME_MARK.as_bytes(), who.hostname.as_bytes()),
    ];
    for call in &ask.calls {
        match rec.sections.get(&call.name) {
            Some(s) if s.call_sha == call.sha => {
                let start = out.stdout.len();
                substitute(&s.bytes, &subs, &mut out.stdout);
                if who.drifted {
                    drift(&mut out.stdout, start, &rec.drift);
                }
                out.sections += 1;
            }
            _ => out.stale.push(call.name.clone()),
        }
    }
    out.stdout
        .extend_from_slice(format!("\n{} DONE\n", ask.boundary).as_bytes());
    out
}

/// Appends `data` with every placeholder replaced (one pass, placeholders start with `@@`).
fn substitute(data: &[u8], subs: &[(&[u8], &[u8])], out: &mut Vec<u8>) {
    out.reserve(data.len());
    let mut last = 0;
    for at in memchr::memmem::find_iter(data, b"@@probe-sim:") {
        if at < last {
            continue;
        }
        let rest = &data[at..];
        if let Some((from, to)) = subs.iter().find(|(from, _)| rest.starts_with(from)) {
            out.extend_from_slice(&data[last..at]);
            out.extend_from_slice(to);
            last = at + from.len();
        }
    }
    out.extend_from_slice(&data[last..]);
}

/// Replaces the drift text in `buf[start..]`, in place (same length).
fn drift(buf: &mut [u8], start: usize, (from, to): &(String, String)) {
    let tail = &mut buf[start..];
    let hits: Vec<usize> = memchr::memmem::find_iter(tail, from.as_bytes()).collect();
    for at in hits {
        tail[at..at + to.len()].copy_from_slice(to.as_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::super::recording::{Exchange, RecordMeta};
    use super::*;

    const B: &str = "0123456789abcdef0123456789abcdef";
    const B2: &str = "fedcba9876543210fedcba9876543210";

    fn script(b: &str, calls: &[&str]) -> Vec<u8> {
        let mut s = format!("B='{b}'\nP='x'\n");
        for c in calls {
            s.push_str(c);
            s.push('\n');
        }
        s.push_str("printf '\\n%s DONE\\n' \"$B\"\n");
        s.into_bytes()
    }

    fn recording() -> Recording {
        let mut o = String::new();
        for n in ["host", "gpu"] {
            o.push_str(&format!(
                "\n{B} BEGIN {n}\nhost-one mid 0000aaaa driver 550.1\n{B} ERR {n}\n{B} rc 0\n{B} END {n} 1 2\n"
            ));
        }
        o.push_str(&format!("\n{B} DONE\n"));
        Recording::from_exchanges(
            RecordMeta {
                fingerprint: "f".into(),
                source: "fx".into(),
                machine_id: "0000aaaa".into(),
                hostname: "host-one".into(),
                drift: ("550.1".into(), "550.2".into()),
            },
            &[Exchange {
                script: script(B, &["sec host 5 9 0 '' 'a'", "sec gpu 5 9 0 '' 'b'"]),
                stdout: o.into_bytes(),
            }],
        )
        .unwrap()
    }

    /// (sections asked, drifted) -> (answered, stale, text in the answer, text not in it)
    type Case<'a> = (&'a [&'a str], bool, usize, &'a [&'a str], &'a str, &'a str);

    #[test]
    fn replies() {
        let rec = recording();
        let cases: &[Case] = &[
            (
                &["sec gpu 5 9 0 '' 'b'"],
                false,
                1,
                &[],
                "host-two mid 1111bbbb driver 550.1",
                B,
            ),
            (
                &["sec gpu 5 9 0 '' 'b'"],
                true,
                1,
                &[],
                "driver 550.2",
                "550.1",
            ),
            (
                &["sec host 5 9 0 '' 'a'", "sec gpu 5 9 0 '' 'b'"],
                false,
                2,
                &[],
                &format!("{B2} END gpu 1 2\n\n{B2} DONE\n"),
                "@@",
            ),
            (
                &["sec host 5 9 0 '' 'changed'"],
                false,
                0,
                &["host"],
                "DONE",
                "BEGIN",
            ),
            (
                &["sec models 5 9 0 '' 'c'"],
                false,
                0,
                &["models"],
                "DONE",
                "BEGIN",
            ),
        ];
        for (calls, drifted, answered, stale, has, lacks) in cases {
            let who = Identity {
                machine_id: "1111bbbb".into(),
                hostname: "host-two".into(),
                drifted: *drifted,
            };
            let r = reply(&rec, &who, &script(B2, calls));
            let text = String::from_utf8_lossy(&r.stdout);
            assert_eq!(r.sections, *answered, "{calls:?}");
            assert_eq!(r.stale, *stale, "{calls:?}");
            assert!(text.contains(has), "{calls:?}: {text}");
            assert!(!text.contains(lacks), "{calls:?}: {text}");
        }
        let plain = reply(
            &rec,
            &Identity {
                machine_id: String::new(),
                hostname: String::new(),
                drifted: false,
            },
            b"true",
        );
        assert_eq!(plain, Reply::default());
    }
}
