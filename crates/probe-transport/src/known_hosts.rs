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
//! costs the globs and hashed lines, not the whole file. A key accept-new records is appended
//! to the file and to the parsed copy together ([`record_key`], one at a time per process), and
//! the copy takes the file's new identity, so a first audit of a new fleet parses the file once,
//! not once per host; a change by anyone else still reads the file again.

use std::collections::{BTreeMap, HashMap};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError, RwLock, RwLockReadGuard};

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
    /// Lines of the file, usable or not: the next line appended is `lines + 1`.
    lines: usize,
    /// The file's last line has no newline yet: an append starts with one.
    open_line: bool,
}

impl FileEntries {
    fn parse(text: &str, file: &Path) -> FileEntries {
        let mut out = FileEntries::default();
        for (i, raw) in text.lines().enumerate() {
            out.lines = i + 1;
            if let Some(e) = parse_line(raw, file, i + 1) {
                out.push(e);
            }
        }
        out.open_line = !text.is_empty() && !text.ends_with('\n');
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
        std::fs::metadata(path).ok().map(|m| Stamp::of_metadata(&m))
    }

    fn of_metadata(m: &std::fs::Metadata) -> Stamp {
        use std::os::unix::fs::MetadataExt as _;
        Stamp {
            dev: m.dev(),
            ino: m.ino(),
            len: m.len(),
            mtime: m.mtime(),
            mtime_nsec: m.mtime_nsec(),
        }
    }
}

/// One file's entries as this process knows them, shared by every connection that loaded
/// them; only [`record_key`] changes them, by appending what it wrote to the file.
type Shared = Arc<RwLock<FileEntries>>;

fn read(entries: &Shared) -> RwLockReadGuard<'_, FileEntries> {
    entries.read().unwrap_or_else(PoisonError::into_inner)
}

/// A parsed file: what it was when its entries were last true of it.
struct Cached {
    /// `None`: the file may hold more than the entries (someone wrote with our append): read
    /// it again at the next load.
    stamp: Option<Stamp>,
    entries: Shared,
    /// Times the file was read and parsed in this process.
    parses: usize,
}

type Parsed = BTreeMap<PathBuf, Cached>;

/// Every known_hosts file this process has parsed, while it stays unchanged. Its lock also
/// serialises this process's appends ([`record_key`]).
static PARSED: Mutex<Parsed> = Mutex::new(BTreeMap::new());

fn parsed() -> std::sync::MutexGuard<'static, Parsed> {
    PARSED.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Reads (bounded) and parses a file that exists.
fn read_entries(path: &Path) -> std::io::Result<FileEntries> {
    let text =
        crate::local_file::read_bounded_text(path, crate::local_file::CONFIG_CAP).map_err(|e| {
            match e.kind {
                crate::local_file::LocalFileErrorKind::Io(io) => io,
                other => std::io::Error::other(other.to_string()),
            }
        })?;
    Ok(FileEntries::parse(&text, path))
}

/// The entries of a file with identity `stamp`: the parsed copy while it is true of the file,
/// else the file read and parsed again (and kept).
fn current(parsed: &mut Parsed, path: &Path, stamp: Stamp) -> std::io::Result<Shared> {
    let parses = match parsed.get(path) {
        Some(c) if c.stamp == Some(stamp) => return Ok(Arc::clone(&c.entries)),
        Some(c) => c.parses,
        None => 0,
    };
    let entries = Arc::new(RwLock::new(read_entries(path)?));
    parsed.insert(
        path.to_path_buf(),
        Cached {
            stamp: Some(stamp),
            entries: Arc::clone(&entries),
            parses: parses + 1,
        },
    );
    Ok(entries)
}

/// A file's entries: the parsed copy while the file is unchanged, else read (bounded) and
/// parsed again. Unreadable, absent or oversized files count as empty, as before.
fn file_entries(path: &Path) -> Option<Shared> {
    // One parse per change: connections that start together wait for the first one's parse.
    // The file is looked at under the lock too: a look taken before an append of ours that
    // then waited for the lock would not match the copy and parse the file again.
    let mut parsed = parsed();
    let stamp = Stamp::of(path)?;
    current(&mut parsed, path, stamp).ok()
}

/// What [`record_key`] did.
#[derive(Debug)]
pub(crate) enum Recorded {
    /// The key was appended as this line of the file.
    Appended(usize),
    /// The file had a line for the host by the time it was our turn to write (another
    /// connection of this process or another process recorded one): its verdict, never
    /// `Unknown`.
    Meanwhile(Verdict),
}

