//! Tokens of a shell text by bash's quoting rules: words made of literal, variable, command and
//! arithmetic parts; operators; redirections; here-document bodies.

use super::MAX_TOKENS;

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

    pub fn is_empty(&self) -> bool {
        self.parts.is_empty() && self.array.is_none()
    }
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Tok {
    Word(Word),
    Op(Op),
    /// Redirection: fd, operator, target.
    Redir(Option<u32>, RedirOp, Word),
    /// Here-document body attached to the command (`cat > f <<EOF`).
    Heredoc(Heredoc),
}

/// A here-document's body and whether the shell expands it (the delimiter was not quoted).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Heredoc {
    pub body: String,
    pub expands: bool,
}

/// A control operator: what ends a simple command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Op {
    /// `;`
    Semi,
    /// `&`
    Background,
    /// `&&`
    And,
    /// `||`
    Or,
    /// `|`
    Pipe,
    /// `|&`
    PipeAll,
    /// `;;`
    CaseEnd,
    /// `(`
    Open,
    /// `)`
    Close,
    /// A newline.
    Newline,
}

impl Op {
    /// The operator of two characters starting with `c` and `next`, or of `c` alone.
    fn read(c: char, next: Option<char>) -> Option<(Op, usize)> {
        Some(match (c, next) {
            ('&', Some('&')) => (Op::And, 2),
            ('|', Some('|')) => (Op::Or, 2),
            (';', Some(';')) => (Op::CaseEnd, 2),
            ('|', Some('&')) => (Op::PipeAll, 2),
            (';', _) => (Op::Semi, 1),
            ('&', _) => (Op::Background, 1),
            ('|', _) => (Op::Pipe, 1),
            ('(', _) => (Op::Open, 1),
            (')', _) => (Op::Close, 1),
            _ => return None,
        })
    }
}

/// A redirection operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RedirOp {
    /// `<`
    In,
    /// `>` (and `>|`)
    Out,
    /// `>>`
    Append,
    /// `<>`
    ReadWrite,
    /// `<<` and `<<-`
    Heredoc,
    /// `<<<`
    HereString,
    /// `&>`
    OutErr,
    /// `&>>`
    OutErrAppend,
}

impl RedirOp {
    pub fn as_str(self) -> &'static str {
        match self {
            RedirOp::In => "<",
            RedirOp::Out => ">",
            RedirOp::Append => ">>",
            RedirOp::ReadWrite => "<>",
            RedirOp::Heredoc => "<<",
            RedirOp::HereString => "<<<",
            RedirOp::OutErr => "&>",
            RedirOp::OutErrAppend => "&>>",
        }
    }

    /// Writes the command's output to a file (the target may be a log).
    pub fn writes_output(self) -> bool {
        matches!(
            self,
            RedirOp::Out | RedirOp::Append | RedirOp::OutErr | RedirOp::OutErrAppend
        )
    }
}

struct Lexer<'a> {
    chars: Vec<char>,
    pos: usize,
    toks: Vec<Tok>,
    /// Delimiter, strip leading tabs, expands.
    pending_heredocs: Vec<(String, bool, bool)>,
    /// Reading a here-document body: `"` is an ordinary character.
    in_heredoc: bool,
    _src: &'a str,
}

/// Splits `text` into shell tokens. Never fails: unbalanced quotes run to the end of the text.
pub(crate) fn lex(text: &str) -> Vec<Tok> {
    let mut lx = Lexer {
        chars: text.chars().collect(),
        pos: 0,
        toks: Vec::new(),
        pending_heredocs: Vec::new(),
        in_heredoc: false,
        _src: text,
    };
    lx.run();
    lx.toks
}

/// An expanding here-document's body as one word: `$VAR`, `${...}`, `$(...)` and backticks are
/// parts, everything else (quotes included) literal text.
pub(crate) fn heredoc_word(body: &str) -> Word {
    let mut lx = Lexer {
        chars: body.chars().collect(),
        pos: 0,
        toks: Vec::new(),
        pending_heredocs: Vec::new(),
        in_heredoc: true,
        _src: body,
    };
    let mut parts = Vec::new();
    lx.double_quoted(&mut parts);
    Word { parts, array: None }
}

