//! The only place that writes to the terminal: a [`Printer`] for stdout and stderr, colour
//! decisions, and the sanitizer every string passes before it is shown.

use std::io::{IsTerminal, Write};

use crate::args::{ColorChoice, Format};

/// The one sanitiser (see [`probe_model::text`]): every string that reaches the terminal or a
/// document passes it, whatever its source. [`one_line`] also folds newlines and tabs.
pub use probe_model::text::{sanitize_line as one_line, sanitize_terminal};

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
    fn color_choice() {
        assert!(resolve_color(Some(ColorChoice::Always), false));
        assert!(!resolve_color(Some(ColorChoice::Never), true));
        assert!(!resolve_color(Some(ColorChoice::Auto), false));
    }
}
