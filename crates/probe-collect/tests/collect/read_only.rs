//! Read-only is enforced here, in one place: every command the collection scripts can run
//! (`script::commands()`: setup, runner, prelude and every probe of both rounds) is split into
//! simple commands, and each must be an allow-listed read-only program used in a read-only
//! way. Redirections may only go to /dev/null or to file descriptors.

#![allow(
    clippy::collapsible_if,
    clippy::collapsible_match,
    clippy::nonminimal_bool,
    clippy::needless_range_loop
)] // a hand-written lexer reads clearer this way
use probe_collect::script;

/// Programs (and our own shell functions) allowed as the first word of a simple command.
const ALLOWED: &[&str] = &[
    // shell built-ins and keywords
    "[",
    "test",
    "true",
    "false",
    ":",
    "set",
    "shift",
    "eval",
    "exit",
    "return",
    "break",
    "continue",
    "read",
    "cd",
    "pwd",
    "command",
    "printf",
    "echo",
    "case",
    "esac",
    "for",
    "while",
    "until",
    "do",
    "done",
    "if",
    "then",
    "else",
    "elif",
    "fi",
    "in",
    // read-only programs
    "cat",
    "head",
    "tail",
    "stat",
    "grep",
    "awk",
    "tr",
    "readlink",
    "hostname",
    "uname",
    "date",
    "id",
    "getconf",
    "nproc",
    "sort",
    "sh",
    "timeout",
    "sudo",
    "systemctl",
    "journalctl",
    "docker",
    "podman",
    "nvidia-smi",
    "zcat",
    "gzip",
    "zstd",
    "find",
    "setpriv",
    "dmesg",
    // functions defined by the prelude / runner
    "rec",
    "has",
    "to",
    "now",
    "fil",
    "fils",
    "homes",
    "unitdirs",
    "umatch",
    "units",
    "sec",
    "lane",
    "go",
    "run1",
    "_emit",
    "unz",
    "rootok",
    "rd",
    "asu",
    "uok",
    "dreal",
    "lone",
    "exact",
    "runs",
    "lpfiles",
    "cap",
    "rcof",
    "gitref",
    "lim",
    // the wrapped program of `to`/`asu`, checked where they are called
    "$@",
];

/// Never allowed anywhere as a program.
const FORBIDDEN: &[&str] = &[
    "rm", "mv", "cp", "dd", "tee", "chmod", "chown", "chgrp", "kill", "pkill", "killall",
    "install", "apt", "apt-get", "dpkg", "yum", "dnf", "rpm", "pip", "pip3", "python", "python3",
    "mkdir", "rmdir", "touch", "ln", "truncate", "mount", "umount", "reboot", "shutdown", "sed",
    "perl", "curl", "wget", "nc", "crontab", "useradd", "passwd", "mkfifo", "mktemp",
];

#[derive(Debug)]
struct Cmd {
    words: Vec<String>,
}

/// Replaces `$( ... )` and backquotes by a placeholder, returning the inner texts too.
fn extract_substitutions(text: &str, out: &mut Vec<String>) -> String {
    let b: Vec<char> = text.chars().collect();
    let mut res = String::new();
    let mut i = 0;
    let mut in_sq = false;
    while i < b.len() {
        let c = b[i];
        if c == '\\' && !in_sq {
            res.push(c);
            if let Some(&n) = b.get(i + 1) {
                res.push(n);
            }
            i += 2;
            continue;
        }
        // A comment (a `#` that starts a word) runs to the end of its line: an apostrophe in it
        // opens no quote for the shell, so it must not hide the next lines from the checker.
        if c == '#'
            && !in_sq
            && !in_double(&res)
            && res
                .chars()
                .last()
                .is_none_or(|p| p.is_whitespace() || p == ';')
        {
            while i < b.len() && b[i] != '\n' {
                i += 1;
            }
            continue;
        }
        if c == '\'' && !in_sq && !in_double(&res) {
            in_sq = true;
        } else if c == '\'' && in_sq {
            in_sq = false;
        }
        if !in_sq && c == '$' && b.get(i + 1) == Some(&'(') && b.get(i + 2) == Some(&'(') {
            // Arithmetic expansion: no commands inside.
            let mut j = i + 3;
            while j + 1 < b.len() && !(b[j] == ')' && b[j + 1] == ')') {
                j += 1;
            }
            res.push_str("ARITH");
            i = j + 2;
            continue;
        }
        if !in_sq && c == '$' && b.get(i + 1) == Some(&'(') && b.get(i + 2) != Some(&'(') {
            // balanced parentheses, quotes respected
            let mut depth = 0;
            let mut j = i + 1;
            let mut q: Option<char> = None;
            while j < b.len() {
                let d = b[j];
                match (q, d) {
                    (Some(x), d) if d == x => q = None,
                    (Some(_), _) => {}
                    (None, '\'' | '"') => q = Some(d),
                    (None, '(') => depth += 1,
                    (None, ')') => {
                        depth -= 1;
                        if depth == 0 {
                            break;
                        }
                    }
                    _ => {}
                }
                j += 1;
            }
            let inner: String = b[i + 2..j.min(b.len())].iter().collect();
            out.push(inner);
            res.push_str("SUBST");
            i = j + 1;
            continue;
        }
        res.push(c);
        i += 1;
    }
    res
}

