//! Every entry's own sample line and what the log reader must take from it (the definition
//! test reads each).

use super::defs::{Place, Target, TextKind, TimeForm};
use super::load::log_lines;

/// One entry's sample line and what the log reader must take from it.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    /// The engine that prints it (a prefix's first engine).
    pub engine: &'static str,
    pub line: &'static str,
    pub reads: Reads,
}

/// What a sample line must read as.
#[derive(Debug, Clone, PartialEq)]
pub enum Reads {
    /// A prefix of `place`; `time`: it shows a time.
    Prefix { place: Place, time: bool },
    /// A version of the engine.
    Version,
    /// A start-up record of the engine (`[[startup]]`, `[[block]]`).
    Startup,
    /// A model file the engine loaded (`[[loaded]]`).
    Loaded,
    /// Points of these series.
    Metrics(Vec<&'static str>),
    /// A limit record of the engine with these keys.
    Limits(Vec<&'static str>),
}

/// Every entry's sample line, in file order (prefixes, versions and start-ups, blocks, metrics
/// and limits): the definition test reads each through the log reader.
pub fn samples() -> Vec<Sample> {
    let l = log_lines();
    let mut out = Vec::new();
    for p in &l.prefixes {
        out.push(Sample {
            engine: p.engines.first().map_or("", String::as_str),
            line: &p.sample,
            reads: Reads::Prefix {
                place: p.place,
                time: p.time.is_some_and(TimeForm::absolute),
            },
        });
    }
    for t in &l.texts {
        out.push(Sample {
            engine: &t.engine,
            line: &t.sample,
            reads: match t.kind {
                TextKind::Version => Reads::Version,
                TextKind::Startup => Reads::Startup,
                TextKind::Loaded => Reads::Loaded,
            },
        });
    }
    for b in &l.blocks {
        out.push(Sample {
            engine: &b.engine,
            line: &b.sample,
            reads: Reads::Startup,
        });
    }
    for e in &l.entries {
        let names = e.values.iter().map(|v| v.name.as_str()).collect();
        out.push(Sample {
            engine: &e.engine,
            line: &e.sample,
            reads: match e.target {
                Target::Metric => Reads::Metrics(names),
                Target::Limit => Reads::Limits(names),
            },
        });
    }
    out
}
