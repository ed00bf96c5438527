//! Text for a terminal: headings, aligned fields and tables, optional colour.

use std::fmt::Write;

use super::doc::{Block, Doc, Tone};
use crate::output::{Styles, one_line, sanitize_terminal};

/// Renders a document for a terminal.
pub fn render(doc: &Doc, styles: Styles) -> String {
    let mut out = String::new();
    let mut first = true;
    for block in &doc.blocks {
        match block {
            Block::Heading(level, text) => {
                if !first {
                    out.push('\n');
                }
                let text = one_line(text);
                if *level <= 1 {
                    let _ = writeln!(out, "{}{text}{}", styles.bold, styles.reset);
                    let _ = writeln!(out, "{}", "=".repeat(text.chars().count().min(100)));
                } else {
                    let _ = writeln!(out, "{}{text}{}", styles.bold, styles.reset);
                }
            }
            Block::Line(tone, text) => {
                let (start, end) = tone_style(*tone, styles);
                for line in sanitize_terminal(text).lines() {
                    let _ = writeln!(out, "{start}{line}{end}");
                }
            }
            Block::Fields(fields) => {
                let width = fields
                    .iter()
                    .map(|(key, _)| key.chars().count())
                    .max()
                    .unwrap_or(0);
                for (key, value) in fields {
                    let _ = writeln!(
                        out,
                        "  {}{:width$}{}  {}",
                        styles.dim,
                        one_line(key),
                        styles.reset,
                        one_line(value)
                    );
                }
            }
            Block::Table { header, rows } => render_table(&mut out, header, rows, styles),
            Block::Items(items) => {
                for (indent, tone, text) in items {
                    let (start, end) = tone_style(*tone, styles);
                    let prefix = if *indent == 0 { "  - " } else { "      " };
                    let _ = writeln!(out, "{prefix}{start}{}{end}", one_line(text));
                }
            }
            Block::Code(text) => {
                for line in sanitize_terminal(text).lines() {
                    let (start, end) = if line.starts_with('+') && !line.starts_with("+++") {
                        (styles.green, styles.reset)
                    } else if line.starts_with('-') && !line.starts_with("---") {
                        (styles.red, styles.reset)
                    } else {
                        ("", "")
                    };
                    let _ = writeln!(out, "    {start}{line}{end}");
                }
            }
        }
        first = false;
    }
    out
}

fn tone_style(tone: Tone, styles: Styles) -> (&'static str, &'static str) {
    match tone {
        Tone::Plain => ("", ""),
        Tone::Good => (styles.green, styles.reset),
        Tone::Warn => (styles.yellow, styles.reset),
        Tone::Bad => (styles.red, styles.reset),
        Tone::Dim => (styles.dim, styles.reset),
    }
}

fn render_table(out: &mut String, header: &[String], rows: &[(Tone, Vec<String>)], styles: Styles) {
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|(_, row)| row.iter().map(|cell| one_line(cell)).collect())
        .collect();
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for row in &cells {
        for (index, cell) in row.iter().enumerate() {
            if let Some(width) = widths.get_mut(index) {
                *width = (*width).max(cell.chars().count().min(80));
            }
        }
    }
    let last = widths.len().saturating_sub(1);
    let mut line = String::from("  ");
    for (index, title) in header.iter().enumerate() {
        let width = widths.get(index).copied().unwrap_or(0);
        if index == last {
            line.push_str(title);
        } else {
            let _ = write!(line, "{title:width$}  ");
        }
    }
    let _ = writeln!(out, "{}{}{}", styles.bold, line.trim_end(), styles.reset);
    for ((tone, _), row) in rows.iter().zip(&cells) {
        let (start, end) = tone_style(*tone, styles);
        let mut line = String::from("  ");
        for (index, cell) in row.iter().enumerate() {
            let width = widths.get(index).copied().unwrap_or(0);
            if index == last {
                line.push_str(cell);
            } else {
                let _ = write!(line, "{cell:width$}  ");
            }
        }
        let _ = writeln!(out, "{start}{}{end}", line.trim_end());
    }
}
