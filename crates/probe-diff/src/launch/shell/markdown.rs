//! Launch texts as people paste them: a runbook or a ticket with the command in a fenced block
//! (```` ```bash ````, ```` ``` ````, `~~~`), in inline backticks, after `$ ` prompts with the
//! program's output between them, or on a line of its own between sentences.
//!
//! [`readings`] gives the texts the shell reader should try, best first; the caller keeps the
//! first that yields a launch. `is_command` tells whether a line starts a command (the launch
//! readers know the launcher words; this file knows only Markdown).

/// A fence line: its character, length and indentation.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Fence {
    ch: char,
    len: usize,
    indent: usize,
}

fn fence(line: &str) -> Option<Fence> {
    let body = line.trim_start();
    let indent = line.len() - body.len();
    let ch = body.chars().next().filter(|c| matches!(c, '`' | '~'))?;
    let len = body.chars().take_while(|c| *c == ch).count();
    (len >= 3).then_some(Fence { ch, len, indent })
}

/// Whether `line` closes a block opened by `open`.
fn closes(line: &str, open: Fence) -> bool {
    fence(line).is_some_and(|f| {
        f.ch == open.ch && f.len >= open.len && line.trim().chars().all(|c| c == open.ch)
    })
}

/// One piece of a Markdown text.
enum Piece<'a> {
    /// The lines of a fenced block, the fence's indentation removed.
    Block(Vec<&'a str>),
    /// A line outside every block.
    Prose(&'a str),
}

fn pieces(text: &str) -> Vec<Piece<'_>> {
    let mut out = Vec::new();
    let mut open: Option<(Fence, Vec<&str>)> = None;
    for line in text.lines() {
        match open.take() {
            Some((f, lines)) if closes(line, f) => out.push(Piece::Block(lines)),
            Some((f, mut lines)) => {
                lines.push(dedent(line, f.indent));
                open = Some((f, lines));
            }
            None => match fence(line) {
                Some(f) => open = Some((f, Vec::new())),
                None => out.push(Piece::Prose(line)),
            },
        }
    }
    // An unclosed block runs to the end of the text.
    if let Some((_, lines)) = open {
        out.push(Piece::Block(lines));
    }
    out
}

fn dedent(line: &str, indent: usize) -> &str {
    let blanks = line.len() - line.trim_start().len();
    line.get(blanks.min(indent)..).unwrap_or(line)
}

/// The length of a shell prompt at the start of `line`: `$ `, `% `, `(venv) $ `,
/// `user@host:~/dir$ `, `root@box:/# `. A bare `# ` is a comment, not a prompt.
fn prompt_len(line: &str) -> Option<usize> {
    let body = line.trim_start();
    let indent = line.len() - body.len();
    let mut rest = body;
    if let Some(inner) = rest.strip_prefix('(')
        && let Some(end) = inner.find(") ")
        && inner
            .get(..end)
            .is_some_and(|n| !n.is_empty() && !n.contains(char::is_whitespace))
    {
        rest = inner.get(end + 2..)?;
    }
    let first = rest.split(' ').next()?;
    let is_prompt = matches!(first, "$" | "%")
        || (first.contains('@')
            && first.contains(':')
            && (first.ends_with('$') || first.ends_with('#')));
    if !is_prompt || rest.len() <= first.len() {
        return None;
    }
    Some(indent + (body.len() - rest.len()) + first.len() + 1)
}

/// A command read line by line, scanned as its lines come (once: a command of many lines costs
/// its length, not its length times its lines): whether the next line continues it.
#[derive(Default)]
struct Command {
    /// An unclosed `"` or `'` (a multi-line string assignment goes on).
    quote: Option<char>,
    /// The character after a backslash is taken as it is.
    escaped: bool,
    /// The last character that is not white space (a trailing `\` goes on).
    last: Option<char>,
}

impl Command {
    /// The command that starts with `line`; `None` for an empty line (nothing goes on).
    fn start(line: &str) -> Option<Command> {
        if line.is_empty() {
            return None;
        }
        let mut c = Command::default();
        c.feed(line);
        Some(c)
    }

    /// The next line of the command.
    fn push(&mut self, line: &str) {
        self.feed("\n");
        self.feed(line);
    }

    fn feed(&mut self, text: &str) {
        for c in text.chars() {
            if !c.is_whitespace() {
                self.last = Some(c);
            }
            if std::mem::take(&mut self.escaped) {
                continue;
            }
            match (self.quote, c) {
                (Some('"') | None, '\\') => self.escaped = true,
                (Some(q), c) if c == q => self.quote = None,
                (None, '"' | '\'') => self.quote = Some(c),
                _ => {}
            }
        }
    }

    /// Whether the next line continues this command.
    fn goes_on(&self) -> bool {
        self.last == Some('\\') || self.quote.is_some()
    }
}

