//! End-to-end: the built `probe` binary against hostile local files, under an address-space
//! limit (`prlimit --as`) and a wall-clock limit (`timeout`), so that reading without bound
//! fails fast instead of eating the machine: a YAML alias bomb, `/dev/zero` and FIFOs as
//! config, inventory, ssh_config, `Include`, launch text and snapshot file, an oversized
//! snapshot. Each must end with exit 2 and one line naming the file and the cause. And the one
//! sanitiser: C1 controls and bidi overrides from local input never reach JSON output, and a
//! crafted snapshot file's secrets are redacted before it is diffed or imported.

use std::path::Path;
use std::process::{Command, Output};

use crate::util;

/// Far more than probe needs, far less than a runaway read would take.
const MEMORY_LIMIT: &str = "--as=1073741824";

/// probe with `home` as its home and store directory, under the memory and time limits.
fn probe(home: &Path, args: &[&str]) -> Output {
    util::probe(home)
        .store(home.join("snapshots.db"))
        .wrapped(&["timeout", "-k", "5", "60", "prlimit", MEMORY_LIMIT])
        .run(args)
}

/// Exit 2 and exactly one stderr line (besides a hint) containing every `needle`.
fn assert_one_line_error(out: &Output, needles: &[&str]) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    let lines: Vec<&str> = stderr
        .lines()
        .filter(|l| !l.trim_start().starts_with("hint:"))
        .collect();
    assert_eq!(out.status.code(), Some(2), "{:?}: {stderr}", out.status);
    assert_eq!(lines.len(), 1, "one line: {stderr}");
    for needle in needles {
        assert!(lines[0].contains(needle), "{needle:?} not in {stderr:?}");
    }
}

fn mkfifo(path: &Path) {
    let st = Command::new("mkfifo").arg(path).status().unwrap();
    assert!(st.success());
}

/// A "billion laughs": 9 levels of 9 aliases each, 387 million scalars when expanded.
fn yaml_bomb() -> String {
    let mut t = String::from(
        "all:\n  vars:\n    a0: &a0 [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n",
    );
    for i in 1..10 {
        let refs = vec![format!("*a{}", i - 1); 9].join(",");
        t.push_str(&format!("    a{i}: &a{i} [{refs}]\n"));
    }
    t.push_str("  hosts:\n    gpu1:\n");
    t
}

#[test]
fn hostile_local_files_fail_fast_with_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path();
    let bomb = home.join("bomb.yaml");
    std::fs::write(&bomb, yaml_bomb()).unwrap();
    let fifo = home.join("fifo");
    mkfifo(&fifo);
    let include = home.join("ssh_config.include");
    std::fs::write(&include, "Host gpu1\n  User root\nInclude /dev/zero\n").unwrap();
    let big = home.join("big.json");
    std::fs::write(
        &big,
        format!(
            "{{\"schema_version\":1,\"target\":\"{}\"}}",
            "x".repeat(2 << 20)
        ),
    )
    .unwrap();
    let small_cap = home.join("small-cap.toml");
    std::fs::write(&small_cap, "max-snapshot-mib = 1\n").unwrap();
    let (bomb, fifo, include, big, small_cap) = (
        bomb.to_str().unwrap(),
        fifo.to_str().unwrap(),
        include.to_str().unwrap(),
        big.to_str().unwrap(),
        small_cap.to_str().unwrap(),
    );
    let cases: Vec<(Vec<&str>, Vec<&str>)> = vec![
        (
            vec!["audit", "--inventory", bomb],
            vec![bomb, "aliases expand to more than"],
        ),
        (
            vec!["audit", "--inventory", "/dev/zero"],
            vec!["/dev/zero", "not a regular file (a character device)"],
        ),
        (
            vec!["audit", "--inventory", fifo],
            vec![fifo, "not a regular file (a FIFO)"],
        ),
        (
            vec!["-F", "/dev/zero", "resolve", "gpu1"],
            vec!["/dev/zero", "not a regular file"],
        ),
        (
            vec!["-F", fifo, "resolve", "gpu1"],
            vec![fifo, "not a regular file (a FIFO)"],
        ),
        (
            vec!["-F", include, "resolve", "gpu1"],
            vec!["/dev/zero", "not a regular file"],
        ),
        (
            vec!["--config", fifo, "snapshots", "list"],
            vec![fifo, "not a regular file (a FIFO)"],
        ),
        (
            vec!["--config", "/dev/zero", "snapshots", "list"],
            vec!["/dev/zero", "not a regular file"],
        ),
        (
            vec!["launch", fifo],
            vec![fifo, "not a regular file (a FIFO)"],
        ),
        (
            vec!["launch", "/dev/zero"],
            vec!["/dev/zero", "not a regular file"],
        ),
        (
            vec!["snapshots", "import", "/dev/zero"],
            vec!["/dev/zero", "not a regular file"],
        ),
        (
            vec!["snapshots", "import", fifo],
            vec![fifo, "not a regular file (a FIFO)"],
        ),
        (
            vec!["diff", fifo, "/dev/zero"],
            vec![fifo, "not a regular file (a FIFO)"],
        ),
        (
            vec!["--config", small_cap, "snapshots", "import", big],
            vec![big, "larger than 1 MiB"],
        ),
    ];
    for (args, needles) in cases {
        let out = probe(home, &args);
        assert_one_line_error(&out, &needles);
    }
}

