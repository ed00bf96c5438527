//! Our own `known_hosts` reader, because russh's misses patterns, tabs, runs of spaces and
//! markers (see ssh-facts §5). Semantics follow OpenSSH's `hostfile.c`/`match.c`:
//!
//! * a line is `[@marker] patterns keytype base64 [comment]`, fields split on runs of blanks;
//! * `patterns` is a comma list of globs (`*`, `?`), each may be negated with `!` (a negated match
//!   vetoes the line), or a single hashed name `|1|salt|hmac-sha1`;
//! * a host on a non-default port is looked up as `[host]:port` (patterns must be written that
//!   way: `[10.0.0.*]:2222`). Only when that finds nothing is the portless `host` consulted,
//!   and only an exact key match there counts (OpenSSH's "found matching key w/out port"): a
//!   different key on a plain `host` line, which is port 22's, is never "changed" for
//!   `[host]:port`, and `@revoked` lines must name `[host]:port`. Checked against `ssh` by
//!   `tests/transport/ssh_hostkeys.rs`;
//! * `@revoked` lines refuse their key outright; `@cert-authority` lines name CAs whose host
//!   certificates are trusted for the matching hosts.
//!
//! Lines that cannot be parsed are skipped, as OpenSSH does.
//!
//! A fleet's known_hosts holds a line per host, and an audit connects to every one of them: a
//! file is parsed once per process and kept while it is unchanged (same inode, size and
//! modification time), and lines that name hosts literally are indexed by name, so a lookup
//! costs the globs and hashed lines, not the whole file.

use std::collections::{BTreeMap, HashMap};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use base64::Engine as _;
use hmac::{KeyInit as _, Mac as _};
use russh::keys::ssh_key::{self, Algorithm, Certificate, HashAlg, PublicKey};

type HmacSha1 = hmac::Hmac<sha1::Sha1>;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Marker {
    None,
    Revoked,
    CertAuthority,
}

#[derive(Debug, Clone)]
enum Hosts {
    Hashed { salt: Vec<u8>, hash: Vec<u8> },
    Patterns(Vec<String>),
}

impl Hosts {
    /// Whether the line names `name`, which is already lower-case.
    fn matches(&self, name: &str) -> bool {
        match self {
            Hosts::Hashed { salt, hash } => {
                let Ok(mut mac) = HmacSha1::new_from_slice(salt) else {
                    return false;
                };
                mac.update(name.as_bytes());
                mac.verify_slice(hash).is_ok()
            }
            Hosts::Patterns(patterns) => {
                let mut positive = false;
                for p in patterns {
                    if let Some(neg) = p.strip_prefix('!') {
                        if glob_match(neg.as_bytes(), name.as_bytes()) {
                            return false;
                        }
                    } else if glob_match(p.as_bytes(), name.as_bytes()) {
                        positive = true;
                    }
                }
                positive
            }
        }
    }
}

/// OpenSSH `match_pattern`: `*` any run, `?` one character. Both sides already lower-case.
pub(crate) fn glob_match(pattern: &[u8], text: &[u8]) -> bool {
    let (mut p, mut t) = (0usize, 0usize);
    let (mut star, mut mark) = (None::<usize>, 0usize);
    while let Some(&tc) = text.get(t) {
        match pattern.get(p) {
            Some(b'*') => {
                star = Some(p);
                mark = t;
                p += 1;
            }
            Some(&c) if c == b'?' || c == tc => {
                p += 1;
                t += 1;
            }
            _ => match star {
                Some(s) => {
                    p = s + 1;
                    mark += 1;
                    t = mark;
                }
                None => return false,
            },
        }
    }
    pattern
        .get(p..)
        .unwrap_or_default()
        .iter()
        .all(|&c| c == b'*')
}

/// One usable line of a known_hosts file.
#[derive(Debug, Clone)]
struct Entry {
    file: PathBuf,
    line: usize,
    marker: Marker,
    hosts: Hosts,
    key: PublicKey,
}

/// Where a key was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Location {
    pub file: PathBuf,
    pub line: usize,
}

/// The result of checking a server key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Known for this host at this location.
    Known(Location),
    /// Known through a trusted `@cert-authority` at this location.
    CertTrusted(Location),
    /// This exact key is `@revoked`.
    Revoked(Location),
    /// The host is known with a different key of the same type.
    Changed(Location),
    /// Certificate presented but not acceptable.
    BadCertificate(String),
    /// Not known. `other_types`: the host is known with keys of other types.
    Unknown { other_types: bool },
}

