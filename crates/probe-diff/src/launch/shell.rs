//! A small, static shell reader: enough of bash (and a little fish) to find what a script, a
//! history line or a README snippet actually runs.
//!
//! It lexes the text with bash's quoting rules (backslash-newline continuations, comments ending a
//! command, single/double quotes, `$VAR`, `${VAR...}`, `$(...)`, `$((...))`, arrays, redirections,
//! here-documents) and then walks the commands in order, tracking variables and exports. Values fixed
//! by an assignment in the text are resolved; anything that depends on the outside (positional
//! parameters, environment variables, `$0`, variables a loop or `case` may overwrite) is kept as
//! written.

use std::collections::BTreeMap;

/// Bounds against hostile input.
const MAX_TOKENS: usize = 200_000;
const MAX_DEPTH: usize = 8;
/// Here-document files kept per text, and their size.
const MAX_FILES: usize = 16;
const MAX_FILE_BYTES: usize = 64 * 1024;
/// Exported variables tracked per text.
const MAX_EXPORTS: usize = 512;

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Part {
    /// Literal text; `bool` = came from inside quotes.
    Lit(String, bool),
    /// `$NAME`, `${NAME}`, `${NAME:-x}`, `${NAME##*/}`, `$1`, `${ARR[@]}`: raw text and pieces.
    Var {
        name: String,
        op: Option<String>,
        raw: String,
        quoted: bool,
    },
    /// `$(...)` or backticks, raw text.
    Cmd(String, bool),
    /// `$((...))`, raw text.
    Arith(String, bool),
}

#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct Word {
    pub parts: Vec<Part>,
    /// `NAME=(...)` / `NAME+=(...)`: the array items.
    pub array: Option<Vec<Word>>,
}

impl Word {
    /// The text as written, quotes removed, expansions verbatim.
    pub fn raw(&self) -> String {
        let mut s = String::new();
        for p in &self.parts {
            match p {
                Part::Lit(t, _) => s.push_str(t),
                Part::Var { raw, .. } => s.push_str(raw),
                Part::Cmd(t, _) | Part::Arith(t, _) => s.push_str(t),
            }
        }
        s
    }

    fn is_empty(&self) -> bool {
        self.parts.is_empty() && self.array.is_none()
    }
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Tok {
    Word(Word),
    /// `;`, `&`, `&&`, `||`, `|`, `;;`, `(`, `)`, `\n`.
    Op(String),
    /// Redirection: fd, operator, target.
    Redir(Option<u32>, String, Word),
    /// Here-document body attached to the command (`cat > f <<EOF`).
    Heredoc(String),
}

struct Lexer<'a> {
    chars: Vec<char>,
    pos: usize,
    toks: Vec<Tok>,
    pending_heredocs: Vec<(String, bool)>,
    _src: &'a str,
}

/// Splits `text` into shell tokens. Never fails: unbalanced quotes run to the end of the text.
pub(crate) fn lex(text: &str) -> Vec<Tok> {
    let mut lx = Lexer {
        chars: text.chars().collect(),
        pos: 0,
        toks: Vec::new(),
        pending_heredocs: Vec::new(),
        _src: text,
    };
    lx.run();
    lx.toks
}

/// The redaction marker's prefix (`configs/redaction.toml`: `<redacted:XXXXXXXX>`).
const MARKER_PREFIX: &str = "<redacted:";

/// Length in chars of a redaction marker at the start of `chars` (`<redacted:` + 4 to 64 hex
/// digits + `>`), or `None`.
pub(crate) fn redaction_marker_len(chars: &[char]) -> Option<usize> {
    let prefix = MARKER_PREFIX.chars().count();
    if !chars.iter().take(prefix).copied().eq(MARKER_PREFIX.chars()) {
        return None;
    }
    let digits = chars
        .get(prefix..)?
        .iter()
        .take(65)
        .take_while(|c| c.is_ascii_hexdigit())
        .count();
    ((4..=64).contains(&digits) && chars.get(prefix + digits) == Some(&'>'))
        .then_some(prefix + digits + 1)
}

fn is_name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

