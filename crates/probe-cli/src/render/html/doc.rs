//! A [`Doc`] (the document the text and Markdown reports are built as) in HTML: the same
//! sections, grouped the same way, every string escaped.

use super::escape;
use crate::render::doc::{Block, Doc, Tone};

/// The document's blocks as HTML; headings are shifted by `heading_offset` levels.
pub fn render(doc: &Doc, heading_offset: u8) -> String {
    let mut out = String::new();
    for block in &doc.blocks {
        match block {
            Block::Heading(level, text) => {
                let level = (level + heading_offset).clamp(1, 6);
                out.push_str(&format!("<h{level}>{}</h{level}>\n", escape::text(text)));
            }
            Block::Line(tone, text) => {
                out.push_str(&format!(
                    "<p{}>{}</p>\n",
                    class(*tone),
                    escape::text(text.trim())
                ));
            }
            Block::Fields(fields) => {
                out.push_str("<dl class=\"fields\">");
                for (key, value) in fields {
                    out.push_str(&format!(
                        "<dt>{}</dt><dd>{}</dd>",
                        escape::text(key),
                        escape::text(value)
                    ));
                }
                out.push_str("</dl>\n");
            }
            Block::Table { header, rows } => table(&mut out, header, rows),
            Block::Items(items) => {
                out.push_str("<ul class=\"items\">");
                for (indent, tone, text) in items {
                    let mut classes = vec![format!("i{}", indent.min(&2))];
                    classes.extend(tone_name(*tone).map(String::from));
                    out.push_str(&format!(
                        "<li class=\"{}\">{}</li>",
                        classes.join(" "),
                        escape::text(text)
                    ));
                }
                out.push_str("</ul>\n");
            }
            Block::Code(text) => {
                out.push_str(&format!("<pre>{}</pre>\n", escape::block(text)));
            }
        }
    }
    out
}

fn table(out: &mut String, header: &[String], rows: &[(Tone, Vec<String>)]) {
    out.push_str("<div class=\"scroll\"><table><thead><tr>");
    for cell in header {
        out.push_str(&format!("<th>{}</th>", escape::text(cell)));
    }
    out.push_str("</tr></thead><tbody>");
    for (tone, row) in rows {
        out.push_str(&format!("<tr{}>", class(*tone)));
        for cell in row {
            out.push_str(&format!("<td>{}</td>", escape::text(cell)));
        }
        out.push_str("</tr>");
    }
    out.push_str("</tbody></table></div>\n");
}

fn tone_name(tone: Tone) -> Option<&'static str> {
    match tone {
        Tone::Plain => None,
        Tone::Good => Some("good"),
        Tone::Warn => Some("warn"),
        Tone::Bad => Some("bad"),
        Tone::Dim => Some("dim"),
    }
}

fn class(tone: Tone) -> String {
    tone_name(tone)
        .map(|name| format!(" class=\"{name}\""))
        .unwrap_or_default()
}