/// The usable lines of one known_hosts file, with literal names indexed.
#[derive(Debug, Default)]
struct FileEntries {
    entries: Vec<Entry>,
    /// Lines whose patterns are all literal names (no glob, no negation): name -> the lines'
    /// indexes, in file order.
    by_name: HashMap<String, Vec<usize>>,
    /// Lines with a glob, a negation or a hashed name: tried for every lookup.
    others: Vec<usize>,
}

impl FileEntries {
    fn parse(text: &str, file: &Path) -> FileEntries {
        let mut out = FileEntries::default();
        for (i, raw) in text.lines().enumerate() {
            if let Some(e) = parse_line(raw, file, i + 1) {
                out.push(e);
            }
        }
        out
    }

    fn push(&mut self, entry: Entry) {
        let at = self.entries.len();
        match &entry.hosts {
            Hosts::Patterns(patterns)
                if patterns
                    .iter()
                    .all(|p| !p.starts_with('!') && !p.contains(['*', '?'])) =>
            {
                for p in patterns {
                    let lines = self.by_name.entry(p.clone()).or_default();
                    if lines.last() != Some(&at) {
                        lines.push(at);
                    }
                }
            }
            _ => self.others.push(at),
        }
        self.entries.push(entry);
    }

    /// The lines that may name `name` (lower-case), in file order.
    fn candidates<'a>(&'a self, name: &str) -> impl Iterator<Item = &'a Entry> + 'a {
        let named = self.by_name.get(name).map_or(&[][..], Vec::as_slice);
        merge_sorted(named, &self.others).filter_map(|i| self.entries.get(i))
    }
}

/// The union of two ascending index lists, ascending.
fn merge_sorted<'a>(a: &'a [usize], b: &'a [usize]) -> impl Iterator<Item = usize> + 'a {
    let (mut i, mut j) = (0, 0);
    std::iter::from_fn(move || {
        let next = match (a.get(i), b.get(j)) {
            (Some(&x), Some(&y)) if x <= y => {
                i += 1;
                if x == y {
                    j += 1;
                }
                x
            }
            (_, Some(&y)) => {
                j += 1;
                y
            }
            (Some(&x), None) => {
                i += 1;
                x
            }
            (None, None) => return None,
        };
        Some(next)
    })
}

/// What identifies a file's content without reading it: a change of any of these reparses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp {
    dev: u64,
    ino: u64,
    len: u64,
    mtime: i64,
    mtime_nsec: i64,
}

impl Stamp {
    fn of(path: &Path) -> Option<Stamp> {
        use std::os::unix::fs::MetadataExt as _;
        let m = std::fs::metadata(path).ok()?;
        Some(Stamp {
            dev: m.dev(),
            ino: m.ino(),
            len: m.len(),
            mtime: m.mtime(),
            mtime_nsec: m.mtime_nsec(),
        })
    }
}

type Parsed = BTreeMap<PathBuf, (Stamp, Arc<FileEntries>)>;

/// Every known_hosts file this process has parsed, while it stays unchanged.
static PARSED: Mutex<Parsed> = Mutex::new(BTreeMap::new());

/// A file's entries: the parsed copy while the file is unchanged, else read (bounded) and
/// parsed again. Unreadable, absent or oversized files count as empty, as before.
fn file_entries(path: &Path) -> Option<Arc<FileEntries>> {
    let stamp = Stamp::of(path)?;
    // One parse per change: connections that start together wait for the first one's parse.
    let mut parsed = PARSED
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some((seen, entries)) = parsed.get(path)
        && *seen == stamp
    {
        return Some(Arc::clone(entries));
    }
    let text = crate::local_file::read_bounded_text(path, crate::local_file::CONFIG_CAP).ok()?;
    let entries = Arc::new(FileEntries::parse(&text, path));
    parsed.insert(path.to_path_buf(), (stamp, Arc::clone(&entries)));
    Some(entries)
}

/// All entries of the known_hosts files consulted for a connection.
#[derive(Debug, Clone, Default)]
pub(crate) struct KnownHosts {
    files: Vec<Arc<FileEntries>>,
}

