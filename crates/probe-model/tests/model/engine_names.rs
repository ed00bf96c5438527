//! No engine is named in Rust outside `Engine` and the engines' definitions (issue 32): what
//! probe knows about vLLM, SGLang, Ollama, ... is data in `configs/`, and code that matches an
//! engine's name in a string literal (`"vllm"`, `"sglang=="`, `"text_generation_launcher"`)
//! is engine knowledge hard-coded where adding an engine cannot find it.
//!
//! The test reads every `crates/*/src/**/*.rs` file's code (comments, test modules and the
//! `#[cfg(test)] mod tests` block left out) and finds the string literals holding an engine's
//! name. A file that holds one must be in [`ALLOWED`] with the reason; a file on that list that
//! names no engine any more must leave it (the list only shrinks). The count of engine-naming
//! files is printed (`cargo test -p probe-model --test model engine_names -- --nocapture`).

use std::path::{Path, PathBuf};

use crate::module_cycles::{is_test_file, without_test_block};

/// The files that still name engines in code, each with why (or what moves it to data next).
/// Issue 32 item 1 moves them out one by one; `crates/probe-collect/src/parse/logs/` and
/// `thin.rs` were the first (their SGLang and vLLM lines are in `configs/log_lines.toml`); then
/// the two package lists (probe-launch's image words, probe-store's indexed packages: both read
/// `Engine::packages` or the engine hints now) and the catalog's embedding (`Engine::definition`),
/// then the benchmark tools (the definitions' `[bench]`); then the serving formats
/// (`configs/serving_formats.toml`) and Ollama's drop-ins (the definition's `[environment]`);
/// last the fleet report's engine packages (`Engine::packages`).
const ALLOWED: &[(&str, &str)] = &[
    (
        "crates/probe-model/src/launch.rs",
        "the `Engine` enum itself: its names and their spellings, and its definitions embedded \
         (`Engine::definition`: one `include_str!` of configs/engines/<engine>.toml per engine)",
    ),
    (
        "crates/probe-cli/src/args.rs",
        "help text, not engine knowledge: its examples (`probe launch /etc/systemd/system/vllm.service`) name \
         real engines for the reader; nothing is matched on them",
    ),
    (
        "crates/probe-testkit/src/fixture.rs",
        "test support, not engine knowledge: fixture hosts are named after the engine they \
         serve (`ollama-offload`); no production crate depends on the testkit",
    ),
    (
        "crates/probe-testkit/src/sim/mod.rs",
        "test support, not engine knowledge: the recorded collection's file name \
         (`sglang-story.rec`); no production crate depends on the testkit",
    ),
];

/// An engine's name (or its programs' and packages' names) inside a literal, case-blind.
const NAMES: &[&str] = &[
    "vllm",
    "sglang",
    "ollama",
    "lmdeploy",
    "trtllm",
    "tensorrt",
    "llama.cpp",
    "llama-server",
    "llama_cpp",
    "text-generation",
    "text_generation",
    "tgi",
];

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The string literals of Rust code (plain, byte and raw), comments skipped.
fn literals(code: &str) -> Vec<String> {
    let b: Vec<char> = code.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    let at = |i: usize| b.get(i).copied().unwrap_or('\0');
    while i < b.len() {
        let c = at(i);
        if c == '/' && at(i + 1) == '/' {
            while i < b.len() && at(i) != '\n' {
                i += 1;
            }
        } else if c == '/' && at(i + 1) == '*' {
            i += 2;
            while i < b.len() && !(at(i) == '*' && at(i + 1) == '/') {
                i += 1;
            }
            i += 2;
        } else if c == 'r'
            && (at(i + 1) == '#' || at(i + 1) == '"')
            && !ident(at(i.wrapping_sub(1)))
        {
            let mut j = i + 1;
            let mut hashes = 0;
            while at(j) == '#' {
                hashes += 1;
                j += 1;
            }
            if at(j) != '"' {
                i = j;
                continue;
            }
            let close: String = std::iter::once('"')
                .chain("#".repeat(hashes).chars())
                .collect();
            let rest: String = b[j + 1..].iter().collect();
            let end = rest.find(&close).unwrap_or(rest.len());
            out.push(rest[..end].to_string());
            i = j + 1 + rest[..end].chars().count() + close.chars().count();
        } else if c == '"' {
            let mut s = String::new();
            i += 1;
            while i < b.len() && at(i) != '"' {
                if at(i) == '\\' {
                    s.push(at(i + 1));
                    i += 2;
                } else {
                    s.push(at(i));
                    i += 1;
                }
            }
            out.push(s);
            i += 1;
        } else if c == '\'' {
            // A char literal (`'"'`, `'\''`) is skipped; a lifetime is not one.
            if at(i + 1) == '\\' {
                i += 2;
                while i < b.len() && at(i) != '\'' {
                    i += 1;
                }
                i += 1;
            } else if at(i + 2) == '\'' {
                i += 3;
            } else {
                i += 1;
            }
        } else {
            i += 1;
        }
    }
    out
}

