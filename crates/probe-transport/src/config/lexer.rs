//! Splitting `ssh_config` lines the way OpenSSH 9.2 does (`strdelim` for the keyword and `Match`
//! criteria, `argv_split` for arguments).

const WHITESPACE: &[char] = &[' ', '\t', '\r', '\n'];

fn is_ws(c: char) -> bool {
    WHITESPACE.contains(&c)
}

/// OpenSSH's `strdelim` with `=` splitting: returns the next token and the rest of the line.
///
/// The token ends at whitespace, a `"` or a single `=`; a token that starts with `"` runs to the
/// next `"`. `None` means an unterminated quote. The rest has leading whitespace (and at most one
/// `=`) removed; it is `None` when the line ended with the token.
pub(crate) fn strdelim(s: &str) -> Option<(String, Option<&str>)> {
    let Some(pos) = s.find(|c: char| is_ws(c) || c == '"' || c == '=') else {
        return Some((s.to_string(), None));
    };
    let (tok, rest) = s.split_at(pos);
    let mut chars = rest.chars();
    let delim = chars.next().unwrap_or(' ');
    let after = chars.as_str();
    if delim == '"' {
        // `"` in the middle of a token: the quoted part is the token, prefix dropped
        // (OpenSSH memmoves the quote away and keeps the text before it).
        let (quoted, rest) = after.split_once('"')?;
        let token = format!("{tok}{quoted}");
        return Some((token, Some(rest.trim_start_matches(is_ws))));
    }
    let mut rest = after.trim_start_matches(is_ws);
    if delim != '='
        && let Some(r) = rest.strip_prefix('=')
    {
        rest = r.trim_start_matches(is_ws);
    }
    Some((tok.to_string(), Some(rest)))
}

/// OpenSSH's `argv_split(s, .., terminate_on_comment = 1)`: whitespace separated words, `'` and
/// `"` quoting, backslash escapes for quotes, backslash and (unquoted) space; a word starting with
/// `#` ends the line. `None` on an unterminated quote.
pub(crate) fn argv_split(s: &str) -> Option<Vec<String>> {
    let chars: Vec<char> = s.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars.get(i).copied().unwrap_or(' ');
        if c == ' ' || c == '\t' {
            i += 1;
            continue;
        }
        if c == '#' {
            break;
        }
        let mut arg = String::new();
        let mut quote: Option<char> = None;
        while let Some(&c) = chars.get(i) {
            let next = chars.get(i + 1).copied();
            if c == '\\' {
                match next {
                    Some(n)
                        if n == '\'' || n == '"' || n == '\\' || (quote.is_none() && n == ' ') =>
                    {
                        arg.push(n);
                        i += 2;
                        continue;
                    }
                    _ => arg.push(c),
                }
            } else if quote.is_none() && (c == ' ' || c == '\t') {
                break;
            } else if quote.is_none() && (c == '"' || c == '\'') {
                quote = Some(c);
            } else if quote == Some(c) {
                quote = None;
            } else {
                arg.push(c);
            }
            i += 1;
        }
        if quote.is_some() {
            return None;
        }
        out.push(arg);
    }
    Some(out)
}

/// A config line split into its lower-cased keyword and the raw remainder (after whitespace and
/// an optional `=`). `Ok(None)` for blank and comment lines.
pub(crate) struct Line<'a> {
    pub keyword: String,
    /// Remainder with leading whitespace removed; may be empty.
    pub rest: &'a str,
}

/// Splits one line. Trailing whitespace (and form feeds) are stripped first, as OpenSSH does.
pub(crate) fn split_line(line: &str) -> Option<Line<'_>> {
    let line = line.trim_end_matches(|c: char| is_ws(c) || c == '\u{c}');
    let (mut kw, mut rest) = strdelim(line)?;
    if kw.is_empty() {
        // Leading whitespace: the first call returned an empty token.
        let (k, r) = strdelim(rest?)?;
        kw = k;
        rest = r;
    }
    if kw.is_empty() || kw.starts_with('#') {
        return None;
    }
    let rest = rest.unwrap_or("").trim_start_matches(is_ws);
    Some(Line {
        keyword: kw.to_ascii_lowercase(),
        rest,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keyword_forms() {
        for (line, kw, rest) in [
            ("User bob", "user", "bob"),
            ("  User=bob", "user", "bob"),
            ("User = bob", "user", "bob"),
            ("User\t\tbob  ", "user", "bob"),
            ("\tHostName=a.b", "hostname", "a.b"),
            ("USER =bob", "user", "bob"),
            ("ProxyCommand nc %h %p # c", "proxycommand", "nc %h %p # c"),
        ] {
            let l = split_line(line).unwrap();
            assert_eq!((l.keyword.as_str(), l.rest), (kw, rest), "{line:?}");
        }
        assert!(split_line("   ").is_none());
        assert!(split_line("# comment").is_none());
        assert!(split_line("  #User x").is_none());
        assert_eq!(split_line("User").unwrap().rest, "");
    }

    #[test]
    fn argv_forms() {
        let a = |s: &str| argv_split(s).unwrap();
        assert_eq!(a("a b\tc"), ["a", "b", "c"]);
        assert_eq!(a("\"a b\" c"), ["a b", "c"]);
        assert_eq!(a("'x y'z"), ["x yz"]);
        assert_eq!(a("a\\ b"), ["a b"]);
        assert_eq!(a("a # comment"), ["a"]);
        assert_eq!(a("a#b"), ["a#b"]);
        assert_eq!(a("a\\qb"), ["a\\qb"]);
        assert!(argv_split("\"abc").is_none());
        assert!(a("").is_empty());
    }

    #[test]
    fn strdelim_quotes() {
        let (t, r) = strdelim("\"a b\" c").unwrap();
        assert_eq!((t.as_str(), r), ("a b", Some("c")));
        let (t, r) = strdelim("host \"x y\"").unwrap();
        assert_eq!(t, "host");
        let (t2, r2) = strdelim(r.unwrap()).unwrap();
        assert_eq!((t2.as_str(), r2), ("x y", Some("")));
    }
}