/// The names a host is looked up under: first `[host]:port` (or `host` on port 22), as
/// OpenSSH's `put_host_port`; then, on a non-default port, the portless `host`, which
/// [`KnownHosts::check_key`] consults only for an exact key match.
pub(crate) fn lookup_names(host: &str, port: u16) -> Vec<String> {
    let host = host.to_ascii_lowercase();
    if port == 22 {
        vec![host]
    } else {
        vec![format!("[{host}]:{port}"), host]
    }
}

impl KnownHosts {
    /// Reads every file that exists; missing or unreadable files count as empty.
    pub fn load(files: &[PathBuf]) -> KnownHosts {
        KnownHosts {
            // Not a regular file, or absurdly large: read as empty (no key is known from it).
            files: files.iter().filter_map(|f| file_entries(f)).collect(),
        }
    }

    #[cfg(test)]
    pub fn add_text(&mut self, text: &str, file: &Path) {
        self.files.push(Arc::new(FileEntries::parse(text, file)));
    }

    fn entries(&self) -> impl Iterator<Item = &Entry> {
        self.files.iter().flat_map(|f| f.entries.iter())
    }

    /// The lines of `marker` that name `name`, in file order.
    fn matching(&self, name: &str, marker: Marker) -> Vec<&Entry> {
        let name = name.to_ascii_lowercase();
        self.files
            .iter()
            .flat_map(|f| f.candidates(&name))
            .filter(|e| e.marker == marker && e.hosts.matches(&name))
            .collect()
    }

    fn revoked(&self, names: &[String], key: &ssh_key::public::KeyData) -> Option<Location> {
        let names: Vec<String> = names.iter().map(|n| n.to_ascii_lowercase()).collect();
        self.entries()
            .filter(|e| e.marker == Marker::Revoked && e.key.key_data() == key)
            .find(|e| names.iter().any(|n| e.hosts.matches(n)) || e.hosts_is_star())
            .map(Entry::location)
    }

    /// Checks a plain server key for the names from [`lookup_names`]: the first decides; the
    /// others (the portless name) count only for an exact match when the first knows nothing.
    pub fn check_key(&self, names: &[String], key: &PublicKey) -> Verdict {
        let Some((primary, fallback)) = names.split_first() else {
            return Verdict::Unknown { other_types: false };
        };
        let verdict = self.check_name(std::slice::from_ref(primary), key);
        if matches!(verdict, Verdict::Unknown { .. }) {
            for name in fallback {
                let v = self.check_name(std::slice::from_ref(name), key);
                if matches!(v, Verdict::Known(_)) {
                    return v;
                }
            }
        }
        verdict
    }

    fn check_name(&self, names: &[String], key: &PublicKey) -> Verdict {
        if let Some(loc) = self.revoked(names, key.key_data()) {
            return Verdict::Revoked(loc);
        }
        let mut other_types = false;
        for name in names {
            let mut changed = None;
            let mut any = false;
            for e in self.matching(name, Marker::None) {
                any = true;
                if e.key.key_data() == key.key_data() {
                    return Verdict::Known(e.location());
                }
                if same_type(&e.key.algorithm(), &key.algorithm()) {
                    changed.get_or_insert(e.location());
                } else {
                    other_types = true;
                }
            }
            if let Some(loc) = changed {
                return Verdict::Changed(loc);
            }
            if any {
                // Known under this name with other key types: do not fall back to other names.
                break;
            }
        }
        Verdict::Unknown { other_types }
    }

    /// Checks a host certificate against the `@cert-authority` lines for `names`.
    /// `principal` is the bare host name the certificate must be issued for.
    pub fn check_certificate(
        &self,
        names: &[String],
        principal: &str,
        cert: &Certificate,
    ) -> Verdict {
        let ca_key = PublicKey::new(cert.signature_key().clone(), "");
        if let Some(loc) = self.revoked(names, cert.signature_key()) {
            return Verdict::Revoked(loc);
        }
        if let Some(loc) = self.revoked(names, cert.public_key()) {
            return Verdict::Revoked(loc);
        }
        let cas: Vec<&Entry> = names
            .iter()
            .flat_map(|n| self.matching(n, Marker::CertAuthority))
            .filter(|e| e.key.key_data() == ca_key.key_data())
            .collect();
        let Some(ca) = cas.first() else {
            return Verdict::BadCertificate(format!(
                "signed by {} {}, which no @cert-authority line trusts for this host",
                ca_key.algorithm(),
                ca_key.fingerprint(HashAlg::Sha256)
            ));
        };
        if cert.cert_type() != ssh_key::certificate::CertType::Host {
            return Verdict::BadCertificate("certificate is not a host certificate".into());
        }
        let fp = ca_key.fingerprint(HashAlg::Sha256);
        if let Err(e) = cert.validate([&fp]) {
            return Verdict::BadCertificate(format!("invalid or expired certificate: {e}"));
        }
        let principal = principal.to_ascii_lowercase();
        if !cert.valid_principals().is_empty()
            && !cert
                .valid_principals()
                .iter()
                .any(|p| p.to_ascii_lowercase() == principal)
        {
            return Verdict::BadCertificate(format!(
                "certificate principals {:?} do not include {principal}",
                cert.valid_principals()
            ));
        }
        if !cert.critical_options().is_empty() {
            return Verdict::BadCertificate("certificate has unsupported critical options".into());
        }
        Verdict::CertTrusted(ca.location())
    }

