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
    for l in logical {
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
        match (section.as_str(), k) {
            ("Service", "ExecStart") => {
                if v.is_empty() {
                    u.exec_start.clear();
                } else {
                    u.exec_start.push(v.to_string());
                }
            }
            ("Service", "Environment") => {
                if v.is_empty() {
                    u.environment.clear();
                }
                for w in split_exec(
                    v,
                    &BTreeMap::new(),
                    &BTreeMap::new(),
                    &mut Vec::new(),
                    false,
                ) {
                    if let Some((a, b)) = w.split_once('=') {
                        u.environment.insert(a.to_string(), b.to_string());
                    }
                }
            }
            ("Service", "EnvironmentFile") => u.environment_files.push(v.to_string()),
            ("Service", "WorkingDirectory") => {
                u.working_directory = Some(v.trim_start_matches('-').to_string())
            }
            ("Service", "User") => u.user = Some(v.to_string()),
            ("Unit", "Description") => u.description = Some(v.to_string()),
            _ => {}
        }
    }
    u
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
    let mut s = line.trim();
    let mut at = false;
    if exec {
        while let Some(c) = s.chars().next() {
            if matches!(c, '-' | '@' | ':' | '+' | '!') {
                at |= c == '@';
                s = s.get(1..).unwrap_or("");
            } else {
                break;
            }
        }
    }
    let chars: Vec<char> = s.chars().collect();
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        while matches!(chars.get(i), Some(c) if c.is_whitespace()) {
            i += 1;
        }
        if i >= chars.len() {
            break;
        }
        // Whole-word `$VAR`: split on whitespace.
        if exec && chars.get(i) == Some(&'$') && chars.get(i + 1) != Some(&'{') {
            let start = i + 1;
            let mut j = start;
            while matches!(chars.get(j), Some(c) if c.is_ascii_alphanumeric() || *c == '_') {
                j += 1;
            }
            if j > start && chars.get(j).map(|c| c.is_whitespace()).unwrap_or(true) {
                let name: String = chars.get(start..j).unwrap_or(&[]).iter().collect();
                match env.get(&name) {
                    Some(v) => out.extend(v.split_whitespace().map(str::to_string)),
                    None => {
                        warnings.push(format!("unresolved variable ${name} (not set in the unit)"));
                        out.push(format!("${name}"));
                    }
                }
                i = j;
                continue;
            }
        }
        let mut w = String::new();
        let mut quote: Option<char> = None;
        while let Some(&c) = chars.get(i) {
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
                    let n = chars.get(i + 1).copied();
                    match n {
                        Some('n') => w.push('\n'),
                        Some('t') => w.push('\t'),
                        Some(x) => w.push(x),
                        None => {}
                    }
                    i += 2;
                }
                (_, '$') if exec && chars.get(i + 1) == Some(&'{') => {
                    let end = (i + 2..chars.len()).find(|&k| chars.get(k) == Some(&'}'));
                    match end {
                        Some(e) => {
                            let name: String = chars.get(i + 2..e).unwrap_or(&[]).iter().collect();
                            match env.get(&name) {
                                Some(v) => w.push_str(v),
                                None => {
                                    warnings.push(format!(
                                        "unresolved variable ${{{name}}} (not set in the unit)"
                                    ));
                                    w.push_str(&format!("${{{name}}}"));
                                }
                            }
                            i = e + 1;
                        }
                        None => {
                            w.push('$');
                            i += 1;
                        }
                    }
                }
                (_, '%') if exec => {
                    match chars.get(i + 1) {
                        Some('%') => w.push('%'),
                        Some(x) => match spec.get(x) {
                            Some(v) => w.push_str(v),
                            None => {
                                warnings.push(format!("specifier %{x} left unresolved"));
                                w.push('%');
                                w.push(*x);
                            }
                        },
                        None => w.push('%'),
                    }
                    i += 2;
                }
                _ => {
                    w.push(c);
                    i += 1;
                }
            }
        }
        out.push(w);
    }
    // `@`: the second word is argv[0] for the first; drop it.
    if at && out.len() > 1 {
        out.remove(1);
    }
    // Old-style `;` separated command lists: keep the first command.
    if let Some(p) = out.iter().position(|w| w == ";") {
        out.truncate(p);
    }
    out
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
