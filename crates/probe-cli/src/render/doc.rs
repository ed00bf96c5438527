//! A small document model every report is built as, then rendered as text for a terminal
//! ([`super::human`]) or as Markdown ([`super::markdown`]). Building once keeps the two forms
//! in step; all remote text is sanitized when rendered, not when built.

/// How loud a line is (colour in the terminal, emphasis in Markdown).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tone {
    Plain,
    Good,
    Warn,
    Bad,
    Dim,
}

/// One block of a report.
#[derive(Debug, Clone, PartialEq)]
pub enum Block {
    /// A title (level 1) or section heading (level 2, 3).
    Heading(u8, String),
    /// A line of text.
    Line(Tone, String),
    /// Aligned `key  value` lines.
    Fields(Vec<(String, String)>),
    /// A table with a header row.
    Table {
        header: Vec<String>,
        rows: Vec<(Tone, Vec<String>)>,
    },
    /// A bullet list; nested lines (indent 1) follow their item.
    Items(Vec<(u8, Tone, String)>),
    /// Preformatted text (a unified diff, an argv).
    Code(String),
}

/// A report as blocks.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Doc {
    pub blocks: Vec<Block>,
}

impl Doc {
    pub fn heading(&mut self, level: u8, text: impl Into<String>) {
        self.blocks.push(Block::Heading(level, text.into()));
    }

    pub fn line(&mut self, tone: Tone, text: impl Into<String>) {
        self.blocks.push(Block::Line(tone, text.into()));
    }

    pub fn fields(&mut self, fields: Vec<(String, String)>) {
        if !fields.is_empty() {
            self.blocks.push(Block::Fields(fields));
        }
    }

    pub fn table(&mut self, header: Vec<String>, rows: Vec<(Tone, Vec<String>)>) {
        self.blocks.push(Block::Table { header, rows });
    }

    pub fn items(&mut self, items: Vec<(u8, Tone, String)>) {
        if !items.is_empty() {
            self.blocks.push(Block::Items(items));
        }
    }

    pub fn code(&mut self, text: impl Into<String>) {
        self.blocks.push(Block::Code(text.into()));
    }

    pub fn append(&mut self, other: Doc) {
        self.blocks.extend(other.blocks);
    }
}