    /// Key algorithms already known for the host, in file order, to offer first.
    pub fn known_algorithms(&self, names: &[String]) -> Vec<Algorithm> {
        let mut out: Vec<Algorithm> = Vec::new();
        for name in names {
            for e in self.matching(name, Marker::None) {
                let algs = match e.key.algorithm() {
                    Algorithm::Rsa { .. } => vec![
                        Algorithm::Rsa {
                            hash: Some(HashAlg::Sha512),
                        },
                        Algorithm::Rsa {
                            hash: Some(HashAlg::Sha256),
                        },
                        Algorithm::Rsa { hash: None },
                    ],
                    other => vec![other],
                };
                for a in algs {
                    if !out.contains(&a) {
                        out.push(a);
                    }
                }
            }
            if !out.is_empty() {
                break;
            }
        }
        out
    }

    /// Whether any `@cert-authority` line applies to the host.
    pub fn has_cert_authority(&self, names: &[String]) -> bool {
        names
            .iter()
            .any(|n| !self.matching(n, Marker::CertAuthority).is_empty())
    }
}

impl Entry {
    fn location(&self) -> Location {
        Location {
            file: self.file.clone(),
            line: self.line,
        }
    }
    fn hosts_is_star(&self) -> bool {
        matches!(&self.hosts, Hosts::Patterns(p) if p.iter().any(|x| x == "*"))
    }
}

fn same_type(a: &Algorithm, b: &Algorithm) -> bool {
    match (a, b) {
        (Algorithm::Rsa { .. }, Algorithm::Rsa { .. }) => true,
        _ => a == b,
    }
}

fn parse_line(raw: &str, file: &Path, line: usize) -> Option<Entry> {
    let text = raw.trim();
    if text.is_empty() || text.starts_with('#') {
        return None;
    }
    let mut fields = text.split_ascii_whitespace();
    let mut first = fields.next()?;
    let marker = match first {
        "@revoked" => Marker::Revoked,
        "@cert-authority" => Marker::CertAuthority,
        m if m.starts_with('@') => return None,
        _ => Marker::None,
    };
    if marker != Marker::None {
        first = fields.next()?;
    }
    let hosts = parse_hosts(first)?;
    let key_type = fields.next()?;
    let key_b64 = fields.next()?;
    let key = PublicKey::from_openssh(&format!("{key_type} {key_b64}")).ok()?;
    Some(Entry {
        file: file.to_path_buf(),
        line,
        marker,
        hosts,
        key,
    })
}

fn parse_hosts(field: &str) -> Option<Hosts> {
    if let Some(rest) = field.strip_prefix("|1|") {
        let (salt, hash) = rest.split_once('|')?;
        let b64 = base64::engine::general_purpose::STANDARD;
        let salt = b64.decode(salt).ok()?;
        let hash = b64.decode(hash).ok()?;
        return Some(Hosts::Hashed { salt, hash });
    }
    let patterns: Vec<String> = field
        .split(',')
        .filter(|p| !p.is_empty())
        .map(|p| p.to_ascii_lowercase())
        .collect();
    if patterns.is_empty() {
        None
    } else {
        Some(Hosts::Patterns(patterns))
    }
}

/// The line OpenSSH's accept-new writes (with `HashKnownHosts no`): `name keytype base64`.
pub(crate) fn entry_line(name: &str, key: &PublicKey) -> String {
    let bare = PublicKey::new(key.key_data().clone(), "");
    let text = bare.to_openssh().unwrap_or_default();
    format!("{name} {}", text.trim())
}