fn in_double(s: &str) -> bool {
    let mut sq = false;
    let mut dq = false;
    for c in s.chars() {
        match c {
            '\'' if !dq => sq = !sq,
            '"' if !sq => dq = !dq,
            _ => {}
        }
    }
    dq
}

/// Splits a shell text (without substitutions) into simple commands.
fn simple_commands(text: &str) -> Vec<Cmd> {
    let mut cmds = Vec::new();
    let mut words: Vec<String> = Vec::new();
    let mut w = String::new();
    let mut q: Option<char> = None;
    let mut case_depth = 0usize;
    let mut expect_pattern = false;
    let chars: Vec<char> = text.chars().collect();
    let mut i = 0;
    let flush_word = |w: &mut String, words: &mut Vec<String>| {
        if !w.is_empty() {
            words.push(std::mem::take(w));
        }
    };
    while i < chars.len() {
        let c = chars[i];
        if let Some(x) = q {
            if c == x {
                q = None;
            } else if c == '\\' && x == '"' {
                i += 1;
                if let Some(&n) = chars.get(i) {
                    w.push(n);
                }
                i += 1;
                continue;
            }
            w.push(c);
            i += 1;
            continue;
        }
        if expect_pattern && words.is_empty() && w.is_empty() && !c.is_whitespace() {
            // A case pattern list up to `)`, unless the arm list ends here.
            let rest: String = chars[i..].iter().collect();
            if rest.starts_with("esac") {
                expect_pattern = false;
            } else {
                let mut qq: Option<char> = None;
                while i < chars.len() {
                    let d = chars[i];
                    match (qq, d) {
                        (Some(x), d) if d == x => qq = None,
                        (Some(_), _) => {}
                        (None, '\'' | '"') => qq = Some(d),
                        (None, ')') => break,
                        _ => {}
                    }
                    i += 1;
                }
                i += 1;
                expect_pattern = false;
                continue;
            }
        }
        match c {
            '\'' | '"' => {
                q = Some(c);
                w.push(c);
            }
            '\\' => {
                i += 1;
                if let Some(&n) = chars.get(i) {
                    if n != '\n' {
                        w.push(n);
                    }
                }
            }
            '#' if w.is_empty() => {
                while i < chars.len() && chars[i] != '\n' {
                    i += 1;
                }
                continue;
            }
            '&' if w.ends_with('>') || w.ends_with('<') => w.push(c),
            ';' | '|' | '&' | '\n' | '(' | ')' | '{' | '}'
                if !(c == '{' || c == '}') || w.is_empty() =>
            {
                flush_word(&mut w, &mut words);
                let dsemi = c == ';' && chars.get(i + 1) == Some(&';');
                if !words.is_empty() {
                    if words.len() == 3 && words[0] == "case" && words[2] == "in" {
                        case_depth += 1;
                        expect_pattern = true;
                    }
                    cmds.push(Cmd {
                        words: std::mem::take(&mut words),
                    });
                }
                if dsemi {
                    i += 1;
                    if case_depth > 0 {
                        expect_pattern = true;
                    }
                }
            }
            c if c.is_whitespace() => {
                flush_word(&mut w, &mut words);
                if words.len() == 3 && words[0] == "case" && words[2] == "in" {
                    case_depth += 1;
                    cmds.push(Cmd {
                        words: std::mem::take(&mut words),
                    });
                    expect_pattern = true;
                }
                if words.len() == 1 && words[0] == "esac" {
                    case_depth = case_depth.saturating_sub(1);
                }
            }
            _ => w.push(c),
        }
        i += 1;
    }
    flush_word(&mut w, &mut words);
    if !words.is_empty() {
        cmds.push(Cmd { words });
    }
    cmds
}