fn ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// The engine names one literal holds (a name counts as a word: `tgi` not in `settings`).
fn names_in(literal: &str) -> Vec<&'static str> {
    let l = literal.to_ascii_lowercase();
    NAMES
        .iter()
        .copied()
        .filter(|n| {
            l.match_indices(n).any(|(at, _)| {
                let before = l[..at].chars().next_back();
                let after = l[at + n.len()..].chars().next();
                !before.is_some_and(|c| c.is_ascii_alphabetic())
                    && !after.is_some_and(|c| c.is_ascii_alphabetic())
            })
        })
        .collect()
}

/// Every non-test source file that names an engine in a literal: (path from the root, the
/// literals).
fn engine_naming_files() -> Vec<(String, Vec<String>)> {
    let mut files = Vec::new();
    let crates = root().join("crates");
    for entry in std::fs::read_dir(&crates).expect("crates/").flatten() {
        rust_files(&entry.path().join("src"), &mut files);
    }
    files.sort();
    let mut out = Vec::new();
    for f in files {
        if is_test_file(&f) {
            continue;
        }
        let text = std::fs::read_to_string(&f).expect("a source file");
        let hits: Vec<String> = literals(&without_test_block(&text))
            .into_iter()
            .filter(|l| !names_in(l).is_empty())
            .collect();
        if !hits.is_empty() {
            let rel = f
                .strip_prefix(root())
                .unwrap_or(&f)
                .to_string_lossy()
                .into_owned();
            out.push((rel, hits));
        }
    }
    out
}

#[test]
#[expect(
    clippy::print_stdout,
    reason = "the count of engine-naming files is the test's report"
)]
fn no_engine_is_named_in_code_outside_the_allowed_files() {
    let found = engine_naming_files();
    println!(
        "{} source files name an engine in a string literal ({} allowed)",
        found.len(),
        ALLOWED.len()
    );
    let mut wrong = Vec::new();
    for (path, hits) in &found {
        if !ALLOWED.iter().any(|(p, _)| p == path) {
            let shown: Vec<&str> = hits.iter().take(3).map(String::as_str).collect();
            wrong.push(format!("{path}: {shown:?}"));
        }
    }
    for (path, why) in ALLOWED {
        assert!(!why.trim().is_empty(), "{path}: an allowed file says why");
        if !found.iter().any(|(p, _)| p == path) {
            wrong.push(format!(
                "{path} names no engine any more: take it off ALLOWED"
            ));
        }
    }
    assert!(
        wrong.is_empty(),
        "engine names in code (move them to the engine's definition in configs/, or add the \
         file to ALLOWED with the reason):\n{}",
        wrong.join("\n")
    );
}

/// The scanner finds what it must and nothing else: `(code, engine-naming literals)`.
#[test]
fn the_literal_scanner() {
    let cases: &[(&str, usize)] = &[
        (r#"let e = "vllm";"#, 1),
        (r#"if l.contains("SGLang v") {}"#, 1),
        (r##"let p = r#"text_generation_launcher: (.*)"#;"##, 1),
        (r#"push(src, "llama.cpp", x)"#, 1),
        ("// vllm in a comment\nlet a = 1;", 0),
        ("/* \"sglang\" */ let a = 1;", 0),
        (r#"let s = "settings"; let c = '"'; let t = "x";"#, 0),
        (r#"let s = "a \"quoted\" tgi word";"#, 1),
        (r#"fn f<'a>(x: &'a str) -> &'a str { "ollama" }"#, 1),
        (
            "#[cfg(test)]\nmod tests {\n    const X: &str = \"vllm\";\n}\n",
            0,
        ),
    ];
    for (code, want) in cases {
        let got = literals(&without_test_block(code))
            .into_iter()
            .filter(|l| !names_in(l).is_empty())
            .count();
        assert_eq!(got, *want, "{code}");
    }
}