/// Appends `line` to `file`, creating the file (0600) and its directory (0700) when missing.
pub(crate) fn append_line(file: &Path, line: &str) -> std::io::Result<usize> {
    use std::os::unix::fs::{DirBuilderExt as _, OpenOptionsExt as _};
    if let Some(dir) = file
        .parent()
        .filter(|d| !d.as_os_str().is_empty() && !d.exists())
    {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)?;
    }
    let existing = crate::local_file::read_bounded(file, crate::local_file::CONFIG_CAP)
        .map_err(|e| match e.kind {
            crate::local_file::LocalFileErrorKind::Io(io) => io,
            other => std::io::Error::other(other.to_string()),
        })
        .or_else(|e| {
            if e.kind() == std::io::ErrorKind::NotFound {
                Ok(Vec::new())
            } else {
                Err(e)
            }
        })?;
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .open(file)?;
    let mut text = String::new();
    if existing.last().is_some_and(|&b| b != b'\n') {
        text.push('\n');
    }
    text.push_str(line);
    text.push('\n');
    f.write_all(text.as_bytes())?;
    Ok(existing.iter().filter(|&&b| b == b'\n').count() + 1 + usize::from(text.starts_with('\n')))
}

#[cfg(test)]
mod tests {
    use super::*;

    const ED: &str =
        "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIIXIKTzi/yfsqgEKTPLIijlXXnrJ+ZW3MJOD1wu99o2n";

    fn key() -> PublicKey {
        PublicKey::from_openssh(ED).unwrap()
    }

    fn kh(text: &str) -> KnownHosts {
        let mut k = KnownHosts::default();
        k.add_text(text, Path::new("kh"));
        k
    }

    #[test]
    fn glob() {
        assert!(glob_match(b"127.0.0.*", b"127.0.0.1"));
        assert!(glob_match(b"[127.0.0.?]:2222", b"[127.0.0.1]:2222"));
        assert!(!glob_match(b"[127.0.0.?]:2222", b"[127.0.0.12]:2222"));
        assert!(glob_match(b"*", b""));
        assert!(glob_match(b"a*b*c", b"axxbyyc"));
        assert!(!glob_match(b"a*b*c", b"axxbyy"));
    }

    #[test]
    fn tabs_spaces_lists_negation_and_ports() {
        let names = lookup_names("Web1.example", 2222);
        let k = kh(&format!("# c\n\nfoo,web1.example\t\t{ED}   comment here\n"));
        assert_eq!(
            k.check_key(&lookup_names("Web1.example", 22), &key()),
            Verdict::Known(Location {
                file: "kh".into(),
                line: 3
            })
        );
        // A plain `host` entry is port 22's: for another port only an exact match counts.
        assert!(matches!(k.check_key(&names, &key()), Verdict::Known(_)));
        let other = "web1.example ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIEtLI4lrNo2ZkA3KdgEPUojtQthXTvq2B3Oog8NLtZsS\n";
        assert_eq!(
            kh(other).check_key(&names, &key()),
            Verdict::Unknown { other_types: false },
            "a different key on port 22 is not a changed key on port 2222"
        );
        let both = format!("web1.example {ED}\n[web1.example]:2222 {}", &other[13..]);
        assert!(
            matches!(kh(&both).check_key(&names, &key()), Verdict::Changed(_)),
            "the bracketed entry decides"
        );
        let k = kh(&format!("*.example,!web1.example {ED}\n"));
        assert_eq!(
            k.check_key(&names, &key()),
            Verdict::Unknown { other_types: false }
        );
        let k = kh(&format!("[*.example]:2222 {ED}\n"));
        assert!(matches!(k.check_key(&names, &key()), Verdict::Known(_)));
        let k = kh(&format!("[web1.example]:2223 {ED}\n"));
        assert_eq!(
            k.check_key(&names, &key()),
            Verdict::Unknown { other_types: false }
        );
    }