impl Lexer<'_> {
    fn peek(&self, off: usize) -> Option<char> {
        self.chars.get(self.pos + off).copied()
    }

    /// Length of a redaction marker (`<redacted:c457ccd7>`) starting here: the collector puts it
    /// where a secret was, and it is one literal word, not two redirections.
    fn redaction_marker(&self) -> Option<usize> {
        let rest = self.chars.get(self.pos..)?;
        redaction_marker_len(rest)
    }

    fn run(&mut self) {
        while self.pos < self.chars.len() && self.toks.len() < MAX_TOKENS {
            let Some(c) = self.peek(0) else { break };
            match c {
                ' ' | '\t' | '\r' => self.pos += 1,
                '\\' if self.peek(1) == Some('\n') => self.pos += 2,
                '\\' if self.peek(1) == Some('\r') && self.peek(2) == Some('\n') => self.pos += 3,
                '\\' if self.peek(1).is_none() => self.pos += 1,
                '#' => {
                    while let Some(c) = self.peek(0) {
                        if c == '\n' {
                            break;
                        }
                        self.pos += 1;
                    }
                }
                '\n' => {
                    self.pos += 1;
                    // Here-document bodies belong to the command that ends on this line.
                    self.read_heredocs();
                    self.toks.push(Tok::Op("\n".into()));
                }
                ';' | '&' | '|' | '(' | ')' => {
                    let two: String = [Some(c), self.peek(1)].iter().flatten().collect();
                    let op = if matches!(two.as_str(), "&&" | "||" | ";;" | "|&") {
                        self.pos += 2;
                        two
                    } else if c == '&' && self.peek(1) == Some('>') {
                        // `&> file`
                        self.pos += 2;
                        let append = if self.peek(0) == Some('>') {
                            self.pos += 1;
                            true
                        } else {
                            false
                        };
                        self.skip_blanks();
                        let w = self.word();
                        self.toks.push(Tok::Redir(
                            None,
                            if append { "&>>".into() } else { "&>".into() },
                            w,
                        ));
                        continue;
                    } else {
                        self.pos += 1;
                        c.to_string()
                    };
                    self.toks.push(Tok::Op(op));
                }
                '<' if self.redaction_marker().is_some() => {
                    let w = self.word();
                    self.toks.push(Tok::Word(w));
                }
                '<' | '>' => self.redirection(None),
                _ => {
                    let w = self.word();
                    if w.is_empty() {
                        // A character that starts no word: skip it.
                        self.pos += 1;
                        continue;
                    }
                    // `2>file`, `2>&1`: a word of digits directly followed by a redirection.
                    if matches!(self.peek(0), Some('<' | '>'))
                        && let [Part::Lit(t, false)] = w.parts.as_slice()
                        && !t.is_empty()
                        && t.chars().all(|c| c.is_ascii_digit())
                    {
                        let fd = t.parse().ok();
                        self.redirection(fd);
                        continue;
                    }
                    self.toks.push(Tok::Word(w));
                }
            }
        }
    }

    fn skip_blanks(&mut self) {
        while matches!(self.peek(0), Some(' ' | '\t')) {
            self.pos += 1;
        }
    }

    fn redirection(&mut self, fd: Option<u32>) {
        let mut op = String::new();
        while let Some(c) = self.peek(0) {
            if matches!(c, '<' | '>') && op.len() < 3 {
                op.push(c);
                self.pos += 1;
            } else {
                break;
            }
        }
        if op == "<<" || op == "<<<" {
            if op == "<<" {
                let strip = if self.peek(0) == Some('-') {
                    self.pos += 1;
                    true
                } else {
                    false
                };
                self.skip_blanks();
                let w = self.word();
                self.pending_heredocs.push((w.raw(), strip));
                self.toks.push(Tok::Redir(fd, "<<".into(), w));
                return;
            }
            self.skip_blanks();
            let w = self.word();
            self.toks.push(Tok::Redir(fd, op, w));
            return;
        }
        if self.peek(0) == Some('&') {
            // `2>&1`, `>&2`
            self.pos += 1;
            let mut t = String::from("&");
            while let Some(c) = self.peek(0) {
                if c.is_ascii_digit() || c == '-' {
                    t.push(c);
                    self.pos += 1;
                } else {
                    break;
                }
            }
            self.toks.push(Tok::Redir(
                fd,
                op,
                Word {
                    parts: vec![Part::Lit(t, false)],
                    array: None,
                },
            ));
            return;
        }
        if self.peek(0) == Some('|') {
            self.pos += 1;
        }
        self.skip_blanks();
        let w = self.word();
        self.toks.push(Tok::Redir(fd, op, w));
    }

    fn read_heredocs(&mut self) {
        let pending = std::mem::take(&mut self.pending_heredocs);
        for (delim, strip) in pending {
            let mut body = String::new();
            loop {
                if self.pos >= self.chars.len() {
                    break;
                }
                let start = self.pos;
                while self.pos < self.chars.len() && self.chars.get(self.pos) != Some(&'\n') {
                    self.pos += 1;
                }
                let line: String = self
                    .chars
                    .get(start..self.pos)
                    .unwrap_or(&[])
                    .iter()
                    .collect();
                self.pos += 1; // newline
                let cmp = if strip {
                    line.trim_start_matches('\t')
                } else {
                    line.as_str()
                };
                if cmp.trim_end() == delim {
                    break;
                }
                body.push_str(&line);
                body.push('\n');
            }
            self.toks.push(Tok::Heredoc(body));
        }
    }

    /// Reads one word (may be empty when the next char is an operator).
    fn word(&mut self) -> Word {
        let mut w = Word::default();
        let mut lit = String::new();
        let flush = |lit: &mut String, parts: &mut Vec<Part>, quoted: bool| {
            if !lit.is_empty() {
                parts.push(Part::Lit(std::mem::take(lit), quoted));
            }
        };
        while let Some(c) = self.peek(0) {
            if c == '<'
                && let Some(len) = self.redaction_marker()
            {
                flush(&mut lit, &mut w.parts, false);
                let marker: String = self
                    .chars
                    .get(self.pos..self.pos + len)
                    .unwrap_or(&[])
                    .iter()
                    .collect();
                w.parts.push(Part::Lit(marker, true));
                self.pos += len;
                continue;
            }
            match c {
                ' ' | '\t' | '\n' | '\r' | ';' | '&' | '|' | '<' | '>' | ')' => break,
                '(' => {
                    // `NAME=(` / `NAME+=(`: an array literal.
                    let so_far = format!("{}{}", word_lit(&w), lit);
                    if so_far.ends_with('=') && w.array.is_none() {
                        flush(&mut lit, &mut w.parts, false);
                        self.pos += 1;
                        w.array = Some(self.array_items());
                        continue;
                    }
                    if so_far.is_empty() && w.parts.is_empty() {
                        break;
                    }
                    lit.push(c);
                    self.pos += 1;
                }
                '\\' => match self.peek(1) {
                    Some('\n') => self.pos += 2,
                    Some(n) => {
                        flush(&mut lit, &mut w.parts, false);
                        w.parts.push(Part::Lit(n.to_string(), true));
                        self.pos += 2;
                    }
                    None => self.pos += 1,
                },
                '\'' => {
                    flush(&mut lit, &mut w.parts, false);
                    self.pos += 1;
                    let mut s = String::new();
                    while let Some(c) = self.peek(0) {
                        self.pos += 1;
                        if c == '\'' {
                            break;
                        }
                        s.push(c);
                    }
                    w.parts.push(Part::Lit(s, true));
                }
                '"' => {
                    flush(&mut lit, &mut w.parts, false);
                    self.pos += 1;
                    self.double_quoted(&mut w.parts);
                }
                '$' => {
                    flush(&mut lit, &mut w.parts, false);
                    let p = self.dollar(false);
                    w.parts.push(p);
                }
                '`' => {
                    flush(&mut lit, &mut w.parts, false);
                    let p = self.backtick(false);
                    w.parts.push(p);
                }
                _ => {
                    lit.push(c);
                    self.pos += 1;
                }
            }
        }
        flush(&mut lit, &mut w.parts, false);
        w
    }

    fn array_items(&mut self) -> Vec<Word> {
        let mut items = Vec::new();
        while let Some(c) = self.peek(0) {
            match c {
                ' ' | '\t' | '\n' | '\r' => self.pos += 1,
                '\\' if self.peek(1) == Some('\n') => self.pos += 2,
                ')' => {
                    self.pos += 1;
                    break;
                }
                '#' => {
                    while let Some(c) = self.peek(0) {
                        if c == '\n' {
                            break;
                        }
                        self.pos += 1;
                    }
                }
                _ => {
                    let w = self.word();
                    if w.is_empty() {
                        self.pos += 1;
                    } else {
                        items.push(w);
                    }
                }
            }
        }
        items
    }

    fn double_quoted(&mut self, parts: &mut Vec<Part>) {
        let mut s = String::new();
        while let Some(c) = self.peek(0) {
            match c {
                '"' => {
                    self.pos += 1;
                    break;
                }
                '\\' => match self.peek(1) {
                    Some('\n') => self.pos += 2,
                    Some(n @ ('$' | '`' | '"' | '\\')) => {
                        s.push(n);
                        self.pos += 2;
                    }
                    _ => {
                        s.push('\\');
                        self.pos += 1;
                    }
                },
                '$' => {
                    if !s.is_empty() {
                        parts.push(Part::Lit(std::mem::take(&mut s), true));
                    }
                    let p = self.dollar(true);
                    parts.push(p);
                }
                '`' => {
                    if !s.is_empty() {
                        parts.push(Part::Lit(std::mem::take(&mut s), true));
                    }
                    let p = self.backtick(true);
                    parts.push(p);
                }
                _ => {
                    s.push(c);
                    self.pos += 1;
                }
            }
        }
        // `""` is still an (empty) word.
        parts.push(Part::Lit(s, true));
    }

    fn backtick(&mut self, quoted: bool) -> Part {
        let start = self.pos;
        self.pos += 1;
        while let Some(c) = self.peek(0) {
            self.pos += 1;
            if c == '\\' {
                self.pos += 1;
            } else if c == '`' {
                break;
            }
        }
        Part::Cmd(self.slice(start, self.pos), quoted)
    }

    fn slice(&self, a: usize, b: usize) -> String {
        let b = b.min(self.chars.len());
        self.chars.get(a..b).unwrap_or(&[]).iter().collect()
    }

    /// Scans a balanced `(...)` / `{...}` starting at `self.pos` (just after the opener).
    fn balanced(&mut self, open: char, close: char) {
        let mut depth = 1usize;
        while let Some(c) = self.peek(0) {
            self.pos += 1;
            match c {
                '\\' => self.pos += 1,
                '\'' if open == '(' => {
                    while let Some(c) = self.peek(0) {
                        self.pos += 1;
                        if c == '\'' {
                            break;
                        }
                    }
                }
                '"' => {
                    while let Some(c) = self.peek(0) {
                        self.pos += 1;
                        if c == '\\' {
                            self.pos += 1;
                        } else if c == '"' {
                            break;
                        }
                    }
                }
                c if c == open => depth += 1,
                c if c == close => {
                    depth -= 1;
                    if depth == 0 {
                        return;
                    }
                }
                _ => {}
            }
        }
    }

    fn dollar(&mut self, quoted: bool) -> Part {
        let start = self.pos;
        match self.peek(1) {
            Some('(') if self.peek(2) == Some('(') => {
                self.pos += 3;
                self.balanced('(', ')');
                if self.peek(0) == Some(')') {
                    self.pos += 1;
                }
                Part::Arith(self.slice(start, self.pos), quoted)
            }
            Some('(') => {
                self.pos += 2;
                self.balanced('(', ')');
                Part::Cmd(self.slice(start, self.pos), quoted)
            }
            Some('{') => {
                self.pos += 2;
                self.balanced('{', '}');
                let raw = self.slice(start, self.pos);
                let inner = raw
                    .strip_prefix("${")
                    .and_then(|s| s.strip_suffix('}'))
                    .unwrap_or("");
                let inner = inner.strip_prefix('#').unwrap_or(inner);
                let name: String = inner
                    .chars()
                    .take_while(|c| is_name_char(*c) || matches!(c, '@' | '*' | '?' | '#'))
                    .collect();
                let rest = inner.get(name.len()..).unwrap_or("");
                Part::Var {
                    name,
                    op: if rest.is_empty() {
                        None
                    } else {
                        Some(rest.to_string())
                    },
                    raw,
                    quoted,
                }
            }
            Some(c)
                if c.is_ascii_digit() || matches!(c, '@' | '*' | '#' | '?' | '$' | '!' | '-') =>
            {
                self.pos += 2;
                Part::Var {
                    name: c.to_string(),
                    op: None,
                    raw: self.slice(start, self.pos),
                    quoted,
                }
            }
            Some(c) if is_name_char(c) => {
                self.pos += 1;
                while matches!(self.peek(0), Some(c) if is_name_char(c)) {
                    self.pos += 1;
                }
                let raw = self.slice(start, self.pos);
                Part::Var {
                    name: raw.trim_start_matches('$').to_string(),
                    op: None,
                    raw,
                    quoted,
                }
            }
            _ => {
                self.pos += 1;
                Part::Lit("$".into(), quoted)
            }
        }
    }
}