/// accept-new: records `key` for `names` (the first is written, as OpenSSH does) at the end of
/// `file`, creating the file (0600) and its directory (0700) when missing, unless the file,
/// read as it is now, already knows the host. One append at a time per process, so connections
/// that meet the same new host together write one line. The parsed copy gets the line, and the
/// file's identity after the write when the file grew by exactly that line; otherwise someone
/// else wrote too and the next load reads the file again.
pub(crate) fn record_key(
    file: &Path,
    names: &[String],
    key: &PublicKey,
) -> std::io::Result<Recorded> {
    use std::os::unix::fs::{DirBuilderExt as _, OpenOptionsExt as _};
    let mut parsed = parsed();
    if let Some(dir) = file
        .parent()
        .filter(|d| !d.as_os_str().is_empty() && !d.exists())
    {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)?;
    }
    let before = Stamp::of(file);
    let entries = match before {
        Some(stamp) => current(&mut parsed, file, stamp)?,
        None => Shared::default(),
    };
    let verdict = KnownHosts {
        files: vec![Arc::clone(&entries)],
    }
    .check_key(names, key);
    if !matches!(verdict, Verdict::Unknown { .. }) {
        return Ok(Recorded::Meanwhile(verdict));
    }
    let line = entry_line(names.first().map_or("", String::as_str), key);
    let (number, text) = {
        let e = read(&entries);
        let lead = if e.open_line { "\n" } else { "" };
        (e.lines + 1, format!("{lead}{line}\n"))
    };
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .open(file)?;
    f.write_all(text.as_bytes())?;
    let after = f.metadata().map(|m| Stamp::of_metadata(&m)).ok();
    let ours_alone = match (before, after) {
        (Some(b), Some(a)) => {
            a.dev == b.dev && a.ino == b.ino && a.len == b.len + text.len() as u64
        }
        (None, Some(a)) => a.len == text.len() as u64,
        (_, None) => false,
    };
    let parses = parsed.get(file).map_or(0, |c| c.parses);
    let stamp = match parse_line(&line, file, number) {
        Some(entry) if ours_alone => {
            let mut e = entries.write().unwrap_or_else(PoisonError::into_inner);
            e.push(entry);
            e.lines = number;
            e.open_line = false;
            after
        }
        _ => None,
    };
    parsed.insert(
        file.to_path_buf(),
        Cached {
            stamp,
            entries,
            parses,
        },
    );
    Ok(Recorded::Appended(number))
}

/// Times `file` was read and parsed in this process.
#[cfg(test)]
fn parses(file: &Path) -> usize {
    parsed().get(file).map_or(0, |c| c.parses)
}

/// All entries of the known_hosts files consulted for a connection.
#[derive(Debug, Clone, Default)]
pub(crate) struct KnownHosts {
    files: Vec<Shared>,
}

/// The entries of a [`KnownHosts`], read-locked for one lookup.
struct View<'a> {
    files: Vec<RwLockReadGuard<'a, FileEntries>>,
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
        self.files
            .push(Arc::new(RwLock::new(FileEntries::parse(text, file))));
    }

    fn view(&self) -> View<'_> {
        View {
            files: self.files.iter().map(read).collect(),
        }
    }

    /// See [`View::check_key`].
    pub fn check_key(&self, names: &[String], key: &PublicKey) -> Verdict {
        self.view().check_key(names, key)
    }

    /// See [`View::check_certificate`].
    pub fn check_certificate(
        &self,
        names: &[String],
        principal: &str,
        cert: &Certificate,
    ) -> Verdict {
        self.view().check_certificate(names, principal, cert)
    }

    /// See [`View::known_algorithms`].
    pub fn known_algorithms(&self, names: &[String]) -> Vec<Algorithm> {
        self.view().known_algorithms(names)
    }

    /// See [`View::has_cert_authority`].
    pub fn has_cert_authority(&self, names: &[String]) -> bool {
        self.view().has_cert_authority(names)
    }

    #[cfg(test)]
    fn entry_count(&self) -> usize {
        self.view().entries().count()
    }
}

impl View<'_> {
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
    fn check_key(&self, names: &[String], key: &PublicKey) -> Verdict {
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
    fn check_certificate(&self, names: &[String], principal: &str, cert: &Certificate) -> Verdict {
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
    fn known_algorithms(&self, names: &[String]) -> Vec<Algorithm> {
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
    fn has_cert_authority(&self, names: &[String]) -> bool {
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

#[cfg(test)]
mod tests;