    #[test]
    fn hashed_revoked_and_changed() {
        // `ssh-keygen -H` style entry for "[h]:2222" with salt 0..20.
        let salt: Vec<u8> = (0u8..20).collect();
        let mut mac = HmacSha1::new_from_slice(&salt).unwrap();
        mac.update(b"[h]:2222");
        let hash = mac.finalize().into_bytes();
        let b64 = base64::engine::general_purpose::STANDARD;
        let line = format!("|1|{}|{} {ED}\n", b64.encode(&salt), b64.encode(hash));
        let names = lookup_names("h", 2222);
        assert!(matches!(
            kh(&line).check_key(&names, &key()),
            Verdict::Known(_)
        ));
        assert!(matches!(
            kh(&line).check_key(&lookup_names("g", 2222), &key()),
            Verdict::Unknown { .. }
        ));
        let revoked = format!("{line}@revoked * {ED}\n");
        assert_eq!(
            kh(&revoked).check_key(&names, &key()),
            Verdict::Revoked(Location {
                file: "kh".into(),
                line: 2
            })
        );
        let other =
            "h ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIEtLI4lrNo2ZkA3KdgEPUojtQthXTvq2B3Oog8NLtZsS\n";
        assert!(matches!(
            kh(other).check_key(&lookup_names("h", 22), &key()),
            Verdict::Changed(_)
        ));
    }

    #[test]
    fn garbage_is_skipped() {
        let k = kh(
            "@weird x y z\n|1|%%%|x ssh-ed25519 AAAA\nonlyhost\nh ssh-ed25519 !!!\n\u{1b}[31m\n",
        );
        assert_eq!(k.entries().count(), 0);
    }

    #[test]
    fn merged_indexes_stay_in_file_order() {
        let cases: [(&[usize], &[usize], &[usize]); 5] = [
            (&[], &[], &[]),
            (&[0, 4], &[], &[0, 4]),
            (&[], &[1, 2], &[1, 2]),
            (&[0, 3, 7], &[1, 3, 9], &[0, 1, 3, 7, 9]),
            (&[5], &[0, 1, 2], &[0, 1, 2, 5]),
        ];
        for (a, b, want) in cases {
            assert_eq!(
                merge_sorted(a, b).collect::<Vec<_>>(),
                want,
                "{a:?} + {b:?}"
            );
        }
    }

    /// The index answers as the scan did: a glob line before a literal one is still the first
    /// match, a negation still vetoes its line, and a name written in capitals still matches.
    #[test]
    fn indexed_lines_answer_as_a_scan_would() {
        let other =
            "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIBU5ZBlqPjUaMbl4kbjb6YHW1sXmWK+ffaTLbAbSsafA";
        let text = format!(
            "web*.example {other}\nweb1.example,WEB2.example {ED}\n*.example,!web3.example {ED}\n"
        );
        let k = kh(&text);
        match k.check_key(&lookup_names("web1.example", 22), &key()) {
            Verdict::Known(loc) => assert_eq!(loc.line, 2),
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            k.check_key(&lookup_names("Web2.Example", 22), &key()),
            Verdict::Known(_)
        ));
        // web3 is vetoed on line 3 and matches the glob of line 1 with another key: changed.
        match k.check_key(&lookup_names("web3.example", 22), &key()) {
            Verdict::Changed(loc) => assert_eq!(loc.line, 1),
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            k.check_key(&lookup_names("db.example", 22), &key()),
            Verdict::Known(_)
        ));
    }

    /// A file is parsed once while unchanged; a rewrite (another size or time) is read again.
    #[test]
    fn a_parsed_file_is_reused_until_it_changes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("known_hosts");
        std::fs::write(&path, format!("h1 {ED}\n")).unwrap();
        let first = KnownHosts::load(std::slice::from_ref(&path));
        let again = KnownHosts::load(std::slice::from_ref(&path));
        assert!(
            Arc::ptr_eq(&first.files[0], &again.files[0]),
            "parsed twice"
        );
        assert!(matches!(
            again.check_key(&lookup_names("h1", 22), &key()),
            Verdict::Known(_)
        ));
        std::fs::write(&path, format!("h1 {ED}\nh2 {ED}\n")).unwrap();
        let changed = KnownHosts::load(std::slice::from_ref(&path));
        assert!(
            !Arc::ptr_eq(&first.files[0], &changed.files[0]),
            "stale copy kept"
        );
        assert!(matches!(
            changed.check_key(&lookup_names("h2", 22), &key()),
            Verdict::Known(_)
        ));
        std::fs::remove_file(&path).unwrap();
        assert!(
            KnownHosts::load(std::slice::from_ref(&path))
                .files
                .is_empty()
        );
    }
}
