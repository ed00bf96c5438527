//! OpenSSH pattern matching (`match.c`): `*` and `?` wildcards, comma lists with `!negation`.

/// `match_pattern`: the whole of `s` against one pattern with `*` (any run) and `?` (one char).
/// Case-sensitive. Linear backtracking, so hostile patterns cannot blow up.
pub(crate) fn match_pattern(s: &str, pattern: &str) -> bool {
    let s: Vec<char> = s.chars().collect();
    let p: Vec<char> = pattern.chars().collect();
    let (mut si, mut pi) = (0usize, 0usize);
    let mut star: Option<(usize, usize)> = None;
    while si < s.len() {
        match p.get(pi) {
            Some('*') => {
                star = Some((pi, si));
                pi += 1;
            }
            Some(&c) if c == '?' || Some(&c) == s.get(si) => {
                si += 1;
                pi += 1;
            }
            _ => match star {
                Some((sp, ss)) => {
                    pi = sp + 1;
                    si = ss + 1;
                    star = Some((sp, ss + 1));
                }
                None => return false,
            },
        }
    }
    p.get(pi..)
        .is_some_and(|rest| rest.iter().all(|&c| c == '*'))
}

/// `match_pattern_list`: 1 if a positive sub-pattern matched, -1 if a negated one did (which
/// wins), else 0. With `dolower`, sub-patterns are lower-cased first.
pub(crate) fn match_pattern_list(s: &str, list: &str, dolower: bool) -> i32 {
    let mut got_positive = false;
    for sub in list.split(',') {
        let (negated, sub) = match sub.strip_prefix('!') {
            Some(rest) => (true, rest),
            None => (false, sub),
        };
        let sub = if dolower {
            sub.to_ascii_lowercase()
        } else {
            sub.to_string()
        };
        if match_pattern(s, &sub) {
            if negated {
                return -1;
            }
            got_positive = true;
        }
    }
    i32::from(got_positive)
}

/// `match_hostname`: the host is lower-cased, then matched against the list.
pub(crate) fn match_hostname(host: &str, list: &str) -> i32 {
    match_pattern_list(&host.to_ascii_lowercase(), list, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wildcards() {
        assert!(match_pattern("gpu-01", "gpu-*"));
        assert!(match_pattern("gpu-", "gpu-*"));
        assert!(!match_pattern("gpu", "gpu-*"));
        assert!(match_pattern("a.prod", "*.prod"));
        assert!(match_pattern("abc", "a?c"));
        assert!(!match_pattern("ac", "a?c"));
        assert!(match_pattern("anything", "*"));
        assert!(match_pattern("", "*"));
        assert!(!match_pattern("Foo", "foo"));
        assert!(match_pattern("aXbXc", "a*b*c"));
        assert!(!match_pattern("aXbXd", "a*b*c"));
        assert!(match_pattern(&"a".repeat(60), &"*a".repeat(30)));
        assert!(!match_pattern(
            &"a".repeat(60),
            &format!("{}b", "*a".repeat(30))
        ));
    }

    #[test]
    fn lists() {
        assert_eq!(match_pattern_list("web-1", "web-*,!web-secret", false), 1);
        assert_eq!(
            match_pattern_list("web-secret", "web-*,!web-secret", false),
            -1
        );
        assert_eq!(match_pattern_list("db", "web-*", false), 0);
        assert_eq!(match_hostname("DB.Prod", "*.PROD"), 1);
    }
}