/// A block's commands. A transcript (lines after `$ ` prompts, the output between them) keeps
/// the prompted lines and their continuations, prompts removed (`> ` continuation prompts too).
fn block_code(lines: &[&str]) -> String {
    if !lines.iter().any(|l| prompt_len(l).is_some()) {
        return lines.join("\n");
    }
    let mut out: Vec<&str> = Vec::new();
    let mut cmd: Option<Command> = None;
    for line in lines {
        if let Some(n) = prompt_len(line) {
            let l = line.get(n..).unwrap_or("");
            out.push(l);
            cmd = Command::start(l);
        } else if let Some(c) = cmd.as_mut().filter(|c| c.goes_on()) {
            let l = line.trim_start();
            let l = l.strip_prefix("> ").unwrap_or(l);
            out.push(l);
            c.push(l);
        } else {
            cmd = None;
        }
    }
    out.join("\n")
}

/// The inline code spans of a prose paragraph (`` `...` `` and ``` ``...`` ```), which may run
/// over its lines.
fn inline_spans(line: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = line;
    while let Some(start) = rest.find('`') {
        let after = rest.get(start..).unwrap_or("");
        let ticks = after.chars().take_while(|c| *c == '`').count();
        let body = after.get(ticks..).unwrap_or("");
        let closing = "`".repeat(ticks);
        let Some(end) = body.find(closing.as_str()) else {
            break;
        };
        out.push(body.get(..end).unwrap_or("").trim());
        rest = body.get(end + ticks..).unwrap_or("");
    }
    out
}

/// Lines that start a command (by `is_command`) and the lines that continue them; prose and
/// program output left out.
fn command_lines(text: &str, is_command: &dyn Fn(&str) -> bool) -> String {
    let mut out: Vec<&str> = Vec::new();
    let mut cmd: Option<Command> = None;
    for line in text.lines() {
        if let Some(c) = cmd.as_mut().filter(|c| c.goes_on()) {
            c.push(line);
            out.push(line);
        } else if is_command(line.trim()) {
            cmd = Command::start(line);
            out.push(line);
        } else {
            cmd = None;
        }
    }
    out.join("\n")
}

/// A block of a root shell's transcript (`# cmd` lines, no uncommented command): the commands
/// after the `# ` prompts. Elsewhere a `# ` line is a comment.
fn root_transcript(lines: &[&str], is_command: &dyn Fn(&str) -> bool) -> Option<String> {
    let plain = lines.iter().any(|l| {
        let l = l.trim();
        !l.starts_with('#') && is_command(l)
    });
    let prompted: Vec<&str> = lines
        .iter()
        .filter_map(|l| l.trim_start().strip_prefix("# "))
        .filter(|rest| is_command(rest.trim()))
        .collect();
    (!plain && !prompted.is_empty()).then(|| prompted.join("\n"))
}

/// The texts to try for launches, best first, none empty, none twice.
pub(crate) fn readings(text: &str, is_command: &dyn Fn(&str) -> bool) -> Vec<String> {
    let parts = pieces(text);
    let fenced = parts.iter().any(|p| matches!(p, Piece::Block(_)));
    let mut code = Vec::new();
    let mut spans = Vec::new();
    let mut root = Vec::new();
    // A paragraph's lines: a code span may run over several (a multi-line command pasted
    // between single backticks).
    let mut paragraph: Vec<&str> = Vec::new();
    let mut flush = |paragraph: &mut Vec<&str>, code: &mut Vec<String>| {
        let text = paragraph.join("\n");
        paragraph.clear();
        for s in inline_spans(&text).into_iter().filter(|s| is_command(s)) {
            code.push(s.to_string());
            spans.push(s.to_string());
        }
    };
    for p in &parts {
        match p {
            Piece::Block(lines) => {
                flush(&mut paragraph, &mut code);
                code.push(block_code(lines));
                root.extend(root_transcript(lines, is_command));
            }
            Piece::Prose(line) if line.trim().is_empty() => flush(&mut paragraph, &mut code),
            Piece::Prose(line) => paragraph.push(line),
        }
    }
    flush(&mut paragraph, &mut code);
    let whole = if fenced {
        parts
            .iter()
            .flat_map(|p| match p {
                Piece::Block(lines) => lines.clone(),
                Piece::Prose(line) => vec![*line],
            })
            .collect::<Vec<_>>()
            .join("\n")
    } else {
        text.to_string()
    };
    let mut out: Vec<String> = Vec::new();
    if fenced {
        out.push(code.join("\n"));
    }
    out.push(whole.clone());
    out.push(spans.join("\n"));
    out.push(command_lines(&whole, is_command));
    out.push(root.join("\n"));
    let mut seen: Vec<String> = Vec::new();
    for r in out {
        if !r.trim().is_empty() && !seen.contains(&r) {
            seen.push(r);
        }
    }
    seen
}
