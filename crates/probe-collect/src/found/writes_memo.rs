//! The writing commands of cron tables, services and scripts, read once per thread. A fleet's
//! hosts mostly hold the same such texts (the distribution's `/etc/cron.daily` scripts, one
//! deploy's units), and reading them with the shell reader was about a twentieth of an audit's
//! client CPU per host (docs/BENCHMARKS.md, fleet simulator, "Round 4").
//!
//! What a text writes depends on its kind and its text alone, so those are the key, compared
//! whole (a hash only finds the candidates). At most [`MEMO_TEXTS`] texts and [`MEMO_BYTES`]
//! of them are kept per thread, all dropped when either fills; a text longer than
//! [`MEMO_TEXT_BYTES`] is read each time.

use std::cell::RefCell;
use std::collections::HashMap;
use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::rc::Rc;

use probe_launch::WritingCommand;

use crate::config::PlaceKind;

/// The commands of one text that write to files, each with its line.
pub(super) type Writes = Vec<(Option<usize>, WritingCommand)>;

/// Texts kept per thread.
const MEMO_TEXTS: usize = 256;
/// The bytes of text kept per thread.
const MEMO_BYTES: usize = 1024 * 1024;
/// The longest text kept (a script is read up to the launch reader's bound, 4 MiB).
const MEMO_TEXT_BYTES: usize = 64 * 1024;

struct Remembered {
    kind: PlaceKind,
    text: String,
    writes: Rc<Writes>,
}

#[derive(Default)]
struct Memo {
    by_hash: HashMap<u64, Vec<Remembered>>,
    count: usize,
    bytes: usize,
}

thread_local! {
    static MEMO: RefCell<Memo> = RefCell::new(Memo::default());
}

fn key_of(kind: PlaceKind, text: &str) -> u64 {
    let mut hasher = DefaultHasher::new();
    kind.hash(&mut hasher);
    text.hash(&mut hasher);
    hasher.finish()
}

/// The writes of `(kind, text)`: remembered on this thread, or `read` and remembered.
pub(super) fn remembered(kind: PlaceKind, text: &str, read: impl FnOnce() -> Writes) -> Rc<Writes> {
    if text.len() > MEMO_TEXT_BYTES {
        return Rc::new(read());
    }
    let key = key_of(kind, text);
    let found = MEMO.with_borrow(|memo| {
        memo.by_hash.get(&key).and_then(|list| {
            list.iter()
                .find(|r| r.kind == kind && r.text == text)
                .map(|r| Rc::clone(&r.writes))
        })
    });
    if let Some(writes) = found {
        return writes;
    }
    let writes = Rc::new(read());
    MEMO.with_borrow_mut(|memo| {
        if memo.count >= MEMO_TEXTS || memo.bytes + text.len() > MEMO_BYTES {
            *memo = Memo::default();
        }
        memo.count += 1;
        memo.bytes += text.len();
        memo.by_hash.entry(key).or_default().push(Remembered {
            kind,
            text: text.to_string(),
            writes: Rc::clone(&writes),
        });
    });
    writes
}

#[cfg(test)]
mod tests {
    use super::*;

    fn writes(target: &str) -> Writes {
        vec![(
            Some(1),
            WritingCommand {
                argv: vec!["docker".into()],
                targets: vec![target.into()],
            },
        )]
    }

    #[test]
    fn a_text_is_read_once_per_kind_and_a_full_memo_starts_again() {
        let reads = std::cell::Cell::new(0);
        let read = |t: &str| {
            reads.set(reads.get() + 1);
            writes(t)
        };
        let a = remembered(PlaceKind::Script, "docker logs x > /a", || read("/a"));
        let again = remembered(PlaceKind::Script, "docker logs x > /a", || read("/other"));
        assert_eq!((reads.get(), &*again), (1, &*a), "the same text, read once");
        // The same text as another kind is another key.
        let cron = remembered(PlaceKind::Cron, "docker logs x > /a", || read("/c"));
        assert_eq!((reads.get(), cron[0].1.targets[0].as_str()), (2, "/c"));
        // Past the bound, everything is read afresh.
        for i in 0..MEMO_TEXTS {
            remembered(PlaceKind::Script, &format!("t{i}"), || read("/t"));
        }
        let before = reads.get();
        remembered(PlaceKind::Script, "docker logs x > /a", || read("/a"));
        assert_eq!(reads.get(), before + 1, "dropped when the memo filled");
        // Past the bytes kept, too.
        let big = "y".repeat(MEMO_TEXT_BYTES - 8);
        for i in 0..=MEMO_BYTES / MEMO_TEXT_BYTES {
            remembered(PlaceKind::Script, &format!("{big}{i}"), || read("/b"));
        }
        let before = reads.get();
        remembered(PlaceKind::Script, &format!("{big}0"), || read("/b"));
        assert_eq!(reads.get(), before + 1, "dropped when its bytes filled");
        // A text too long to keep is read each time.
        let long = "x".repeat(MEMO_TEXT_BYTES + 1);
        remembered(PlaceKind::Script, &long, || read("/l"));
        remembered(PlaceKind::Script, &long, || read("/l"));
        assert_eq!(reads.get(), before + 3);
    }
}
