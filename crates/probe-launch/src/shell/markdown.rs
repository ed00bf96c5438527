//! Launch texts as people paste them: a runbook or a ticket with the command in a fenced block
//! (```` ```bash ````, ```` ``` ````, `~~~`), in inline backticks, after `$ ` prompts with the
//! program's output between them, or on a line of its own between sentences. A launcher only
//! named in a sentence ("we start it with `vllm serve` and then ...") is no command.
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
/// over its lines: each span's byte range in `text` (its backticks included) and its code.
fn inline_spans(text: &str) -> Vec<(usize, usize, &str)> {
    let mut out = Vec::new();
    let mut at = 0;
    while let Some(start) = text.get(at..).and_then(|r| r.find('`')).map(|s| at + s) {
        let after = text.get(start..).unwrap_or("");
        let ticks = after.chars().take_while(|c| *c == '`').count();
        let body = after.get(ticks..).unwrap_or("");
        let closing = "`".repeat(ticks);
        let Some(end) = body.find(closing.as_str()) else {
            break;
        };
        let stop = start + ticks + end + ticks;
        out.push((start, stop, body.get(..end).unwrap_or("").trim()));
        at = stop;
    }
    out
}

/// Whether the span at `start..stop` of `text` sits inside running prose: its line has words
/// outside it (`I start it with `vllm serve` and then ...`), where a span on a line of its own
/// is a command pasted between sentences.
fn in_running_prose(text: &str, start: usize, stop: usize) -> bool {
    let before = text.get(..start).unwrap_or("");
    let before = before.rsplit('\n').next().unwrap_or("");
    let after = text.get(stop..).unwrap_or("");
    let after = after.split('\n').next().unwrap_or("");
    before
        .chars()
        .chain(after.chars())
        .any(char::is_alphanumeric)
}

/// A paragraph's launch spans and its text with the mere mentions taken out. A span in running
/// prose that `is_mention` holds (a launcher named without a model or an option: "we start it
/// with `vllm serve` and then ...") only names the program; it is blanked, so that no reading
/// (the spans, the whole text read as shell, where backticks substitute) runs it.
fn paragraph_spans(
    text: &str,
    is_command: &dyn Fn(&str) -> bool,
    is_mention: &dyn Fn(&str) -> bool,
) -> (Vec<String>, String) {
    let mut code = Vec::new();
    let mut clean = String::with_capacity(text.len());
    let mut kept = 0;
    for (start, stop, span) in inline_spans(text) {
        if !is_command(span) {
            continue;
        }
        if in_running_prose(text, start, stop) && is_mention(span) {
            clean.push_str(text.get(kept..start).unwrap_or(""));
            // Its line breaks stay: the paragraph keeps its lines.
            let gap = text.get(start..stop).unwrap_or("");
            clean.extend(gap.chars().filter(|c| *c == '\n'));
            kept = stop;
        } else {
            code.push(span.to_string());
        }
    }
    clean.push_str(text.get(kept..).unwrap_or(""));
    (code, clean)
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

/// The texts to try for launches, best first, none empty, none twice. `is_mention` tells a
/// launcher merely named in a sentence (see [`paragraph_spans`]).
pub(crate) fn readings(
    text: &str,
    is_command: &dyn Fn(&str) -> bool,
    is_mention: &dyn Fn(&str) -> bool,
) -> Vec<String> {
    let parts = pieces(text);
    let fenced = parts.iter().any(|p| matches!(p, Piece::Block(_)));
    let g = Gathered::of(&parts, is_command, is_mention);
    let whole = if fenced || g.blanked {
        unfenced(&parts, &g.prose)
    } else {
        text.to_string()
    };
    let mut out: Vec<String> = Vec::new();
    if fenced {
        out.push(g.code.join("\n"));
    }
    out.push(whole.clone());
    out.push(g.spans.join("\n"));
    out.push(command_lines(&whole, is_command));
    out.push(g.root.join("\n"));
    distinct(out)
}

/// What a text's pieces hold for its readings.
#[derive(Default)]
struct Gathered {
    /// Each block's code and each code span, in the text's order.
    code: Vec<String>,
    /// The code spans alone.
    spans: Vec<String>,
    /// The commands of the blocks that are a root shell's transcript.
    root: Vec<String>,
    /// The text's lines outside its blocks, mentions blanked, in order; `None` for a block.
    prose: Vec<Option<String>>,
    /// Whether a mention was blanked.
    blanked: bool,
}

impl Gathered {
    fn of(
        parts: &[Piece<'_>],
        is_command: &dyn Fn(&str) -> bool,
        is_mention: &dyn Fn(&str) -> bool,
    ) -> Gathered {
        let mut g = Gathered::default();
        // A paragraph's lines: a code span may run over several (a multi-line command pasted
        // between single backticks).
        let mut paragraph: Vec<&str> = Vec::new();
        for p in parts {
            match p {
                Piece::Block(lines) => {
                    g.paragraph(&mut paragraph, is_command, is_mention);
                    g.prose.push(None);
                    g.code.push(block_code(lines));
                    g.root.extend(root_transcript(lines, is_command));
                }
                Piece::Prose(line) if line.trim().is_empty() => {
                    g.paragraph(&mut paragraph, is_command, is_mention);
                    g.prose.push(Some((*line).to_string()));
                }
                Piece::Prose(line) => paragraph.push(line),
            }
        }
        g.paragraph(&mut paragraph, is_command, is_mention);
        g
    }

    /// A finished paragraph's code spans and its lines, mentions blanked; `paragraph` is
    /// emptied for the next.
    fn paragraph(
        &mut self,
        paragraph: &mut Vec<&str>,
        is_command: &dyn Fn(&str) -> bool,
        is_mention: &dyn Fn(&str) -> bool,
    ) {
        if paragraph.is_empty() {
            return;
        }
        let text = paragraph.join("\n");
        paragraph.clear();
        let (found, clean) = paragraph_spans(&text, is_command, is_mention);
        self.blanked |= clean != text;
        for s in found {
            self.code.push(s.clone());
            self.spans.push(s);
        }
        self.prose
            .extend(clean.split('\n').map(|l| Some(l.to_string())));
    }
}

/// The whole text with its mentions blanked and its blocks' fences removed: `prose`'s lines,
/// each `None` replaced by the next block's lines.
fn unfenced(parts: &[Piece<'_>], prose: &[Option<String>]) -> String {
    let mut blocks = parts.iter().filter_map(|p| match p {
        Piece::Block(lines) => Some(lines.clone()),
        Piece::Prose(_) => None,
    });
    prose
        .iter()
        .flat_map(|p| match p {
            Some(line) => vec![line.clone()],
            None => blocks
                .next()
                .unwrap_or_default()
                .iter()
                .map(|l| l.to_string())
                .collect(),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// `readings` in order, the blank ones and repeats left out.
fn distinct(readings: Vec<String>) -> Vec<String> {
    let mut seen: Vec<String> = Vec::new();
    for r in readings {
        if !r.trim().is_empty() && !seen.contains(&r) {
            seen.push(r);
        }
    }
    seen
}
