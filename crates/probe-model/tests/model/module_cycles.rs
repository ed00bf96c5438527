//! No cycles between the files of one crate's module tree: if `a.rs` names something of `b.rs`
//! (`crate::b::...`, `super::b::...`, `use super::{b, ...}`), `b.rs` must not name `a.rs`, directly
//! or through others. The same holds one level up, between modules (folders): when a file of
//! `launch/` names one of `compare/`, no file of `compare/` may name one of `launch/`; an edge
//! counts between the two siblings under the deepest module both files share.
//! docs/ARCHITECTURE.md promises rooms with one purpose and one-way edges; this keeps the
//! promise by construction. Test modules (`tests.rs`, `*_tests.rs`, the
//! `#[cfg(test)] mod tests` block) are left out: they look at everything. Code after that block
//! is read.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

type Module = Vec<String>;

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

/// A file of inline tests moved out of its module (`tests.rs`, `*_tests.rs`).
pub(crate) fn is_test_file(path: &Path) -> bool {
    let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("");
    stem == "tests" || stem.ends_with("_tests")
}

/// `src/launch/shell/mod.rs` -> `launch::shell`; `src/lib.rs` -> the crate root.
fn module_of(src: &Path, file: &Path) -> Module {
    let rel = file.strip_prefix(src).expect("file under src");
    let mut parts: Module = rel
        .with_extension("")
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if matches!(
        parts.last().map(String::as_str),
        Some("mod" | "lib" | "main")
    ) {
        parts.pop();
    }
    parts
}

/// The file's code without comments and without its unit-test block (code after the block is
/// kept: a planted `crate::` path below the tests is still an edge).
fn code_of(text: &str) -> String {
    let text = without_test_block(text);
    text.lines()
        .map(|line| line.split("//").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n")
}

/// `text` without its `#[cfg(test)] mod tests { ... }` block, found by counting braces (the
/// rest of the file when they do not balance).
pub(crate) fn without_test_block(text: &str) -> String {
    let Some(start) = text.find("#[cfg(test)]\nmod tests") else {
        return text.to_string();
    };
    let mut depth = 0usize;
    let mut opened = false;
    for (i, c) in text[start..].char_indices() {
        match c {
            '{' => {
                depth += 1;
                opened = true;
            }
            '}' if opened => {
                depth -= 1;
                if depth == 0 {
                    return format!("{}{}", &text[..start], &text[start + i + 1..]);
                }
            }
            _ => {}
        }
    }
    text[..start].to_string()
}

fn ident_at(s: &str) -> &str {
    let end = s
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(s.len());
    &s[..end]
}

/// Every path the code names from `crate`, `super` or `self`, as absolute module paths (items
/// included; resolved to files later). `use super::{a, b::c}` names `a` and `b`.
fn named_paths(code: &str, own: &Module) -> Vec<Module> {
    let mut out = Vec::new();
    for (at, head) in ["crate::", "super::", "self::"]
        .iter()
        .flat_map(|head| code.match_indices(head).map(move |(at, _)| (at, *head)))
    {
        let before = code[..at].chars().next_back();
        if before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':') {
            continue;
        }
        let mut base: Module = if head == "crate::" {
            Vec::new()
        } else {
            own.clone()
        };
        let mut rest = &code[at + head.len()..];
        if head == "super::" {
            base.pop();
            while let Some(r) = rest.strip_prefix("super::") {
                base.pop();
                rest = r;
            }
        }
        let mut path = base.clone();
        loop {
            let word = ident_at(rest);
            if word.is_empty() {
                break;
            }
            path.push(word.to_string());
            rest = &rest[word.len()..];
            match rest.strip_prefix("::") {
                Some(r) => rest = r,
                None => break,
            }
        }
        if let Some(group) = rest.strip_prefix('{') {
            let group = &group[..group.find('}').unwrap_or(group.len())];
            for item in group.split(',') {
                let word = ident_at(item.trim());
                if !word.is_empty() {
                    let mut p = path.clone();
                    p.push(word.to_string());
                    out.push(p);
                }
            }
        }
        out.push(path);
    }
    out
}

/// The module file a path lands in: its longest prefix that is a file of the crate.
fn file_of<'a>(modules: &'a BTreeSet<Module>, path: &[String]) -> Option<&'a Module> {
    (0..=path.len())
        .rev()
        .find_map(|n| modules.get(path.get(..n)?))
}

