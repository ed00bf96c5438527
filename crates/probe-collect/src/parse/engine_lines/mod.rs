//! The log lines of every engine, as data: `configs/log_lines.toml` says what each engine
//! writes before a message (its prefixes and time stamps), which lines hold its version and its
//! start-up settings, and, per metric or limit line, its marker, its pattern and which groups
//! are metric values or start-up limits. [`read`] tells what one line holds; the log reader
//! puts the values into series and limit records.

mod defs;
mod load;
mod raw;
mod read;
mod samples;
#[cfg(test)]
mod tests;
mod values;

pub use defs::{Block, Found, FoundText, LogLines, Place, Prefix, Target, TextKind, TimeForm};
pub use load::{blocks, keep, log_lines, markers, prefixes};
pub use read::{read, read_into, read_text};
pub use samples::{Reads, Sample, samples};
pub use values::duration_ms;
