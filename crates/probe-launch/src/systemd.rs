//! systemd units: the `[Service]` directives that make a launch, and `ExecStart=` word splitting
//! with systemd's own rules (quotes, escapes, `$VAR` vs `${VAR}`, specifiers, prefixes).

use std::collections::BTreeMap;

/// What a unit text says about its service.
#[derive(Debug, Default, Clone)]
pub(crate) struct UnitText {
    pub exec_start: Vec<String>,
    pub environment: BTreeMap<String, String>,
    pub environment_files: Vec<String>,
    pub working_directory: Option<String>,
    pub user: Option<String>,
    pub description: Option<String>,
}

/// Parses unit text. Lines before any section header are read as if in `[Service]` when they look
/// like directives; anything else (a stray shell line) is ignored.
pub(crate) fn parse_unit(text: &str) -> UnitText {
    let mut u = UnitText::default();
    let mut section = String::from("Service");
    for l in logical_lines(text) {
        if l.starts_with('[') && l.ends_with(']') {
            section = l.trim_matches(['[', ']']).to_string();
            continue;
        }
        let Some((k, v)) = l.split_once('=') else {
            continue;
        };
        let (k, v) = (k.trim(), v.trim());
        if k.contains(' ') {
            continue;
        }
        u.directive(section.as_str(), k, v);
    }
    u
}

/// A unit text's logical lines, trimmed: continuation lines (`\` at the end) joined, blank and
/// comment lines left out (comments inside a continuation too).
fn logical_lines(text: &str) -> Vec<String> {
    let mut logical: Vec<String> = Vec::new();
    let mut cur: Option<String> = None;
    for line in text.lines() {
        let trimmed = line.trim();
        if let Some(c) = cur.as_mut() {
            if trimmed.starts_with('#') || trimmed.starts_with(';') {
                continue; // comment lines inside a continuation are skipped
            }
            if let Some(stripped) = trimmed.strip_suffix('\\') {
                c.push(' ');
                c.push_str(stripped);
                continue;
            }
            c.push(' ');
            c.push_str(trimmed);
            logical.push(std::mem::take(c));
            cur = None;
            continue;
        }
        if trimmed.is_empty() || trimmed.starts_with('#') || trimmed.starts_with(';') {
            continue;
        }
        if let Some(stripped) = trimmed.strip_suffix('\\') {
            cur = Some(stripped.to_string());
            continue;
        }
        logical.push(trimmed.to_string());
    }
    if let Some(c) = cur {
        logical.push(c);
    }
    logical
}

impl UnitText {
    /// One directive `key=value` of `section`; directives that make no launch are ignored.
    fn directive(&mut self, section: &str, k: &str, v: &str) {
        match (section, k) {
            ("Service", "ExecStart") => {
                if v.is_empty() {
                    self.exec_start.clear();
                } else {
                    self.exec_start.push(v.to_string());
                }
            }
            ("Service", "Environment") => self.environment_line(v),
            ("Service", "EnvironmentFile") => self.environment_files.push(v.to_string()),
            ("Service", "WorkingDirectory") => {
                self.working_directory = Some(v.trim_start_matches('-').to_string())
            }
            ("Service", "User") => self.user = Some(v.to_string()),
            ("Unit", "Description") => self.description = Some(v.to_string()),
            _ => {}
        }
    }

    /// An `Environment=` line: its `KEY=value` words (an empty one resets the list).
    fn environment_line(&mut self, v: &str) {
        if v.is_empty() {
            self.environment.clear();
        }
        for w in split_exec(
            v,
            &BTreeMap::new(),
            &BTreeMap::new(),
            &mut Vec::new(),
            false,
        ) {
            if let Some((a, b)) = w.split_once('=') {
                self.environment.insert(a.to_string(), b.to_string());
            }
        }
    }
}

/// Unit-name specifiers (`%i`, `%n`, `%h`, ...).
pub(crate) fn specifiers(unit_name: Option<&str>, user: Option<&str>) -> BTreeMap<char, String> {
    let mut m = BTreeMap::new();
    if let Some(n) = unit_name {
        m.insert('n', n.to_string());
        let prefix_full = n.rsplit_once('.').map(|(a, _)| a).unwrap_or(n);
        m.insert('N', prefix_full.to_string());
        let (prefix, instance) = match prefix_full.split_once('@') {
            Some((p, i)) => (p, i),
            None => (prefix_full, ""),
        };
        m.insert('p', prefix.to_string());
        m.insert('P', prefix.to_string());
        m.insert('i', instance.to_string());
        m.insert('I', instance.to_string());
    }
    match user {
        Some(u) if u != "root" => {
            m.insert('u', u.to_string());
            m.insert('h', format!("/home/{u}"));
        }
        _ => {
            m.insert('u', "root".into());
            m.insert('h', "/root".into());
        }
    }
    m
}