fn graph_of(src: &Path) -> BTreeMap<Module, BTreeSet<Module>> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let codes: BTreeMap<Module, String> = files
        .iter()
        .filter(|f| !is_test_file(f))
        .map(|f| {
            let text = std::fs::read_to_string(f).expect("readable source file");
            (module_of(src, f), code_of(&text))
        })
        .collect();
    let modules: BTreeSet<Module> = codes.keys().cloned().collect();
    codes
        .iter()
        .map(|(own, code)| {
            let targets = named_paths(code, own)
                .iter()
                .filter_map(|p| file_of(&modules, p))
                .filter(|t| *t != own && !t.is_empty())
                .cloned()
                .collect();
            (own.clone(), targets)
        })
        .collect()
}

/// One cycle through `start`, if there is one (depth-first search back to it).
fn cycle_through(
    graph: &BTreeMap<Module, BTreeSet<Module>>,
    start: &Module,
) -> Option<Vec<Module>> {
    let mut stack = vec![(start.clone(), vec![start.clone()])];
    let mut seen = BTreeSet::new();
    while let Some((node, trail)) = stack.pop() {
        for next in graph.get(&node).into_iter().flatten() {
            if next == start {
                return Some(trail);
            }
            if seen.insert(next.clone()) {
                let mut longer = trail.clone();
                longer.push(next.clone());
                stack.push((next.clone(), longer));
            }
        }
    }
    None
}

fn show(module: &Module) -> String {
    if module.is_empty() {
        "lib".into()
    } else {
        module.join("::")
    }
}

/// The file graph seen between sibling modules: an edge `a::x::f -> a::y::g` becomes
/// `a::x -> a::y` (the children of their deepest shared module); an edge into a file's own
/// ancestor or descendant is no edge between siblings.
fn sibling_graph(files: &BTreeMap<Module, BTreeSet<Module>>) -> BTreeMap<Module, BTreeSet<Module>> {
    let mut graph: BTreeMap<Module, BTreeSet<Module>> = BTreeMap::new();
    for (from, targets) in files {
        for to in targets {
            let shared = from.iter().zip(to).take_while(|(a, b)| a == b).count();
            if shared >= from.len() || shared >= to.len() {
                continue;
            }
            let (a, b) = (from[..=shared].to_vec(), to[..=shared].to_vec());
            graph.entry(a).or_default().insert(b);
        }
    }
    graph
}

/// Every cycle of `graph`, one line each, named for `krate`.
fn cycles_of(krate: &str, graph: &BTreeMap<Module, BTreeSet<Module>>) -> Vec<String> {
    let mut cycles = Vec::new();
    let mut reported = BTreeSet::new();
    for start in graph.keys() {
        if reported.contains(start) {
            continue;
        }
        if let Some(cycle) = cycle_through(graph, start) {
            reported.extend(cycle.iter().cloned());
            let trail: Vec<String> = cycle.iter().map(show).collect();
            cycles.push(format!(
                "{krate}: {} -> {}",
                trail.join(" -> "),
                show(start)
            ));
        }
    }
    cycles
}

fn crate_dirs() -> Vec<PathBuf> {
    let mut names: Vec<PathBuf> = std::fs::read_dir(root().join("crates"))
        .expect("crates/")
        .flatten()
        .map(|e| e.path())
        .collect();
    names.sort();
    names
}

/// The modules of `graph` that lie on a cycle, grouped by strongly connected component (each
/// group sorted; groups of one module without a self-edge left out).
fn tangles(graph: &BTreeMap<Module, BTreeSet<Module>>) -> Vec<BTreeSet<String>> {
    let reach = |from: &Module| {
        let mut seen = BTreeSet::new();
        let mut stack = vec![from.clone()];
        while let Some(node) = stack.pop() {
            for next in graph.get(&node).into_iter().flatten() {
                if seen.insert(next.clone()) {
                    stack.push(next.clone());
                }
            }
        }
        seen
    };
    let reaches: BTreeMap<&Module, BTreeSet<Module>> =
        graph.keys().map(|m| (m, reach(m))).collect();
    let mut groups: Vec<BTreeSet<String>> = Vec::new();
    for (m, from_m) in &reaches {
        if !from_m.contains(*m) {
            continue;
        }
        let group: BTreeSet<String> = from_m
            .iter()
            .filter(|o| reaches.get(o).is_some_and(|r| r.contains(*m)))
            .map(show)
            .collect();
        if !groups.contains(&group) {
            groups.push(group);
        }
    }
    groups
}