fn word_lit(w: &Word) -> String {
    w.parts
        .iter()
        .map(|p| match p {
            Part::Lit(t, _) => t.clone(),
            _ => "\u{1}".into(),
        })
        .collect()
}

// ---------------------------------------------------------------------------------------------
// Interpretation

/// A variable's value as far as the text tells.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Val {
    /// Text to substitute (may itself hold literal `$1`, `${X:-d}`, `$(...)`).
    Text(String),
    /// Not knowable statically: the reference is kept as written at the point of use.
    Opaque,
    Array(Vec<String>),
}

/// One simple command the script runs, with the shell state at that point.
#[derive(Debug, Clone, Default)]
pub(crate) struct ShellCommand {
    pub argv: Vec<String>,
    /// Inline `VAR=value` prefixes.
    pub prefix_env: BTreeMap<String, String>,
    /// Variables exported by the text before this command.
    pub exported: BTreeMap<String, String>,
    pub cwd: Option<String>,
    /// `conda`, `venv` from an earlier `conda activate` / `source .../activate`.
    pub context_wrappers: Vec<String>,
    pub venv: Option<String>,
    /// Output redirections: (operator, target) such as (`>>`, `server.log`).
    pub redirects: Vec<(String, String)>,
    /// `| tee [-a] file`: the tee targets.
    pub tee: Vec<String>,
    /// Files written by here-documents earlier in the text (`cat > f <<EOF`).
    pub files: std::rc::Rc<BTreeMap<String, String>>,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Frame {
    /// `if ... then` first branch.
    IfThen,
    /// `elif` / `else` branches.
    IfElse,
    /// `while`/`until`/`for`/`select` bodies, `case` arms, function bodies.
    Loop,
    Case,
    /// `{ ... }` group (not a function).
    Group,
}

#[derive(Debug, Default, Clone)]
pub(crate) struct State {
    pub vars: BTreeMap<String, Val>,
    pub exported: BTreeMap<String, String>,
    pub cwd: Option<String>,
    pub context_wrappers: Vec<String>,
    pub venv: Option<String>,
    pub files: std::rc::Rc<BTreeMap<String, String>>,
}

/// Walks the commands of `text` and returns every simple command with its context.
pub(crate) fn commands(text: &str, state: &mut State, depth: usize) -> Vec<ShellCommand> {
    let toks = lex(text);
    let mut out = Vec::new();
    let mut frames: Vec<Frame> = Vec::new();
    let mut i = 0;
    // Collect one pipeline element at a time.
    let mut cur: Vec<&Tok> = Vec::new();
    let mut pending_tee_target: Option<usize> = None;
    let mut after_or_and = false;
    while i <= toks.len() {
        let t = toks.get(i);
        let is_end = matches!(t, None | Some(Tok::Op(_)));
        if !is_end {
            if let Some(t) = t {
                cur.push(t);
            }
            i += 1;
            continue;
        }
        let op = match t {
            Some(Tok::Op(o)) => o.as_str(),
            _ => "",
        };
        // A `(` right after a word means `name()` (function) when followed by `)`.
        if op == "(" && cur.len() == 1 && matches!(toks.get(i + 1), Some(Tok::Op(o)) if o == ")") {
            frames.push(Frame::Loop);
            cur.clear();
            i += 2;
            // Skip the `{` that opens the body.
            if let Some(Tok::Word(w)) = toks.get(i)
                && w.raw() == "{"
            {
                i += 1;
            }
            continue;
        }
        let in_pipe_to_tee = pending_tee_target.is_some();
        if !cur.is_empty() {
            let tee_words: Vec<String> = if in_pipe_to_tee {
                cur.iter()
                    .filter_map(|t| match t {
                        Tok::Word(w) => Some(expand_simple(w, state)),
                        _ => None,
                    })
                    .collect()
            } else {
                Vec::new()
            };
            if tee_words
                .first()
                .map(|w| basename(w) == "tee")
                .unwrap_or(false)
            {
                // `cmd | tee [-a] file`: attach the targets to the command before the pipe.
                if let Some(idx) = pending_tee_target.take()
                    && let Some(c) = out.get_mut(idx)
                {
                    let c: &mut ShellCommand = c;
                    c.tee.extend(
                        tee_words
                            .iter()
                            .skip(1)
                            .filter(|w| !w.starts_with('-'))
                            .cloned(),
                    );
                }
            } else {
                let before = out.len();
                run_simple(&cur, state, &mut frames, &mut out, depth, after_or_and);
                if op == "|" && out.len() > before {
                    pending_tee_target = Some(out.len() - 1);
                }
            }
        }
        if op != "|" {
            pending_tee_target = None;
        }
        after_or_and = op == "&&" || op == "||";
        if op == ";;" && frames.last() == Some(&Frame::Loop) {
            // end of a case arm
        }
        cur.clear();
        i += 1;
    }
    out
}

fn basename(p: &str) -> &str {
    p.rsplit('/').next().unwrap_or(p)
}

fn is_assignment(s: &str) -> Option<(&str, &str, bool)> {
    let (name, value) = s.split_once('=')?;
    let (name, append) = match name.strip_suffix('+') {
        Some(n) => (n, true),
        None => (name, false),
    };
    if name.is_empty()
        || !name.chars().all(is_name_char)
        || name
            .chars()
            .next()
            .map(|c| c.is_ascii_digit())
            .unwrap_or(true)
    {
        return None;
    }
    Some((name, value, append))
}

fn run_simple(
    toks: &[&Tok],
    state: &mut State,
    frames: &mut Vec<Frame>,
    out: &mut Vec<ShellCommand>,
    depth: usize,
    _after_or_and: bool,
) {
    let mut words: Vec<&Word> = Vec::new();
    let mut redirs: Vec<(Option<u32>, &str, &Word)> = Vec::new();
    let mut heredoc: Option<&str> = None;
    for t in toks {
        match t {
            Tok::Word(w) => words.push(w),
            Tok::Redir(fd, op, w) => redirs.push((*fd, op.as_str(), w)),
            Tok::Heredoc(b) => heredoc = Some(b.as_str()),
            Tok::Op(_) => {}
        }
    }
    // Control keywords at the start of the command.
    let mut k = 0;
    while let Some(w) = words.get(k) {
        let raw = w.raw();
        let quoted = w.parts.iter().any(|p| matches!(p, Part::Lit(_, true)));
        if quoted {
            break;
        }
        match raw.as_str() {
            "if" => {
                frames.push(Frame::IfThen);
                k += 1;
            }
            "then" | "do" | "!" | "{" => {
                if raw == "{" {
                    frames.push(Frame::Group);
                }
                k += 1;
            }
            "elif" | "else" => {
                if let Some(f) = frames.last_mut() {
                    *f = Frame::IfElse;
                }
                k += 1;
            }
            "while" | "until" | "for" | "select" => {
                frames.push(Frame::Loop);
                // The rest of the line is the condition / list: not a command to record.
                return;
            }
            "case" => {
                frames.push(Frame::Case);
                return;
            }
            "fi" | "done" | "esac" | "}" => {
                frames.pop();
                k += 1;
            }
            _ => break,
        }
    }
    let words = words.get(k..).unwrap_or(&[]);
    if words.is_empty() {
        return;
    }
    // Inside `case` arms the first word is a pattern followed by `)`; the lexer split it off as
    // its own command. Patterns look like `--dp` or `*`; skip single-word commands there.
    let conditional = frames
        .iter()
        .any(|f| !matches!(f, Frame::Group | Frame::IfThen));
    let unstable = frames.iter().any(|f| !matches!(f, Frame::Group));

    // Leading assignments.
    let mut prefix_env = BTreeMap::new();
    let mut idx = 0;
    let mut assigns: Vec<(String, Val, bool)> = Vec::new();
    while let Some(w) = words.get(idx) {
        let lit = word_lit(w);
        let Some((name, _, append)) = is_assignment(&lit) else {
            break;
        };
        let name = name.to_string();
        let val = if let Some(items) = &w.array {
            let mut v = Vec::new();
            for it in items {
                v.extend(expand_word(it, state));
            }
            Val::Array(v)
        } else {
            assignment_value(w, state)
        };
        assigns.push((name, val, append));
        idx += 1;
    }
    let rest = words.get(idx..).unwrap_or(&[]);
    if rest.is_empty() {
        for (name, val, append) in assigns {
            if unstable {
                match (&val, append) {
                    // An array extended in the first branch of an `if`: taken as the default path.
                    (Val::Array(items), true) if !conditional => {
                        if let Some(Val::Array(old)) = state.vars.get_mut(&name) {
                            old.extend(items.iter().cloned());
                        }
                    }
                    // Alternative branches: left out.
                    (Val::Array(_), true) => {}
                    // First set in the first branch of an `if` (nothing else gives it a value):
                    // taken as the default path, like array extensions above.
                    _ if !conditional && !state.vars.contains_key(&name) => {
                        set_var(state, &name, val, append);
                    }
                    _ => {
                        state.vars.insert(name, Val::Opaque);
                    }
                }
                continue;
            }
            set_var(state, &name, val, append);
        }
        return;
    }
    for (name, val, _) in &assigns {
        prefix_env.insert(name.clone(), val_text(name, val));
    }

    // Expand the command words.
    let mut argv: Vec<String> = Vec::new();
    for w in rest {
        argv.extend(expand_word(w, state));
    }
    let Some(cmd) = argv.first().cloned() else {
        return;
    };
    let args: Vec<String> = argv.iter().skip(1).cloned().collect();

    // Makefile-style assignment (`MODEL ?= x`, `PORT := 8000`).
    if let Some(op) = args.first()
        && matches!(op.as_str(), "=" | ":=" | "?=" | "::=")
        && cmd.chars().all(is_name_char)
        && !unstable
    {
        let value = args.get(1..).unwrap_or(&[]).join(" ");
        if !(op == "?=" && state.vars.contains_key(&cmd)) {
            state.vars.insert(cmd.clone(), Val::Text(value));
        }
        return;
    }
    // Builtins that change state.
    match cmd.as_str() {
        "export" | "declare" | "typeset" | "local" | "readonly" => {
            let exporting =
                cmd == "export" || args.iter().any(|a| a.starts_with('-') && a.contains('x'));
            for (j, w) in rest.iter().enumerate().skip(1) {
                let lit = word_lit(w);
                if lit.starts_with('-') {
                    continue;
                }
                if let Some((name, _, append)) = is_assignment(&lit) {
                    let name = name.to_string();
                    let val = if let Some(items) = &w.array {
                        let mut v = Vec::new();
                        for it in items {
                            v.extend(expand_word(it, state));
                        }
                        Val::Array(v)
                    } else {
                        assignment_value(w, state)
                    };
                    let val = if unstable { Val::Opaque } else { val };
                    set_var(state, &name, val.clone(), append);
                    if exporting {
                        let text = val_text(&name, state.vars.get(&name).unwrap_or(&val));
                        if state.exported.len() < MAX_EXPORTS || state.exported.contains_key(&name)
                        {
                            state.exported.insert(name, text);
                        }
                    }
                } else if exporting {
                    let name = args.get(j - 1).cloned().unwrap_or_default();
                    if let Some(v) = state.vars.get(&name).cloned()
                        && !matches!(v, Val::Opaque)
                    {
                        let text = val_text(&name, &v);
                        state.exported.insert(name, text);
                    }
                }
            }
            return;
        }
        "unset" => {
            for a in &args {
                state.vars.remove(a);
                state.exported.remove(a);
            }
            return;
        }
        "set" => {
            // fish: `set [-gx...] NAME value...`; bash `set -x` / `set -euo pipefail` change options.
            let mut export = false;
            let mut j = 0;
            while let Some(a) = args.get(j) {
                if a.starts_with('-') {
                    if a.contains('x') && !a.starts_with("--") {
                        export = true;
                    }
                    j += 1;
                } else {
                    break;
                }
            }
            if let Some(name) = args.get(j)
                && name.chars().all(is_name_char)
                && !name.is_empty()
                && args.len() > j + 1
            {
                let value = args.get(j + 1..).unwrap_or(&[]).join(" ");
                let val = if unstable {
                    Val::Opaque
                } else {
                    Val::Text(value.clone())
                };
                state.vars.insert(name.clone(), val);
                if export {
                    state.exported.insert(name.clone(), value);
                }
            }
            return;
        }
        "cd" | "pushd" => {
            if let Some(d) = args.iter().find(|a| !a.starts_with('-')) {
                state.cwd = Some(
                    match (
                        &state.cwd,
                        d.starts_with('/') || d.starts_with('~') || d.starts_with('$'),
                    ) {
                        (Some(c), false) => format!("{}/{}", c.trim_end_matches('/'), d),
                        _ => d.clone(),
                    },
                );
            }
            return;
        }
        "source" | "." => {
            if let Some(p) = args.first()
                && basename(p) == "activate"
            {
                let venv = p.trim_end_matches("/bin/activate").to_string();
                if !state.context_wrappers.iter().any(|w| w == "venv") {
                    state.context_wrappers.push("venv".into());
                }
                state.venv = Some(venv);
            }
            return;
        }
        "conda" | "mamba" | "micromamba"
            if args.first().map(String::as_str) == Some("activate") =>
        {
            if !state.context_wrappers.iter().any(|w| w == "conda") {
                state.context_wrappers.push("conda".into());
            }
            if let Some(env) = args.get(1) {
                state.venv = Some(env.clone());
            }
            return;
        }
        "eval" if depth < MAX_DEPTH => {
            let inner = args.join(" ");
            let mut sub = commands(&inner, state, depth + 1);
            for c in &mut sub {
                c.context_wrappers.insert(0, "eval".into());
            }
            out.extend(sub);
            return;
        }
        _ => {}
    }

    // Here-document written to a file: remember the content.
    if let Some(body) = heredoc {
        for (_, op, w) in &redirs {
            if matches!(*op, ">" | ">>" | ">|")
                && state.files.len() < MAX_FILES
                && body.len() <= MAX_FILE_BYTES
            {
                let target = expand_simple(w, state);
                std::rc::Rc::make_mut(&mut state.files)
                    .insert(normalize_path(&target), body.to_string());
            }
        }
    }

    let mut redirects = Vec::new();
    for (fd, op, w) in &redirs {
        let target = expand_simple(w, state);
        if matches!(*op, ">" | ">>" | "&>" | "&>>" | ">|")
            && !target.starts_with('&')
            && fd.unwrap_or(1) <= 2
        {
            redirects.push((op.to_string(), target));
        }
    }
    out.push(ShellCommand {
        argv,
        prefix_env,
        exported: state.exported.clone(),
        cwd: state.cwd.clone(),
        context_wrappers: state.context_wrappers.clone(),
        venv: state.venv.clone(),
        redirects,
        tee: Vec::new(),
        files: state.files.clone(),
    });
}

pub(crate) fn normalize_path(p: &str) -> String {
    p.trim_start_matches("./").to_string()
}

fn set_var(state: &mut State, name: &str, val: Val, append: bool) {
    if append {
        match (state.vars.get_mut(name), val) {
            (Some(Val::Array(old)), Val::Array(new)) => {
                old.extend(new);
                return;
            }
            (Some(Val::Text(old)), Val::Text(new)) => {
                old.push_str(&new);
                return;
            }
            (_, v) => {
                state.vars.insert(name.to_string(), v);
                return;
            }
        }
    }
    if let Some(e) = state.exported.get_mut(name) {
        *e = val_text(name, &val);
    }
    state.vars.insert(name.to_string(), val);
}

fn val_text(name: &str, v: &Val) -> String {
    match v {
        Val::Text(t) => t.clone(),
        Val::Array(a) => a.join(" "),
        Val::Opaque => format!("${{{name}}}"),
    }
}

/// The value an assignment stores: the word's text with in-text variables followed, references to
/// unknowable values kept as written. `Opaque` when the value is an operation on something
/// unknowable.
fn assignment_value(w: &Word, state: &State) -> Val {
    // Drop the `NAME=` / `NAME+=` prefix from the first literal part.
    let mut parts = w.parts.clone();
    if let Some(Part::Lit(t, q)) = parts.first_mut()
        && let Some((_, v)) = t.split_once('=')
    {
        *t = v.to_string();
        let _ = q;
    }
    let mut s = String::new();
    for p in &parts {
        match p {
            Part::Lit(t, _) => s.push_str(t),
            Part::Var { name, op, raw, .. } => match resolve_var(name, op.as_deref(), raw, state) {
                Some(t) => s.push_str(&t),
                None => return Val::Opaque,
            },
            Part::Cmd(raw, _) => match static_cmd_subst(raw, state) {
                CmdSubst::Value(v) => s.push_str(&v),
                CmdSubst::Literal => s.push_str(raw),
                CmdSubst::Opaque => return Val::Opaque,
            },
            Part::Arith(raw, _) => s.push_str(&arith(raw, state).unwrap_or_else(|| raw.clone())),
        }
    }
    Val::Text(s)
}

/// `Some(text)` to substitute; `None` when the value is an operation on an unknowable value.
fn resolve_var(name: &str, op: Option<&str>, raw: &str, state: &State) -> Option<String> {
    match state.vars.get(name) {
        Some(Val::Text(v)) => match op {
            None => Some(v.clone()),
            Some(o) if o.starts_with(":-") || o.starts_with('-') || o.starts_with(":=") => {
                if v.is_empty() {
                    Some(o.trim_start_matches(':').get(1..).unwrap_or("").to_string())
                } else {
                    Some(v.clone())
                }
            }
            Some(o) => {
                if v.contains('$') {
                    None
                } else {
                    Some(param_op(v, o).unwrap_or_else(|| raw.to_string()))
                }
            }
        },
        Some(Val::Array(a)) => Some(a.join(" ")),
        Some(Val::Opaque) => Some(raw.to_string()),
        // Environment variables, positional parameters: kept as written.
        None => match op {
            Some(o)
                if !(o.starts_with(":-")
                    || o.starts_with('-')
                    || o.starts_with(":=")
                    || o.starts_with('[')) =>
            {
                None
            }
            _ => Some(raw.to_string()),
        },
    }
}

fn param_op(v: &str, op: &str) -> Option<String> {
    if let Some(pat) = op.strip_prefix("##") {
        if pat == "*/" {
            return Some(v.rsplit('/').next().unwrap_or(v).to_string());
        }
        return v
            .strip_prefix(pat)
            .map(str::to_string)
            .or(Some(v.to_string()));
    }
    if let Some(pat) = op.strip_prefix("%%").or_else(|| op.strip_prefix('%')) {
        if pat == "/*" {
            return Some(
                v.rsplit_once('/')
                    .map(|(a, _)| a.to_string())
                    .unwrap_or_default(),
            );
        }
        return v
            .strip_suffix(pat)
            .map(str::to_string)
            .or(Some(v.to_string()));
    }
    if let Some(pat) = op.strip_prefix('#') {
        if pat == "*/" {
            return Some(
                v.split_once('/')
                    .map(|(_, b)| b.to_string())
                    .unwrap_or_else(|| v.to_string()),
            );
        }
        return v
            .strip_prefix(pat)
            .map(str::to_string)
            .or(Some(v.to_string()));
    }
    if op.starts_with(":+") || op.starts_with('+') {
        return Some(if v.is_empty() {
            String::new()
        } else {
            op.trim_start_matches(':')
                .get(1..)
                .unwrap_or("")
                .to_string()
        });
    }
    None
}

enum CmdSubst {
    Value(String),
    Literal,
    Opaque,
}

fn static_cmd_subst(raw: &str, state: &State) -> CmdSubst {
    let inner = raw
        .strip_prefix("$(")
        .and_then(|s| s.strip_suffix(')'))
        .or_else(|| raw.strip_prefix('`').and_then(|s| s.strip_suffix('`')))
        .unwrap_or("")
        .trim();
    if inner.contains("BASH_SOURCE")
        || inner.contains("$0")
        || inner.contains("pwd")
        || inner.contains("realpath")
        || inner.contains("readlink")
    {
        return CmdSubst::Opaque;
    }
    // Make variables: `$(MODEL)` where MODEL is assigned in the text.
    if inner.chars().all(is_name_char)
        && let Some(Val::Text(v)) = state.vars.get(inner)
    {
        return CmdSubst::Value(v.clone());
    }
    // Nested substitutions are left as written (and bound the recursion).
    if inner.contains("$(") || inner.contains('`') || inner.len() > 4096 {
        return CmdSubst::Literal;
    }
    let toks = lex(inner);
    let words: Vec<&Word> = toks
        .iter()
        .filter_map(|t| match t {
            Tok::Word(w) => Some(w),
            _ => None,
        })
        .collect();
    if words.len() != 2
        || toks
            .iter()
            .any(|t| matches!(t, Tok::Op(o) if o != "\n") || matches!(t, Tok::Redir(..)))
    {
        return CmdSubst::Literal;
    }
    let (Some(cmd), Some(arg)) = (words.first(), words.get(1)) else {
        return CmdSubst::Literal;
    };
    let cmd = cmd.raw();
    let arg = expand_simple(arg, state);
    if arg.contains('$') {
        return CmdSubst::Literal;
    }
    match cmd.as_str() {
        "basename" => CmdSubst::Value(basename(arg.trim_end_matches('/')).to_string()),
        "dirname" => CmdSubst::Value(
            arg.trim_end_matches('/')
                .rsplit_once('/')
                .map(|(a, _)| {
                    if a.is_empty() {
                        "/".to_string()
                    } else {
                        a.to_string()
                    }
                })
                .unwrap_or_else(|| ".".into()),
        ),
        "echo" => CmdSubst::Value(arg),
        _ => CmdSubst::Literal,
    }
}

/// Integer arithmetic on literals and in-text integer variables; `None` otherwise.
fn arith(raw: &str, state: &State) -> Option<String> {
    let inner = raw.strip_prefix("$((")?.strip_suffix("))")?;
    let mut expr = String::new();
    let mut name = String::new();
    let flush = |name: &mut String, expr: &mut String| -> Option<()> {
        if name.is_empty() {
            return Some(());
        }
        let n = std::mem::take(name);
        if n.chars().all(|c| c.is_ascii_digit()) {
            expr.push_str(&n);
            return Some(());
        }
        match state.vars.get(n.trim_start_matches('$')) {
            Some(Val::Text(v)) if v.trim().parse::<i64>().is_ok() => {
                expr.push_str(v.trim());
                Some(())
            }
            _ => None,
        }
    };
    for c in inner.chars() {
        if is_name_char(c) || c == '$' {
            name.push(c);
        } else {
            flush(&mut name, &mut expr)?;
            expr.push(c);
        }
    }
    flush(&mut name, &mut expr)?;
    eval_arith(&expr).map(|v| v.to_string())
}

fn eval_arith(e: &str) -> Option<i64> {
    // Sum of products, left to right, integers only.
    let e: String = e.chars().filter(|c| !c.is_whitespace()).collect();
    let mut total: i64 = 0;
    for (si, term) in split_keep(&e, &['+', '-']).into_iter().enumerate() {
        let (sign, body) = match term.strip_prefix('-') {
            Some(b) => (-1, b),
            None => (1, term.strip_prefix('+').unwrap_or(term)),
        };
        if body.is_empty() && si == 0 {
            continue;
        }
        let mut acc: Option<i64> = None;
        let mut op = '*';
        let mut num = String::new();
        for c in body.chars().chain(std::iter::once('*')) {
            if c.is_ascii_digit() {
                num.push(c);
            } else if matches!(c, '*' | '/' | '%') {
                let n: i64 = num.parse().ok()?;
                num.clear();
                acc = Some(match (acc, op) {
                    (None, _) => n,
                    (Some(a), '*') => a.checked_mul(n)?,
                    (Some(a), '/') => a.checked_div(n)?,
                    (Some(a), _) => a.checked_rem(n)?,
                });
                op = c;
            } else {
                return None;
            }
        }
        total = total.checked_add(acc?.checked_mul(sign)?)?;
    }
    Some(total)
}

fn split_keep<'a>(s: &'a str, seps: &[char]) -> Vec<&'a str> {
    let mut out = Vec::new();
    let mut start = 0;
    for (i, c) in s.char_indices() {
        if i > start && seps.contains(&c) {
            out.push(s.get(start..i).unwrap_or(""));
            start = i;
        }
    }
    out.push(s.get(start..).unwrap_or(""));
    out
}