/// Characters that must never reach a terminal or a document from any input.
fn hostile_chars(text: &str) -> Vec<char> {
    text.chars()
        .filter(|&c| {
            matches!(c, '\u{80}'..='\u{9f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{1b}')
        })
        .collect()
}

#[test]
fn launch_json_has_no_c1_or_bidi_controls() {
    let dir = tempfile::tempdir().unwrap();
    let launch = dir.path().join("launch.sh");
    std::fs::write(
        &launch,
        "vllm serve /m\u{202e}odel --served-model-name x\u{85}y\u{9b}31m --port 8000 \
         --chat-template \u{2066}t\u{2069} --api-key SEKRITlaunchkey\n",
    )
    .unwrap();
    for args in [
        vec!["launch", launch.to_str().unwrap(), "--json"],
        vec!["--format", "json", "launch", launch.to_str().unwrap()],
        vec!["launch", launch.to_str().unwrap()],
    ] {
        let out = probe(dir.path(), &args);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {out:?}");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(stdout.contains("8000"), "{stdout}");
        assert_eq!(
            hostile_chars(&stdout),
            Vec::<char>::new(),
            "{args:?}: {stdout}"
        );
        assert!(!stdout.contains("SEKRIT"), "{stdout}");
    }
}

fn crafted(argv_tail: &str) -> String {
    format!(
        r#"{{"schema_version": 1, "id": "crafted-{argv_tail}", "target": "t\u202e1",
  "host": {{"hostname": "gpu\u0085one\u2066", "machine_id": "m1"}},
  "processes": [{{"pid": 7, "role": "launcher", "engine": "vllm",
    "argv": ["vllm", "serve", "/m\u009b2Jx", "--api-key", "SEKRITcraftedkey", "--port", "{argv_tail}"],
    "env": {{"HF_TOKEN": "hf_SEKRITcraftedenvaaaaaaaaaa", "NOTE": "a\u202eb"}}}}]}}"#
    )
}

#[test]
fn crafted_snapshot_files_are_sanitised_and_redacted() {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a.json");
    let b = dir.path().join("b.json");
    std::fs::write(&a, crafted("8000")).unwrap();
    std::fs::write(&b, crafted("9000")).unwrap();
    let (a, b) = (a.to_str().unwrap(), b.to_str().unwrap());
    for args in [
        vec!["diff", a, b, "--format", "json"],
        vec!["--format", "json", "diff", a, b],
        vec!["diff", a, b],
        vec!["--format", "markdown", "diff", a, b],
    ] {
        let out = probe(dir.path(), &args);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {out:?}");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(stdout.contains("9000"), "{stdout}");
        assert_eq!(
            hostile_chars(&stdout),
            Vec::<char>::new(),
            "{args:?}: {stdout}"
        );
        assert!(!stdout.contains("SEKRIT"), "{args:?}: {stdout}");
    }
    let out = probe(dir.path(), &["snapshots", "import", a]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let export = probe(dir.path(), &["snapshots", "export", "crafted-8000"]);
    assert_eq!(export.status.code(), Some(0), "{export:?}");
    let text = String::from_utf8_lossy(&export.stdout);
    assert!(text.contains("--api-key"), "{text}");
    assert!(!text.contains("SEKRIT"), "{text}");
    assert_eq!(hostile_chars(&text), Vec::<char>::new(), "{text}");
    let db = std::fs::read(dir.path().join("snapshots.db")).unwrap();
    assert!(!String::from_utf8_lossy(&db).contains("SEKRIT"));
}