/// Module cycles that existed when the folder-level check was written (issue 23, item 1: the
/// crate split and `same_configuration` as a field comparison are what untangle them). A
/// module may leave a tangle, never join one, and no new tangle may form: when a tangle
/// shrinks, shrink its line here.
const KNOWN_TANGLES: &[(&str, &[&str])] = &[];

#[test]
fn no_new_cycles_between_modules_of_a_crate() {
    let mut problems = Vec::new();
    for krate in crate_dirs() {
        let name = krate
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .into_owned();
        let known: Vec<BTreeSet<String>> = KNOWN_TANGLES
            .iter()
            .filter(|(k, _)| *k == name)
            .map(|(_, mods)| mods.iter().map(|m| m.to_string()).collect())
            .collect();
        let found = tangles(&sibling_graph(&graph_of(&krate.join("src"))));
        for group in &found {
            if !known.iter().any(|k| group.is_subset(k)) {
                problems.push(format!("{name}: new cycle between modules {group:?}"));
            }
        }
        for k in &known {
            if !found.contains(k) {
                problems.push(format!(
                    "{name}: the tangle {k:?} is now {:?}: shrink KNOWN_TANGLES",
                    found.iter().filter(|g| g.is_subset(k)).collect::<Vec<_>>()
                ));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn the_test_block_alone_is_left_out() {
    let text = "use crate::a;\n#[cfg(test)]\nmod tests {\n    fn f() { if x { y() } }\n}\nfn g() { crate::b::c(); }\n";
    assert_eq!(
        without_test_block(text),
        "use crate::a;\n\nfn g() { crate::b::c(); }\n"
    );
    assert_eq!(without_test_block("x\n#[cfg(test)]\nmod tests {"), "x\n");
}

#[test]
fn a_planted_module_cycle_is_found() {
    let m = |s: &str| -> Module { s.split("::").map(str::to_string).collect() };
    // Files without a cycle between them, whose folders form one: launch -> compare -> launch.
    let files = BTreeMap::from([
        (m("launch::argv"), BTreeSet::from([m("compare::keys")])),
        (m("compare::snapshot"), BTreeSet::from([m("launch::spec")])),
        (m("compare::keys"), BTreeSet::new()),
        (m("launch::spec"), BTreeSet::new()),
        // A file naming its own folder's other files, or its parent, makes no sibling edge.
        (
            m("launch::shell::flow"),
            BTreeSet::from([m("launch::argv"), m("launch")]),
        ),
    ]);
    assert!(cycles_of("planted", &files).is_empty(), "no file cycle");
    let siblings = sibling_graph(&files);
    let found = cycles_of("planted", &siblings);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        found[0].contains("launch") && found[0].contains("compare"),
        "{found:?}"
    );
    assert_eq!(
        siblings.get(&m("launch::shell")),
        Some(&BTreeSet::from([m("launch::argv")]))
    );
    let tangled = tangles(&siblings);
    assert_eq!(
        tangled,
        vec![BTreeSet::from([
            "compare".to_string(),
            "launch".to_string()
        ])]
    );
}

#[test]
fn no_cycles_between_files_of_a_crate() {
    let mut cycles = Vec::new();
    for krate in crate_dirs() {
        let graph = graph_of(&krate.join("src"));
        assert!(
            graph.len() > 1,
            "{}: no module files found",
            krate.display()
        );
        let name = krate
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .into_owned();
        cycles.extend(cycles_of(&name, &graph));
    }
    assert!(
        cycles.is_empty(),
        "cycles between files:\n{}",
        cycles.join("\n")
    );
}

#[test]
fn the_cycle_finder_sees_a_cycle() {
    let own: Module = vec!["a".into()];
    let paths = named_paths("use super::{b, c::D};\nfn f() { crate::d::e(); }", &own);
    assert!(paths.contains(&vec!["b".to_string()]));
    assert!(paths.contains(&vec!["c".to_string()]));
    assert!(paths.contains(&vec!["d".to_string(), "e".to_string()]));
    let mut graph = BTreeMap::new();
    graph.insert(
        vec!["a".to_string()],
        BTreeSet::from([vec!["b".to_string()]]),
    );
    graph.insert(
        vec!["b".to_string()],
        BTreeSet::from([vec!["a".to_string()]]),
    );
    graph.insert(
        vec!["c".to_string()],
        BTreeSet::from([vec!["a".to_string()]]),
    );
    assert!(cycle_through(&graph, &vec!["a".to_string()]).is_some());
    assert!(cycle_through(&graph, &vec!["c".to_string()]).is_none());
}