fn unquote(w: &str) -> String {
    w.trim_matches(|c| c == '"' || c == '\'').to_string()
}

/// Checks one simple command; returns violations.
fn check(cmd: &Cmd) -> Vec<String> {
    let mut v = Vec::new();
    let mut words: Vec<String> = cmd.words.clone();
    // Redirections: only to /dev/null or file descriptors.
    for (i, w) in cmd.words.iter().enumerate() {
        if w.starts_with('\'') || w.starts_with('"') {
            continue;
        }
        if let Some(pos) = w.find('>') {
            let target = w[pos + 1..].trim_start_matches('>').to_string();
            let target = if target.is_empty() {
                cmd.words.get(i + 1).cloned().unwrap_or_default()
            } else {
                target
            };
            if !(target.starts_with('&') || target == "/dev/null") {
                v.push(format!("redirection to a file: {}", cmd.words.join(" ")));
            }
        }
    }
    words.retain(|w| {
        !(w.contains('>') || w.contains('<')) || w.starts_with('"') || w.starts_with('\'')
    });
    // Skip leading assignments and negations.
    while let Some(f) = words.first() {
        let is_assign = f.split_once('=').is_some_and(|(k, _)| {
            !k.is_empty() && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        });
        if is_assign || f == "!" {
            words.remove(0);
        } else {
            break;
        }
    }
    // Unwrap the runners: `to SECS PROG`, `timeout [-k N] SECS PROG`, `sudo -n PROG`, `$_pre`.
    loop {
        let Some(f) = words.first().map(|s| unquote(s)) else {
            return v;
        };
        match f.as_str() {
            "to" => {
                words.drain(..2.min(words.len()));
            }
            "asu" => {
                words.drain(..4.min(words.len()));
            }
            "cap" => {
                words.drain(..3.min(words.len()));
            }
            "setpriv" => {
                // Only dropping to a user: `setpriv --reuid=U --regid=G --clear-groups PROG`.
                let flags: Vec<String> = words
                    .iter()
                    .skip(1)
                    .take_while(|w| w.starts_with("--"))
                    .map(|w| unquote(w))
                    .collect();
                let ok = flags.len() == 3
                    && flags[0].starts_with("--reuid=")
                    && flags[1].starts_with("--regid=")
                    && flags[2] == "--clear-groups";
                if !ok {
                    v.push(format!(
                        "setpriv other than dropping to a user: {}",
                        cmd.words.join(" ")
                    ));
                }
                words.drain(..(1 + flags.len()).min(words.len()));
            }
            "$_pre" | "$SU" => {
                words.remove(0);
            }
            // `$TO "$_lim" PROG ...`: the time limit `lim` set, then the program.
            "$TO" => {
                words.remove(0);
                if words.first().map(|w| unquote(w)).as_deref() == Some("$_lim") {
                    words.remove(0);
                }
            }
            "timeout" => {
                words.remove(0);
                while words.first().is_some_and(|w| w.starts_with('-')) {
                    words.drain(..2.min(words.len()));
                }
                if !words.is_empty() {
                    words.remove(0);
                }
            }
            "sudo" => {
                if words.get(1).map(String::as_str) != Some("-n") {
                    v.push(format!("sudo without -n: {}", cmd.words.join(" ")));
                }
                words.drain(..2.min(words.len()));
            }
            _ => break,
        }
    }
    let Some(prog) = words.first().map(|s| unquote(s)) else {
        return v;
    };
    let args: Vec<String> = words.iter().skip(1).map(|s| unquote(s)).collect();
    let prog = if prog == "$_rt" {
        "docker".to_string()
    } else {
        prog
    };
    if prog == "exec" {
        // `exec 4>&1` only duplicates a descriptor; `exec PROG` would replace the shell.
        if !args.is_empty() {
            v.push(format!("exec of a program: {}", cmd.words.join(" ")));
        }
        return v;
    }
    let base = prog.rsplit('/').next().unwrap_or(&prog).to_string();
    if FORBIDDEN.contains(&base.as_str()) {
        v.push(format!("forbidden program {base}: {}", cmd.words.join(" ")));
        return v;
    }
    if !ALLOWED.contains(&base.as_str()) && base != "SUBST" {
        v.push(format!(
            "program not on the read-only allow-list: {base} ({})",
            cmd.words.join(" ")
        ));
        return v;
    }
    let first_verb = args
        .iter()
        .find(|a| !a.starts_with('-'))
        .cloned()
        .unwrap_or_default();
    match base.as_str() {
        "systemctl" => {
            if !(first_verb == "show" || first_verb == "cat" || first_verb.starts_with("list-")) {
                v.push(format!(
                    "systemctl verb not read-only: {}",
                    cmd.words.join(" ")
                ));
            }
        }
        "find" => {
            for bad in [
                "-delete", "-exec", "-execdir", "-ok", "-okdir", "-fprint", "-fprint0", "-fprintf",
                "-fls",
            ] {
                if args.iter().any(|a| a == bad) {
                    v.push(format!(
                        "find action not read-only: {}",
                        cmd.words.join(" ")
                    ));
                }
            }
        }
        "docker" | "podman" => {
            if !(first_verb == "ps" || first_verb == "inspect") {
                v.push(format!(
                    "container command not read-only: {}",
                    cmd.words.join(" ")
                ));
            }
        }
        "journalctl" => {
            for bad in [
                "--rotate",
                "--vacuum",
                "--flush",
                "--sync",
                "--relinquish",
                "--setup-keys",
                "--update-catalog",
            ] {
                if args.iter().any(|a| a.starts_with(bad)) {
                    v.push(format!("journalctl writes: {}", cmd.words.join(" ")));
                }
            }
        }
        "dmesg" => {
            for a in &args {
                let ok = a.starts_with("--time-format");
                if !ok {
                    v.push(format!("dmesg argument not a read: {a}"));
                }
            }
        }
        "nvidia-smi" => {
            for a in &args {
                let ok = a.starts_with("--query-")
                    || a.starts_with("--format")
                    || a == "topo"
                    || a == "-m"
                    || a == "-L"
                    || a == "-q"
                    || a == "--help-query-gpu"
                    || a == "-d"
                    || a.split(',').all(|d| matches!(d, "TEMPERATURE" | "PIDS"));
                if !ok {
                    v.push(format!("nvidia-smi argument not a query: {a}"));
                }
            }
        }
        "awk" => {
            for a in &args {
                // `print X > "/dev/fd/3"` writes to the script's own pipe (the processes
                // section names the process it is at), never a file.
                let a = &a.replace("> \"/dev/fd/3\"", "");
                // `getline VAR < FILE` only reads; `CMD | getline` would run a command.
                if a.contains("system(")
                    || a.contains("| getline")
                    || a.contains("|getline")
                    || a.contains("fflush")
                    || a.contains("print >")
                    || a.contains("printf >")
                    || a.contains("| \"")
                {
                    v.push(format!("awk program can write or run commands: {a}"));
                }
            }
        }
        "gzip" | "zstd" => {
            // Only decompression to stdout: `gzip -dc` / `-cd` / `-d -c`, no other flag, and no
            // file operand (it reads stdin), so nothing is written, replaced or removed.
            let flags: String = args
                .iter()
                .filter(|a| a.starts_with('-'))
                .map(|a| a.trim_start_matches('-'))
                .collect();
            let files = args.iter().any(|a| !a.starts_with('-'));
            if !(flags.contains('d') && flags.contains('c'))
                || flags.chars().any(|c| c != 'd' && c != 'c')
                || files
            {
                v.push(format!(
                    "gzip may write: {} (only `gzip -dc` reading stdin)",
                    cmd.words.join(" ")
                ));
            }
        }
        "zcat" => {
            if args.iter().any(|a| a.starts_with('-')) {
                v.push(format!("zcat with options: {}", cmd.words.join(" ")));
            }
        }
        "sort" => {
            if args
                .iter()
                .any(|a| a.starts_with("-o") || a.starts_with("--output"))
            {
                v.push("sort -o writes a file".into());
            }
        }
        "date" => {
            if args.iter().any(|a| {
                a.starts_with("-s")
                    || a.starts_with("--set")
                    || (!a.starts_with('+') && !a.starts_with('-'))
            }) {
                v.push(format!("date can set the clock: {}", cmd.words.join(" ")));
            }
        }
        "hostname" => {
            if !args.is_empty() {
                v.push("hostname with an argument sets the name".into());
            }
        }
        "sh" => {
            // `sh -s` reads a section: the prelude and a probe command, both checked here.
            if !matches!(args.first().map(String::as_str), Some("-c" | "-s")) {
                v.push(format!(
                    "sh must run a checked command string: {}",
                    cmd.words.join(" ")
                ));
            }
        }
        _ => {}
    }
    v
}