/// Splits a command line the way systemd does: `"`/`'` quotes, C escapes, `${VAR}` inside words,
/// `$VAR` as a whole word split on whitespace, `%x` specifiers. With `exec` set, strips the
/// `-@:+!` prefixes. Unresolved variables and specifiers stay as written, with a warning.
pub(crate) fn split_exec(
    line: &str,
    env: &BTreeMap<String, String>,
    spec: &BTreeMap<char, String>,
    warnings: &mut Vec<String>,
    exec: bool,
) -> Vec<String> {
    let (s, at) = if exec {
        without_exec_prefixes(line.trim())
    } else {
        (line.trim(), false)
    };
    let mut sp = Splitter {
        chars: s.chars().collect(),
        env,
        spec,
        warnings,
        exec,
        out: Vec::new(),
    };
    let mut i = 0;
    while i < sp.chars.len() {
        while matches!(sp.chars.get(i), Some(c) if c.is_whitespace()) {
            i += 1;
        }
        if i >= sp.chars.len() {
            break;
        }
        i = match sp.whole_word_variable(i) {
            Some(next) => next,
            None => sp.word(i),
        };
    }
    let mut out = sp.out;
    // `@`: the second word is argv[0] for the first; drop it.
    if at && out.len() > 1 {
        out.remove(1);
    }
    // Old-style `;` separated command lists: keep the first command.
    if let Some(p) = out.iter().position(|w| w == ";") {
        out.truncate(p);
    }
    if exec {
        without_substitutions(&mut out, sp.warnings);
    }
    out
}

/// `$(cat /etc/vllm/%i.args)` or `` `cmd` `` among an `ExecStart=` line's arguments: systemd
/// runs no shell, so nothing substitutes it, and what it was written to give (any number of
/// words) is not in the text. Its words are left out, none taken for the model, with a warning.
fn without_substitutions(words: &mut Vec<String>, warnings: &mut Vec<String>) {
    let mut i = 1;
    while let Some(w) = words.get(i) {
        let close = if w.starts_with("$(") {
            ')'
        } else if w.starts_with('`') {
            '`'
        } else {
            i += 1;
            continue;
        };
        let first_len = if close == ')' { 2 } else { 1 };
        let end = (i..words.len())
            .find(|&j| {
                words.get(j).is_some_and(|x| {
                    x.len() > if j == i { first_len } else { 0 } && x.ends_with(close)
                })
            })
            .unwrap_or(words.len() - 1);
        let raw = words.drain(i..=end).collect::<Vec<_>>().join(" ");
        warnings.push(format!(
            "arguments come from {raw}, which systemd does not substitute (it runs no shell): \
             an unknown number of words, not in the text"
        ));
    }
}

/// `ExecStart=` prefixes (`-`, `@`, `:`, `+`, `!`) taken off; whether `@` was among them.
fn without_exec_prefixes(mut s: &str) -> (&str, bool) {
    let mut at = false;
    while let Some(c) = s.chars().next() {
        if !matches!(c, '-' | '@' | ':' | '+' | '!') {
            break;
        }
        at |= c == '@';
        s = s.get(1..).unwrap_or("");
    }
    (s, at)
}

/// One command line being split into words the way systemd does.
struct Splitter<'a> {
    chars: Vec<char>,
    env: &'a BTreeMap<String, String>,
    spec: &'a BTreeMap<char, String>,
    warnings: &'a mut Vec<String>,
    /// Expand variables and specifiers (an `ExecStart=` line, not a plain setting).
    exec: bool,
    out: Vec<String>,
}