/// Expands a word without field splitting into a single string.
pub(crate) fn expand_simple(w: &Word, state: &State) -> String {
    expand_word(w, state).join(" ")
}

/// Expands one word into argv items (unquoted expansions of in-text values are split on
/// whitespace; `"${ARR[@]}"` yields one item per element).
pub(crate) fn expand_word(w: &Word, state: &State) -> Vec<String> {
    if let Some(items) = &w.array {
        let mut v = Vec::new();
        for it in items {
            v.extend(expand_word(it, state));
        }
        return v;
    }
    let mut fields: Vec<String> = vec![String::new()];
    let mut any_quoted = false;
    let mut produced = false;
    for p in &w.parts {
        match p {
            Part::Lit(t, q) => {
                any_quoted |= *q;
                if let Some(last) = fields.last_mut() {
                    last.push_str(t);
                }
                produced = true;
            }
            Part::Var {
                name,
                op,
                raw,
                quoted,
            } => {
                // Arrays: `${ARR[@]}` / `${ARR[*]}`.
                if let Some(o) = op
                    && (o == "[@]" || o == "[*]")
                    && let Some(Val::Array(items)) = state.vars.get(name)
                {
                    let mut it = items.iter();
                    if let Some(first) = it.next()
                        && let Some(last) = fields.last_mut()
                    {
                        last.push_str(first);
                    }
                    for x in it {
                        fields.push(x.clone());
                    }
                    produced = !items.is_empty() || produced;
                    any_quoted |= *quoted;
                    continue;
                }
                let text = resolve_var(name, op.as_deref(), raw, state).unwrap_or_else(|| {
                    match state.vars.get(name) {
                        Some(_) => raw.clone(),
                        None => raw.clone(),
                    }
                });
                let from_text = matches!(state.vars.get(name), Some(Val::Text(_) | Val::Array(_)));
                // A value standing for a computed result (`$(...)`, `${X:-d}`) is one word.
                let placeholder =
                    text.starts_with("$(") || text.starts_with("${") || text.starts_with('`');
                if !*quoted && from_text && !placeholder && text.split_whitespace().count() > 1 {
                    let mut parts = text.split_whitespace();
                    if let Some(first) = parts.next()
                        && let Some(last) = fields.last_mut()
                    {
                        last.push_str(first);
                    }
                    for x in parts {
                        fields.push(x.to_string());
                    }
                } else if let Some(last) = fields.last_mut() {
                    last.push_str(&text);
                }
                any_quoted |= *quoted;
                produced |= !text.is_empty() || *quoted;
            }
            Part::Cmd(raw, q) => {
                let t = match static_cmd_subst(raw, state) {
                    CmdSubst::Value(v) => v,
                    _ => raw.clone(),
                };
                if let Some(last) = fields.last_mut() {
                    last.push_str(&t);
                }
                any_quoted |= *q;
                produced = true;
            }
            Part::Arith(raw, q) => {
                let t = arith(raw, state).unwrap_or_else(|| raw.clone());
                if let Some(last) = fields.last_mut() {
                    last.push_str(&t);
                }
                any_quoted |= *q;
                produced = true;
            }
        }
    }
    if !produced && !any_quoted {
        return Vec::new();
    }
    if fields.len() == 1 && fields.first().map(|f| f.is_empty()).unwrap_or(false) && !any_quoted {
        return Vec::new();
    }
    fields
}