use probe_model::text::REDACTED_PREFIX as MARKER_PREFIX;

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

pub(crate) fn is_name_char(c: char) -> bool {
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
                    self.toks.push(Tok::Op(Op::Newline));
                }
                '&' if self.peek(1) == Some('>') => self.out_err_redirection(),
                '(' if self.peek(1) == Some('(') && self.command_position() => {
                    // `(( N > 0 ))`: an arithmetic command, one word (its `>` is no redirection).
                    let start = self.pos;
                    self.pos += 2;
                    self.balanced('(', ')');
                    if self.peek(0) == Some(')') {
                        self.pos += 1;
                    }
                    let raw = self.slice(start, self.pos);
                    self.toks.push(Tok::Word(Word {
                        parts: vec![Part::Arith(raw, false)],
                        array: None,
                    }));
                }
                ';' | '&' | '|' | '(' | ')' => {
                    let (op, len) = Op::read(c, self.peek(1)).unwrap_or((Op::Semi, 1));
                    self.pos += len;
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

    /// Whether a command starts here: at the start, after an operator, or after a keyword
    /// that a command follows.
    fn command_position(&self) -> bool {
        match self.toks.last() {
            None => true,
            Some(Tok::Op(op)) => *op != Op::Close,
            Some(Tok::Word(w)) => matches!(
                w.parts.as_slice(),
                [Part::Lit(t, false)] if matches!(t.as_str(), "if" | "elif" | "while" | "until" | "for" | "then" | "do" | "else" | "!" | "{")
            ),
            Some(_) => false,
        }
    }

    fn skip_blanks(&mut self) {
        while matches!(self.peek(0), Some(' ' | '\t')) {
            self.pos += 1;
        }
    }

    /// `&> file`, `&>> file`.
    fn out_err_redirection(&mut self) {
        self.pos += 2;
        let op = if self.peek(0) == Some('>') {
            self.pos += 1;
            RedirOp::OutErrAppend
        } else {
            RedirOp::OutErr
        };
        self.skip_blanks();
        let w = self.word();
        self.toks.push(Tok::Redir(None, op, w));
    }

    /// The redirection operator at the cursor (`<`, `>`, `>>`, `>|`, `<>`, `<<`, `<<-`, `<<<`) and
    /// whether a here-document strips leading tabs.
    fn redirection_op(&mut self) -> (RedirOp, bool) {
        let (op, len) = match (self.peek(0), self.peek(1), self.peek(2)) {
            (Some('<'), Some('<'), Some('<')) => (RedirOp::HereString, 3),
            (Some('<'), Some('<'), Some('-')) => return self.advance_by(3, RedirOp::Heredoc, true),
            (Some('<'), Some('<'), _) => (RedirOp::Heredoc, 2),
            (Some('<'), Some('>'), _) => (RedirOp::ReadWrite, 2),
            (Some('<'), _, _) => (RedirOp::In, 1),
            (Some('>'), Some('>'), _) => (RedirOp::Append, 2),
            (Some('>'), Some('|'), _) => (RedirOp::Out, 2),
            _ => (RedirOp::Out, 1),
        };
        self.advance_by(len, op, false)
    }

    fn advance_by(&mut self, len: usize, op: RedirOp, strip: bool) -> (RedirOp, bool) {
        self.pos += len;
        (op, strip)
    }

    fn redirection(&mut self, fd: Option<u32>) {
        let (op, strip) = self.redirection_op();
        if op == RedirOp::Heredoc {
            self.skip_blanks();
            let w = self.word();
            let expands = !w.parts.iter().any(|p| matches!(p, Part::Lit(_, true)));
            self.pending_heredocs.push((w.raw(), strip, expands));
            self.toks.push(Tok::Redir(fd, op, w));
            return;
        }
        if self.peek(0) == Some('&') && op != RedirOp::HereString {
            self.pos += 1;
            let target = self.dup_target();
            self.toks.push(Tok::Redir(fd, op, target));
            return;
        }
        self.skip_blanks();
        let w = self.word();
        self.toks.push(Tok::Redir(fd, op, w));
    }

    /// The `&1` / `&-` of `2>&1`, `>&2`, `<&-`.
    fn dup_target(&mut self) -> Word {
        let mut t = String::from("&");
        while let Some(c) = self.peek(0) {
            if c.is_ascii_digit() || c == '-' {
                t.push(c);
                self.pos += 1;
            } else {
                break;
            }
        }
        Word {
            parts: vec![Part::Lit(t, false)],
            array: None,
        }
    }

    fn read_heredocs(&mut self) {
        let pending = std::mem::take(&mut self.pending_heredocs);
        for (delim, strip, expands) in pending {
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
            self.toks.push(Tok::Heredoc(Heredoc { body, expands }));
        }
    }

    /// A redaction marker of `len` chars at the cursor, as one quoted literal.
    fn marker(&mut self, len: usize) -> Part {
        let marker: String = self
            .chars
            .get(self.pos..self.pos + len)
            .unwrap_or(&[])
            .iter()
            .collect();
        self.pos += len;
        Part::Lit(marker, true)
    }

    /// `'...'` at the cursor: literal up to the closing quote (or the end of the text).
    fn single_quoted(&mut self) -> Part {
        self.pos += 1;
        let mut s = String::new();
        while let Some(c) = self.peek(0) {
            self.pos += 1;
            if c == '\'' {
                break;
            }
            s.push(c);
        }
        Part::Lit(s, true)
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
                w.parts.push(self.marker(len));
                continue;
            }
            match c {
                ' ' | '\t' | '\n' | '\r' | ';' | '&' | '|' | '<' | '>' | ')' => break,
                '(' => {
                    // `NAME=(` / `NAME+=(`: an array literal.
                    if ends_with_equals(&w.parts, &lit) && w.array.is_none() {
                        flush(&mut lit, &mut w.parts, false);
                        self.pos += 1;
                        w.array = Some(self.array_items());
                        continue;
                    }
                    // `name()`: a function header, the `(` is an operator. (The word so far
                    // is built only here, once per word: a word of many `(` stays linear.)
                    let header = self.peek(1) == Some(')') && {
                        let so_far = format!("{}{}", word_lit(&w), lit);
                        !so_far.is_empty() && so_far.chars().all(|c| is_name_char(c) || c == '-')
                    };
                    if (lit.is_empty() && w.parts.is_empty()) || header {
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
                    w.parts.push(self.single_quoted());
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
                '"' if !self.in_heredoc => {
                    self.pos += 1;
                    break;
                }
                '\\' => match self.peek(1) {
                    Some('\n') => self.pos += 2,
                    Some('"') if self.in_heredoc => {
                        s.push_str("\\\"");
                        self.pos += 2;
                    }
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
                // A special parameter is one character (`${@}`, `${#}`); a name runs on.
                let name: String = match inner.chars().next() {
                    Some(c @ ('@' | '*' | '?' | '#')) => c.to_string(),
                    _ => inner.chars().take_while(|c| is_name_char(*c)).collect(),
                };
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

/// Whether the word read so far (`parts`, then `lit`) ends with `=`, as [`word_lit`] would
/// show it, without building it.
fn ends_with_equals(parts: &[Part], lit: &str) -> bool {
    if !lit.is_empty() {
        return lit.ends_with('=');
    }
    parts
        .iter()
        .rev()
        .find(|p| !matches!(p, Part::Lit(t, _) if t.is_empty()))
        .is_some_and(|p| matches!(p, Part::Lit(t, _) if t.ends_with('=')))
}

pub(crate) fn word_lit(w: &Word) -> String {
    w.parts
        .iter()
        .map(|p| match p {
            Part::Lit(t, _) => t.clone(),
            _ => "\u{1}".into(),
        })
        .collect()
}