impl Splitter<'_> {
    fn at(&self, i: usize) -> Option<char> {
        self.chars.get(i).copied()
    }

    fn text(&self, from: usize, to: usize) -> String {
        self.chars.get(from..to).unwrap_or(&[]).iter().collect()
    }

    /// A whole-word `$VAR`, split on whitespace; the index after it, or `None` when the word is
    /// not one.
    fn whole_word_variable(&mut self, i: usize) -> Option<usize> {
        if !self.exec || self.at(i) != Some('$') || self.at(i + 1) == Some('{') {
            return None;
        }
        let start = i + 1;
        let mut j = start;
        while matches!(self.at(j), Some(c) if c.is_ascii_alphanumeric() || c == '_') {
            j += 1;
        }
        if j == start || !self.at(j).is_none_or(char::is_whitespace) {
            return None;
        }
        let name = self.text(start, j);
        match self.env.get(&name) {
            Some(v) => self.out.extend(v.split_whitespace().map(str::to_string)),
            None => {
                self.warnings
                    .push(format!("unresolved variable ${name} (not set in the unit)"));
                self.out.push(format!("${name}"));
            }
        }
        Some(j)
    }

    /// One word (quotes, escapes, `${VAR}`, `%` specifiers); the index after it.
    fn word(&mut self, mut i: usize) -> usize {
        let mut w = String::new();
        let mut quote: Option<char> = None;
        while let Some(c) = self.at(i) {
            match (quote, c) {
                (None, c) if c.is_whitespace() => break,
                (None, '"' | '\'') => {
                    quote = Some(c);
                    i += 1;
                }
                (Some(q), c) if c == q => {
                    quote = None;
                    i += 1;
                }
                (_, '\\') => {
                    match self.at(i + 1) {
                        Some('n') => w.push('\n'),
                        Some('t') => w.push('\t'),
                        Some(x) => w.push(x),
                        None => {}
                    }
                    i += 2;
                }
                (_, '$') if self.exec && self.at(i + 1) == Some('{') => {
                    i = self.braced_variable(i, &mut w);
                }
                (_, '%') if self.exec => {
                    self.specifier(self.at(i + 1), &mut w);
                    i += 2;
                }
                _ => {
                    w.push(c);
                    i += 1;
                }
            }
        }
        self.out.push(w);
        i
    }

    /// `${VAR}` at `i` expanded into `w`; the index after it.
    fn braced_variable(&mut self, i: usize, w: &mut String) -> usize {
        let Some(e) = (i + 2..self.chars.len()).find(|&k| self.at(k) == Some('}')) else {
            w.push('$');
            return i + 1;
        };
        let name = self.text(i + 2, e);
        match self.env.get(&name) {
            Some(v) => w.push_str(v),
            None => {
                self.warnings.push(format!(
                    "unresolved variable ${{{name}}} (not set in the unit)"
                ));
                w.push_str(&format!("${{{name}}}"));
            }
        }
        e + 1
    }

    /// The `%` specifier followed by `x` expanded into `w` (`%%` is a `%`).
    fn specifier(&mut self, x: Option<char>, w: &mut String) {
        match x {
            Some('%') => w.push('%'),
            Some(x) => match self.spec.get(&x) {
                Some(v) => w.push_str(v),
                None => {
                    self.warnings
                        .push(format!("specifier %{x} left unresolved"));
                    w.push('%');
                    w.push(x);
                }
            },
            None => w.push('%'),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unit_continuations_env_and_prefixes() {
        let u = parse_unit(
            "stray line\n[Unit]\nDescription=x\n[Service]\nEnvironment=\"A=1 2\" B=3\nExecStart=-/usr/bin/python -m m \\\n  # c\n  --x %i \\\n  $ARGS ${B}\n",
        );
        assert_eq!(u.environment.get("A").map(String::as_str), Some("1 2"));
        let mut env = u.environment.clone();
        env.insert("ARGS".into(), "--y 1 --z".into());
        let sp = specifiers(Some("srv@inst.service"), None);
        let mut w = Vec::new();
        let argv = split_exec(
            u.exec_start.first().map(String::as_str).unwrap_or(""),
            &env,
            &sp,
            &mut w,
            true,
        );
        assert_eq!(
            argv,
            vec![
                "/usr/bin/python",
                "-m",
                "m",
                "--x",
                "inst",
                "--y",
                "1",
                "--z",
                "3"
            ]
        );
        assert!(w.is_empty());
    }

    #[test]
    fn unresolved_unit_variables_are_kept_and_reported() {
        let mut w = Vec::new();
        let argv = split_exec(
            "/bin/x --a 1 $SGLANG_ARGS",
            &BTreeMap::new(),
            &BTreeMap::new(),
            &mut w,
            true,
        );
        assert_eq!(argv, vec!["/bin/x", "--a", "1", "$SGLANG_ARGS"]);
        assert_eq!(w.len(), 1);
    }
}
