use super::*;

const ED: &str = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIIXIKTzi/yfsqgEKTPLIijlXXnrJ+ZW3MJOD1wu99o2n";

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
    let k =
        kh("@weird x y z\n|1|%%%|x ssh-ed25519 AAAA\nonlyhost\nh ssh-ed25519 !!!\n\u{1b}[31m\n");
    assert_eq!(k.entry_count(), 0);
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
    let other = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIBU5ZBlqPjUaMbl4kbjb6YHW1sXmWK+ffaTLbAbSsafA";
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
    assert_eq!(parses(&path), 1);
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

fn names(host: &str) -> Vec<String> {
    lookup_names(host, 22)
}

/// A known_hosts file holding `text`, in a directory of its own.
fn file_with(text: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("known_hosts");
    std::fs::write(&path, text).unwrap();
    (dir, path)
}

/// Appends a line for `host` the way another process would: not through [`record_key`].
fn append_as_another_process(path: &Path, host: &str) {
    let mut f = std::fs::OpenOptions::new().append(true).open(path).unwrap();
    f.write_all(format!("{host} {ED}\n").as_bytes()).unwrap();
}

fn load(path: &Path) -> KnownHosts {
    KnownHosts::load(&[path.to_path_buf()])
}

fn line_of(k: &KnownHosts, host: &str) -> usize {
    match k.check_key(&names(host), &key()) {
        Verdict::Known(loc) => loc.line,
        other => panic!("{host}: {other:?}"),
    }
}

/// accept-new's appends go into the parsed copy: N new hosts, one parse, every key found
/// at the line it was written to, and the file as OpenSSH would have written it.
#[test]
fn appended_keys_are_found_without_parsing_the_file_again() {
    // The operator's last line has no newline yet.
    let (_dir, path) = file_with(&format!("# fleet\nh0 {ED}"));
    let loaded = load(&path);
    const N: usize = 300;
    for i in 1..=N {
        let host = format!("h{i}");
        match record_key(&path, &names(&host), &key()).unwrap() {
            Recorded::Appended(line) => assert_eq!(line, i + 2, "{host}"),
            other => panic!("{host}: {other:?}"),
        }
        // A connection starting now loads the copy, not the file.
        let now = load(&path);
        assert_eq!(line_of(&now, &host), i + 2);
    }
    assert_eq!(parses(&path), 1, "the file was read again after an append");
    // One loaded before the appends sees them too (one shared copy).
    assert_eq!(line_of(&loaded, "h0"), 2);
    assert_eq!(line_of(&loaded, &format!("h{N}")), N + 2);
    let text = std::fs::read_to_string(&path).unwrap();
    let mut want = format!("# fleet\nh0 {ED}\n");
    for i in 1..=N {
        want.push_str(&format!("h{i} {ED}\n"));
    }
    assert_eq!(text, want);
    // What a fresh parse of the file says, the copy says.
    let fresh = FileEntries::parse(&text, &path);
    let copy = read(&loaded.files[0]);
    assert_eq!((copy.lines, copy.open_line), (fresh.lines, fresh.open_line));
    assert_eq!(copy.entries.len(), fresh.entries.len());
    assert_eq!(copy.by_name.len(), fresh.by_name.len());
}

/// A host recorded already (by an earlier connection, or written by anyone) is not
/// written twice: its verdict comes back instead.
#[test]
fn a_host_recorded_meanwhile_is_not_written_twice() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sub").join("known_hosts");
    assert!(matches!(
        record_key(&path, &names("h1"), &key()).unwrap(),
        Recorded::Appended(1)
    ));
    assert!(matches!(
        record_key(&path, &names("h1"), &key()).unwrap(),
        Recorded::Meanwhile(Verdict::Known(_))
    ));
    let other = PublicKey::from_openssh(
        "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIEtLI4lrNo2ZkA3KdgEPUojtQthXTvq2B3Oog8NLtZsS",
    )
    .unwrap();
    assert!(matches!(
        record_key(&path, &names("h1"), &other).unwrap(),
        Recorded::Meanwhile(Verdict::Changed(_))
    ));
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        format!("h1 {ED}\n")
    );
    use std::os::unix::fs::PermissionsExt as _;
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&path), 0o600);
    assert_eq!(mode(path.parent().unwrap()), 0o700);
}

/// A change the append did not make (another process writing the file, before our append
/// or between it and our look at the result) is read from the file.
#[test]
fn an_outside_edit_is_still_read() {
    let (_dir, path) = file_with(&format!("h0 {ED}\n"));
    load(&path);
    record_key(&path, &names("h1"), &key()).unwrap();
    assert_eq!(parses(&path), 1);
    // Another process appends (another length, another time).
    append_as_another_process(&path, "outside");
    let k = load(&path);
    assert_eq!(parses(&path), 2);
    assert_eq!(line_of(&k, "outside"), 3);
    // Another process writes between our look at the file and our append: the next
    // load reads it again and finds both lines.
    append_as_another_process(&path, "racer");
    record_key(&path, &names("h2"), &key()).unwrap();
    assert_eq!(
        parses(&path),
        3,
        "the racer's line is read before the append"
    );
    let k = load(&path);
    assert_eq!(line_of(&k, "racer"), 4);
    assert_eq!(line_of(&k, "h2"), 5);
    assert_eq!(parses(&path), 3);
    // A rewrite of the file (a new inode) is read again.
    std::fs::remove_file(&path).unwrap();
    std::fs::write(&path, format!("new {ED}\n")).unwrap();
    let k = load(&path);
    assert_eq!(line_of(&k, "new"), 1);
    assert!(matches!(
        k.check_key(&names("h2"), &key()),
        Verdict::Unknown { .. }
    ));
}

/// Connections that meet new hosts at once, several of them the same hosts, write one
/// line per host and lose none.
#[test]
fn concurrent_appends_lose_nothing_and_repeat_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = Arc::new(dir.path().join("known_hosts"));
    const THREADS: usize = 8;
    const HOSTS: usize = 60;
    let threads: Vec<_> = (0..THREADS)
        .map(|t| {
            let path = Arc::clone(&path);
            std::thread::spawn(move || {
                let mut appended = 0;
                // Each thread meets every host, starting at its own place.
                for i in 0..HOSTS {
                    let host = format!("h{}", (i + t * 7) % HOSTS);
                    let loaded = load(&path);
                    if !matches!(loaded.check_key(&names(&host), &key()), Verdict::Known(_))
                        && let Recorded::Appended(_) =
                            record_key(&path, &names(&host), &key()).unwrap()
                    {
                        appended += 1;
                    }
                }
                appended
            })
        })
        .collect();
    let appended: usize = threads.into_iter().map(|t| t.join().unwrap()).sum();
    assert_eq!(appended, HOSTS);
    let text = std::fs::read_to_string(&*path).unwrap();
    let mut written: Vec<&str> = text.lines().collect();
    assert_eq!(written.len(), HOSTS);
    written.sort_unstable();
    written.dedup();
    assert_eq!(written.len(), HOSTS, "a host written twice");
    let k = load(&path);
    for i in 0..HOSTS {
        line_of(&k, &format!("h{i}"));
    }
    // Created by the first append: never read from disk at all.
    assert_eq!(parses(&path), 0);
}
