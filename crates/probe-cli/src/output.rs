//! The only place that writes to the terminal: a [`Printer`] for stdout and stderr, colour
//! decisions, and the sanitizer every remote string passes before it is shown.

use std::io::{IsTerminal, Write};

use crate::args::{ColorChoice, Format};

/// Removes what could drive a terminal: ESC sequences (CSI, OSC, two-byte), every other control
/// character except `\n` and `\t`, and the C1 controls. Remote hosts are hostile input.
pub fn sanitize_terminal(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\u{1b}' => match chars.peek() {
                // CSI: ESC [ params final(0x40..=0x7e)
                Some('[') => {
                    chars.next();
                    for next in chars.by_ref() {
                        if ('\u{40}'..='\u{7e}').contains(&next) {
                            break;
                        }
                    }
                }
                // OSC / DCS / PM / APC / SOS: up to BEL or ESC \
                Some(']' | 'P' | '^' | '_' | 'X') => {
                    chars.next();
                    while let Some(next) = chars.next() {
                        if next == '\u{7}' {
                            break;
                        }
                        if next == '\u{1b}' {
                            if chars.peek() == Some(&'\\') {
                                chars.next();
                            }
                            break;
                        }
                    }
                }
                // Charset designation: ESC ( B and friends, three bytes.
                Some('(' | ')' | '*' | '+' | '-' | '.' | '/' | '#' | '%') => {
                    chars.next();
                    chars.next();
                }
                // Two-byte sequence: ESC + one char.
                Some(_) => {
                    chars.next();
                }
                None => {}
            },
            '\n' | '\t' => out.push(c),
            c if c.is_control() => {}
            // Bidi overrides can make a line read differently than it is.
            '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' => {}
            c => out.push(c),
        }
    }
    out
}

/// [`sanitize_terminal`], and newlines and tabs as spaces: for one-line fields.
pub fn one_line(text: &str) -> String {
    sanitize_terminal(text)
        .chars()
        .map(|c| if c == '\n' || c == '\t' { ' ' } else { c })
        .collect()
}

/// Whether to colour output on stdout.
pub fn resolve_color(choice: Option<ColorChoice>, stream_is_tty: bool) -> bool {
    match choice {
        Some(ColorChoice::Always) => true,
        Some(ColorChoice::Never) => false,
        Some(ColorChoice::Auto) | None => {
            let no_color = std::env::var_os("NO_COLOR").is_some_and(|value| !value.is_empty());
            stream_is_tty && !no_color && std::env::var_os("TERM").is_none_or(|t| t != "dumb")
        }
    }
}

/// Styles for human output; empty strings when colour is off.
#[derive(Debug, Clone, Copy)]
pub struct Styles {
    pub bold: &'static str,
    pub dim: &'static str,
    pub red: &'static str,
    pub yellow: &'static str,
    pub green: &'static str,
    pub cyan: &'static str,
    pub reset: &'static str,
}

impl Styles {
    pub fn new(color: bool) -> Styles {
        if color {
            Styles {
                bold: "\u{1b}[1m",
                dim: "\u{1b}[2m",
                red: "\u{1b}[31m",
                yellow: "\u{1b}[33m",
                green: "\u{1b}[32m",
                cyan: "\u{1b}[36m",
                reset: "\u{1b}[0m",
            }
        } else {
            Styles {
                bold: "",
                dim: "",
                red: "",
                yellow: "",
                green: "",
                cyan: "",
                reset: "",
            }
        }
    }
}

/// Where output goes, and how it looks.
#[derive(Debug, Clone)]
pub struct Printer {
    pub format: Format,
    pub color: bool,
    pub stderr_color: bool,
    pub stdout_tty: bool,
    pub stderr_tty: bool,
}

impl Printer {
    pub fn new(format: Format, color: Option<ColorChoice>) -> Printer {
        let stdout_tty = std::io::stdout().is_terminal();
        let stderr_tty = std::io::stderr().is_terminal();
        Printer {
            format,
            color: resolve_color(color, stdout_tty) && format == Format::Human,
            stderr_color: resolve_color(color, stderr_tty),
            stdout_tty,
            stderr_tty,
        }
    }

    pub fn styles(&self) -> Styles {
        Styles::new(self.color)
    }

    /// Writes rendered text to stdout. A closed pipe (`probe ... | head`) is not an error.
    pub fn out(&self, text: &str) -> std::io::Result<()> {
        let mut stdout = std::io::stdout().lock();
        match stdout
            .write_all(text.as_bytes())
            .and_then(|()| stdout.flush())
        {
            Err(err) if err.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
            other => other,
        }
    }

    /// One line to stderr (`probe: ...`), sanitized.
    pub fn warn(&self, line: &str) {
        let mut stderr = std::io::stderr().lock();
        let _ = writeln!(stderr, "probe: {}", one_line(line));
    }

    /// A hint line under an error.
    pub fn hint(&self, line: &str) {
        let mut stderr = std::io::stderr().lock();
        let _ = writeln!(stderr, "  hint: {}", one_line(line));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strips_escapes_and_controls() {
        assert_eq!(sanitize_terminal("a\u{1b}[31mred\u{1b}[0m b"), "ared b");
        assert_eq!(
            sanitize_terminal("x\u{1b}]0;evil title\u{7}y\u{1b}]8;;http://e\u{1b}\\z"),
            "xyz"
        );
        assert_eq!(
            sanitize_terminal("bell\u{7} cr\r bs\u{8} nul\0"),
            "bell cr bs nul"
        );
        assert_eq!(
            sanitize_terminal("keep\ttab\nnewline"),
            "keep\ttab\nnewline"
        );
        assert_eq!(sanitize_terminal("c1\u{9b}31m"), "c131m");
        assert_eq!(sanitize_terminal("esc at end\u{1b}"), "esc at end");
        assert_eq!(sanitize_terminal("\u{1b}(Bcharset"), "charset");
        assert_eq!(sanitize_terminal("rtl\u{202e}txt"), "rtltxt");
        assert_eq!(sanitize_terminal("ünïcödé ✓"), "ünïcödé ✓");
    }

    #[test]
    fn one_line_flattens() {
        assert_eq!(one_line("a\nb\tc\u{1b}[2J"), "a b c");
    }

    #[test]
    fn color_choice() {
        assert!(resolve_color(Some(ColorChoice::Always), false));
        assert!(!resolve_color(Some(ColorChoice::Never), true));
        assert!(!resolve_color(Some(ColorChoice::Auto), false));
    }
}
