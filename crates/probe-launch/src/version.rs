//! The one version order: PEP 440 (epochs, releases with trailing zeros equal, pre-, post- and
//! dev-releases; the local part `+cu128` does not order). Every comparison of package and engine
//! versions goes through it: the impact rules' direction, the catalogs' bounds, snapshot diffs.

use std::cmp::Ordering;

/// A pre-release phase, in PEP 440 order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Phase {
    Alpha,
    Beta,
    Rc,
}

/// A parsed version. Text that is not PEP 440 keeps the numbers it starts with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Version {
    epoch: u64,
    /// Trailing zeros dropped: `1.0` = `1.0.0`.
    release: Vec<u64>,
    pre: Option<(Phase, u64)>,
    post: Option<u64>,
    dev: Option<u64>,
}

/// Where a part sorts: before everything, at a value, after everything.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Slot<T> {
    First,
    At(T),
    Last,
}

/// Epoch, release, pre, post, dev: compared in that order.
type SortKey<'a> = (u64, &'a [u64], Slot<(Phase, u64)>, Slot<u64>, Slot<u64>);

fn digits(text: &str) -> (Option<u64>, &str) {
    let end = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (number, rest) = text.split_at(end);
    (number.parse().ok(), rest)
}

fn separator(text: &str) -> &str {
    text.strip_prefix(['.', '-', '_']).unwrap_or(text)
}

/// A `word[N]` suffix (`rc1`, `.post2`, `-dev`), its number 0 when left out.
fn suffix<'a>(text: &'a str, words: &[&'static str]) -> Option<(&'static str, u64, &'a str)> {
    let text = separator(text);
    let word = words.iter().find(|w| text.starts_with(**w))?;
    let rest = separator(text.get(word.len()..)?);
    let (number, rest) = digits(rest);
    Some((word, number.unwrap_or(0), rest))
}

impl Version {
    pub fn parse(text: &str) -> Version {
        let lower = text.trim().to_ascii_lowercase();
        let public = lower.split('+').next().unwrap_or("");
        let mut rest = public.trim_start_matches('v');
        let mut epoch = 0;
        if let Some((e, r)) = rest.split_once('!')
            && let Ok(e) = e.parse()
        {
            epoch = e;
            rest = r;
        }
        let mut release = Vec::new();
        loop {
            let (number, after) = digits(rest);
            let Some(number) = number else { break };
            release.push(number);
            rest = after;
            match rest.strip_prefix('.') {
                Some(r) if r.starts_with(|c: char| c.is_ascii_digit()) => rest = r,
                _ => break,
            }
        }
        while release.last() == Some(&0) {
            release.pop();
        }
        let mut version = Version {
            epoch,
            release,
            pre: None,
            post: None,
            dev: None,
        };
        version.suffixes(rest);
        version
    }

    fn suffixes(&mut self, mut rest: &str) {
        let phases = ["alpha", "beta", "preview", "pre", "rc", "a", "b", "c"];
        if let Some((word, n, r)) = suffix(rest, &phases) {
            let phase = match word {
                "alpha" | "a" => Phase::Alpha,
                "beta" | "b" => Phase::Beta,
                _ => Phase::Rc,
            };
            self.pre = Some((phase, n));
            rest = r;
        }
        if let Some((_, n, r)) = suffix(rest, &["post", "rev", "r"]) {
            self.post = Some(n);
            rest = r;
        } else if let Some(r) = rest.strip_prefix('-')
            && let (Some(n), r) = digits(r)
        {
            self.post = Some(n);
            rest = r;
        }
        if let Some((_, n, _)) = suffix(rest, &["dev"]) {
            self.dev = Some(n);
        }
    }

    /// The release numbers (`0.11.0rc1` -> 0, 11): what a pre-release shares with its release.
    pub fn release(&self) -> &[u64] {
        &self.release
    }

    fn key(&self) -> SortKey<'_> {
        let pre = match (self.pre, self.post, self.dev) {
            // `1.0.dev1` sorts before `1.0a1`.
            (None, None, Some(_)) => Slot::First,
            (None, _, _) => Slot::Last,
            (Some(p), _, _) => Slot::At(p),
        };
        let post = self.post.map_or(Slot::First, Slot::At);
        let dev = self.dev.map_or(Slot::Last, Slot::At);
        (self.epoch, &self.release, pre, post, dev)
    }
}

impl Ord for Version {
    fn cmp(&self, other: &Version) -> Ordering {
        self.key().cmp(&other.key())
    }
}

impl PartialOrd for Version {
    fn partial_cmp(&self, other: &Version) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// Two version strings in PEP 440 order.
pub fn compare(left: &str, right: &str) -> Ordering {
    Version::parse(left).cmp(&Version::parse(right))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cmp::Ordering::{Equal, Greater, Less};

    #[test]
    fn pep440_order() {
        let cases = [
            ("0.5.9", "0.5.10", Less),
            ("0.33.0", "0.8.5", Greater),
            ("2.9.1+cu128", "2.9.1+cu126", Equal),
            ("2.9.1+cu128", "2.9.1", Equal),
            ("0.11.0", "0.11.0rc1", Greater),
            ("0.11.0rc1", "0.11.0rc2", Less),
            ("0.11.0b2", "0.11.0rc1", Less),
            ("1.0a1", "1.0b1", Less),
            ("1.0", "1.0.0", Equal),
            ("v1", "1.0.0", Equal),
            ("1.0", "1.0.1", Less),
            ("1.0", "1.0.0.1", Less),
            ("1.0.dev1", "1.0a1", Less),
            ("1.0a1.dev1", "1.0a1", Less),
            ("1.0", "1.0.post1", Less),
            ("1.0.post1", "1.0.1", Less),
            ("1.0-1", "1.0.post1", Equal),
            ("1!0.1", "2.0", Greater),
            ("0.10.1.1", "0.10.1", Greater),
            ("0.9", "0.10", Less),
            ("", "0", Equal),
            ("garbage", "0.0.1", Less),
            ("1.0RC1", "1.0rc1", Equal),
        ];
        for (a, b, want) in cases {
            assert_eq!(compare(a, b), want, "{a} vs {b}");
            assert_eq!(compare(b, a), want.reverse(), "{b} vs {a}");
        }
    }

    #[test]
    fn a_pre_release_shares_its_release() {
        assert_eq!(Version::parse("0.11.0rc1").release(), [0, 11]);
        assert_eq!(Version::parse("v0.9.1rc1+cu124").release(), [0, 9, 1]);
    }
}
