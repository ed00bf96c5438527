//! Scratch (not committed): prints the reading of each file given.
fn main() {
    for p in std::env::args().skip(1) {
        let t = std::fs::read_to_string(&p).unwrap_or_default();
        let ls = probe_launch::reconstruct(&t, &probe_launch::ParseHints::default());
        println!("== {p}: {} launches", ls.len());
        for l in &ls {
            println!("{}", probe_launch::common::common_fields(l));
            println!("  engine={:?} wrappers={:?} unknown={:?}", l.engine, l.wrappers, l.unknown);
            for w in &l.warnings { println!("  warn: {w}"); }
            for (k, o) in &l.options { println!("  opt {k} = {} ({:?})", o.value, o.written); }
        }
    }
}