fn violations(text: &str) -> Vec<String> {
    let mut texts = vec![text.to_string()];
    let mut out = Vec::new();
    let mut seen = 0;
    while let Some(t) = texts.pop() {
        seen += 1;
        assert!(seen < 10_000);
        let mut inner = Vec::new();
        let flat = extract_substitutions(&t, &mut inner);
        texts.extend(inner);
        for c in simple_commands(&flat) {
            out.extend(check(&c));
        }
    }
    out
}

#[test]
fn every_command_is_read_only() {
    let cmds = script::commands();
    assert!(cmds.len() >= 15, "commands(): {}", cmds.len());
    let mut all = Vec::new();
    let mut programs = std::collections::BTreeSet::new();
    for c in &cmds {
        all.extend(violations(c));
        let mut inner = Vec::new();
        let flat = extract_substitutions(c, &mut inner);
        for s in simple_commands(&flat) {
            for w in s.words.iter().take(3) {
                programs.insert(unquote(w));
            }
        }
    }
    assert!(all.is_empty(), "read-only violations:\n{}", all.join("\n"));
    // The checker saw the programs that matter (it parses the scripts, not nothing).
    for p in ["systemctl", "nvidia-smi", "journalctl", "grep", "head"] {
        assert!(programs.contains(p), "{p} not seen: {programs:?}");
    }
}

