//! Markdown that fits a ticket: headings, bullet lists, tables and fenced code.

use std::fmt::Write;

use super::doc::{Block, Doc, Tone};
use crate::output::{one_line, sanitize_terminal};

/// Renders a document as Markdown.
pub fn render(doc: &Doc) -> String {
    let mut out = String::new();
    for block in &doc.blocks {
        match block {
            Block::Heading(level, text) => {
                let hashes = "#".repeat(usize::from((*level).clamp(1, 4)));
                let _ = writeln!(out, "{hashes} {}\n", inline(text));
            }
            Block::Line(tone, text) => {
                for line in sanitize_terminal(text).lines() {
                    let _ = writeln!(out, "{}", emphasise(*tone, &inline(line.trim())));
                }
                out.push('\n');
            }
            Block::Fields(fields) => {
                for (key, value) in fields {
                    let _ = writeln!(out, "- **{}**: {}", inline(key), inline(value));
                }
                out.push('\n');
            }
            Block::Table { header, rows } => {
                let _ = writeln!(
                    out,
                    "| {} |",
                    header
                        .iter()
                        .map(|h| cell(h))
                        .collect::<Vec<_>>()
                        .join(" | ")
                );
                let _ = writeln!(out, "|{}", "---|".repeat(header.len()));
                for (tone, row) in rows {
                    let cells: Vec<String> = row
                        .iter()
                        .enumerate()
                        .map(|(index, text)| {
                            if index == 0 {
                                emphasise(*tone, &cell(text))
                            } else {
                                cell(text)
                            }
                        })
                        .collect();
                    let _ = writeln!(out, "| {} |", cells.join(" | "));
                }
                out.push('\n');
            }
            Block::Items(items) => {
                for (indent, tone, text) in items {
                    let pad = "  ".repeat(usize::from(*indent));
                    let _ = writeln!(out, "{pad}- {}", emphasise(*tone, &inline(text)));
                }
                out.push('\n');
            }
            Block::Code(text) => {
                let body = sanitize_terminal(text);
                let fence = if body.contains("```") { "~~~~" } else { "```" };
                let _ = writeln!(out, "{fence}\n{}\n{fence}\n", body.trim_end_matches('\n'));
            }
        }
    }
    while out.ends_with("\n\n") {
        out.pop();
    }
    out
}

fn emphasise(tone: Tone, text: &str) -> String {
    match tone {
        Tone::Bad | Tone::Warn if !text.is_empty() => format!("**{text}**"),
        Tone::Dim if !text.is_empty() => format!("_{text}_"),
        _ => text.to_string(),
    }
}

/// One line of inline text: control characters gone, Markdown and HTML metacharacters escaped so
/// remote text cannot inject links, images or markup into a ticket.
fn inline(text: &str) -> String {
    let mut out = String::new();
    for c in one_line(text).chars() {
        match c {
            '\\' | '`' | '*' | '_' | '[' | ']' | '<' | '>' | '|' | '#' | '!' => {
                out.push('\\');
                out.push(c);
            }
            c => out.push(c),
        }
    }
    out
}

fn cell(text: &str) -> String {
    inline(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remote_text_cannot_inject_markup() {
        let mut doc = Doc::default();
        doc.line(Tone::Plain, "![x](http://evil) <script> | \u{1b}[31m");
        let text = render(&doc);
        assert_eq!(text, "\\!\\[x\\](http://evil) \\<script\\> \\|\n");
    }
}