/// Splits a compose `command:` string or similar shell-style, without any expansion: quotes are
/// removed, `$...` stays as written.
pub(crate) fn split_words(text: &str) -> Vec<String> {
    let st = State::default();
    let mut out = Vec::new();
    for t in lex(text) {
        if let Tok::Word(w) = t {
            let raw = if let Some(items) = &w.array {
                let _ = &st;
                items.iter().map(Word::raw).collect::<Vec<_>>().join(" ")
            } else {
                w.raw()
            };
            out.push(raw);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(text: &str) -> Vec<ShellCommand> {
        let mut st = State::default();
        commands(text, &mut st, 0)
    }

    #[test]
    fn continuation_and_comment_end_the_command() {
        let c = run("python -m x \\\n--a 1 \\\n# comment\n--b 2\n");
        assert_eq!(
            c.first().map(|c| c.argv.clone()),
            Some(vec![
                "python".into(),
                "-m".into(),
                "x".into(),
                "--a".into(),
                "1".into()
            ])
        );
        assert_eq!(
            c.get(1).map(|c| c.argv.clone()),
            Some(vec!["--b".into(), "2".into()])
        );
    }

    #[test]
    fn variables_follow_assignments_and_keep_outside_values() {
        let c = run(
            "port=8082 # c\nm=$1\nx=\"${HOST:-0.0.0.0}\"\nrun --port $port --m ${m} --h \"${x}\" --e $ENV",
        );
        let argv = c.last().map(|c| c.argv.clone()).unwrap_or_default();
        assert_eq!(
            argv,
            vec![
                "run",
                "--port",
                "8082",
                "--m",
                "$1",
                "--h",
                "${HOST:-0.0.0.0}",
                "--e",
                "$ENV"
            ]
        );
    }

    #[test]
    fn loop_assignments_are_unstable() {
        let c = run(
            "dp=1\nwhile true; do\n case $1 in\n --dp) dp=$2; shift 2;;\n esac\ndone\nrun --dp $dp --n $((dp * 2))",
        );
        let argv = c.last().map(|c| c.argv.clone()).unwrap_or_default();
        assert_eq!(argv, vec!["run", "--dp", "$dp", "--n", "$((dp * 2))"]);
    }

    #[test]
    fn arithmetic_on_fixed_values() {
        let c = run("dp=2\nrun $((dp * 512 + 1))");
        assert_eq!(
            c.last().map(|c| c.argv.clone()),
            Some(vec!["run".into(), "1025".into()])
        );
    }

    #[test]
    fn redirections_tee_and_heredoc() {
        let c = run(
            "cat > ./a.yml <<EOF\nk: v\nEOF\nnohup srv > out.log 2>&1 &\nsrv2 | tee -a t.log\n",
        );
        assert_eq!(
            c.get(1).map(|c| c.redirects.clone()),
            Some(vec![(">".into(), "out.log".into())])
        );
        assert_eq!(c.get(2).map(|c| c.tee.clone()), Some(vec!["t.log".into()]));
        assert_eq!(
            c.get(2).and_then(|c| c.files.get("a.yml").cloned()),
            Some("k: v\n".into())
        );
    }

    #[test]
    fn arrays_and_quote_concatenation() {
        let c = run(
            "N=\"${N:-3}\"\nA=(\n \"m\"\n --x 1\n)\nif (( N > 0 )); then\n A+=(--j '{\"n\":'\"${N}\"'}')\nfi\nexec run \"${A[@]}\"",
        );
        let argv = c.last().map(|c| c.argv.clone()).unwrap_or_default();
        assert_eq!(
            argv,
            vec!["exec", "run", "m", "--x", "1", "--j", "{\"n\":${N:-3}}"]
        );
    }

    #[test]
    fn fish_set_and_exports() {
        let c = run("set M a/b\nexport C=0\nrun \"$M\"");
        let last = c.last().cloned().unwrap_or_default();
        assert_eq!(last.argv, vec!["run", "a/b"]);
        assert_eq!(last.exported.get("C").map(String::as_str), Some("0"));
    }
}