#[test]
fn checker_catches_writes_signals_and_restarts() {
    for bad in [
        "rm -rf /tmp/x",
        "echo hi > /etc/motd",
        "cat /etc/passwd >> /tmp/out",
        "systemctl restart vllm",
        "to 5 systemctl daemon-reload",
        "docker run --rm img",
        "x=$(docker exec c ls)",
        "kill -9 1",
        "sudo systemctl stop x",
        "printf x | tee /tmp/f",
        "dd of=/dev/sda if=/dev/zero",
        "find /var/log -name x -delete",
        "to 5 find / -exec rm {} +",
        "setpriv --reuid=0 --inh-caps=+all sh",
        "asu 1000 1000 5 rm -f /x",
        "sed -i s/a/b/ /etc/x",
        "awk '{ print > \"/tmp/x\" }' f",
        "awk 'BEGIN { \"rm -rf /\" | getline x }'",
        "nvidia-smi -pm 1",
        "journalctl --vacuum-size=1M",
        "hostname evil",
        "case $x in a) mv a b;; esac",
        "exec rm -rf /",
        "gzip /var/log/dpkg.log",
        "gzip -d /var/log/apt/history.log.1.gz",
        "gzip -dcf x.gz",
        "gunzip /var/log/dpkg.log.2.gz",
        "zcat -f x",
        "# the driver's log\nx=$(rm -f /var/log/x)",
    ] {
        assert!(!violations(bad).is_empty(), "not caught: {bad}");
    }
    for good in [
        "head -c 10 /etc/os-release 2>/dev/null",
        "to 10 \"$_rt\" inspect $_ids | head -c 100",
        "case $x in *.service) ;; esac",
        "systemctl show -p Id x || exit 3",
        "head -c 10 \"$_f\" | gzip -dc 2>/dev/null | tail -c 5",
        "head -c 10 \"$_f\" | zcat | tail -c 5",
        "# NVIDIA's driver\n_t=$(( _a + 2 ))\necho \"$#\" ${#x}",
    ] {
        assert!(
            violations(good).is_empty(),
            "false alarm on {good}: {:?}",
            violations(good)
        );
    }
}

