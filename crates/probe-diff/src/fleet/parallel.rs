//! The fleet comparison's one way to spread work: `std::thread::scope` workers over a slice,
//! results in the slice's order.

use std::sync::atomic::{AtomicUsize, Ordering};

/// Fewer comparisons (or readings) than this are made on the calling thread.
const PARALLEL_FROM: usize = 8;

/// `work` over `items`, in their order; on every core when there are enough items.
pub(super) fn in_parallel<T: Sync, R: Send>(items: &[T], work: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let threads = std::thread::available_parallelism()
        .map_or(1, std::num::NonZeroUsize::get)
        .min(items.len());
    if threads < 2 || items.len() < PARALLEL_FROM {
        return items.iter().map(work).collect();
    }
    let next = AtomicUsize::new(0);
    let (work, next) = (&work, &next);
    let mut done: Vec<(usize, R)> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                scope.spawn(move || {
                    let mut own = Vec::new();
                    loop {
                        let index = next.fetch_add(1, Ordering::Relaxed);
                        let Some(item) = items.get(index) else { break };
                        own.push((index, work(item)));
                    }
                    own
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|worker| {
                worker
                    .join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
            })
            .collect()
    });
    done.sort_by_key(|(index, _)| *index);
    done.into_iter().map(|(_, result)| result).collect()
}