/// The boundary `$B` is only ever an argument of the shell's own builtins (`printf`, `echo`,
/// `eval`, `[`): another user reads every process's argument vector in `/proc/PID/cmdline`, and
/// a program that frames records gets the boundary on its stdin instead.
#[test]
fn boundary_is_never_a_program_argument() {
    const BUILTINS: &[&str] = &["printf", "echo", "eval", "[", "test", "case", "rec"];
    let mut bad = Vec::new();
    let mut seen = 0;
    for c in script::commands() {
        let mut texts = vec![c];
        while let Some(t) = texts.pop() {
            let mut inner = Vec::new();
            let flat = extract_substitutions(&t, &mut inner);
            texts.extend(inner);
            for cmd in simple_commands(&flat) {
                let words: Vec<&String> = cmd
                    .words
                    .iter()
                    .skip_while(|w| {
                        ["then", "do", "else", "elif", "if", "!", "while", "until"]
                            .contains(&w.as_str())
                            || w.split_once('=').is_some_and(|(k, _)| {
                                !k.is_empty()
                                    && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                            })
                    })
                    .collect();
                let Some(first) = words.first() else {
                    continue;
                };
                let uses_b = words
                    .iter()
                    .skip(1)
                    .any(|w| w.contains("$B\"") || w.contains("$B ") || w.ends_with("$B"));
                if uses_b {
                    seen += 1;
                    if !BUILTINS.contains(&unquote(first).as_str()) {
                        bad.push(cmd.words.join(" "));
                    }
                }
            }
        }
    }
    assert!(seen >= 5, "the check saw the framing ({seen} uses)");
    assert!(
        bad.is_empty(),
        "boundary passed to a program:\n{}",
        bad.join("\n")
    );
    // The checker catches what the old collector did.
    let old = "grep -q -F \"$B\" \"$1/cmdline\"";
    let cmd = simple_commands(old).into_iter().next().unwrap();
    assert!(cmd.words.iter().skip(1).any(|w| w.contains("$B\"")));
}

/// What probe may ever send to a model server: GET of these paths, per engine, nothing else.
/// A path added to `configs/endpoints.toml` must be added here, after checking in the engine's
/// source that it is a read.
const SERVER_ALLOW_LIST: &[(&str, &str)] = &[
    ("sglang", "/get_server_info"),
    ("sglang", "/get_model_info"),
    ("sglang", "/metrics"),
    ("vllm", "/version"),
    ("vllm", "/v1/models"),
    ("vllm", "/metrics"),
    ("llama.cpp", "/props"),
    ("llama.cpp", "/metrics"),
    ("tgi", "/info"),
    ("tgi", "/metrics"),
    ("ollama", "/api/version"),
    ("ollama", "/api/ps"),
];

#[test]
fn server_requests_are_allow_listed_gets() {
    let all = probe_collect::server::endpoints::all_requests();
    assert!(all.len() >= 8, "{all:?}");
    for (engine, req) in &all {
        assert_eq!(
            req.method,
            probe_transport::forward::Method::Get,
            "{engine} {req:?}"
        );
        assert!(
            SERVER_ALLOW_LIST.contains(&(engine.as_str(), req.path.as_str())),
            "{engine} {} is not on the allow-list",
            req.path
        );
        assert!(!req.path.contains('?'), "{}", req.path);
        assert!(req.timeout <= std::time::Duration::from_secs(5));
        assert!(req.body_cap <= 8 << 20);
        assert!(!req.accept.to_ascii_lowercase().contains("auth"));
    }
    let limits = &probe_collect::server::endpoints::endpoints().limits;
    assert!(limits.max_requests <= 4 && limits.max_servers <= 8);
}

/// The thinning program (`$THIN`, `probe_collect::thin`) reaches `awk` through a variable, so the
/// command check above cannot read it: held here to the same rule. It runs no command, opens
/// no file, and every `print`/`printf` writes to its standard output.
#[test]
fn the_thinning_program_only_reads_and_prints() {
    let program = probe_collect::thin::program();
    for forbidden in ["system(", "getline", "fflush", "close(", "| \"", "|\""] {
        assert!(
            !program.contains(forbidden),
            "thinning program holds {forbidden:?}"
        );
    }
    let statements = program.split([';', '{', '}', '\n']);
    for st in statements {
        let st = st.trim();
        if st.starts_with("print") {
            assert!(
                !st.contains('>') && !st.contains('|'),
                "thinning program redirects its output: {st}"
            );
        }
    }
    assert!(program.contains("printf \"\\n%s R thin"), "its record");
}
