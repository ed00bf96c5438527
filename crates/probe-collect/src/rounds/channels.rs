//! The exec channels of both rounds: the calls in flight, and a group whose channel the server
//! refused waiting for another group's to end.

use std::sync::atomic::{AtomicUsize, Ordering};

use probe_transport::{Exec, ExecOutput, ExecRequest, TransportError};

/// The exec calls of both rounds in flight, and a signal when one ends. A server that allows
/// fewer sessions than there are groups (`MaxSessions 1`) refuses a group's channel when the
/// transport has none of its own open to wait for (they all opened at once); that group then
/// waits here for another group's channel to end and runs after it, on the channel that frees.
#[derive(Default)]
pub(super) struct Channels {
    running: AtomicUsize,
    /// Calls that ended after running on a channel (not refused one).
    freed: AtomicUsize,
    ended: tokio::sync::Notify,
}

/// Counts one exec call as running while it lives (also when its future is dropped). Its end
/// wakes the groups waiting for a channel, unless its own channel was refused (no channel
/// freed: waking them would only have them refused again) and others still run.
struct Running<'a> {
    channels: &'a Channels,
    freed: bool,
}

impl Drop for Running<'_> {
    fn drop(&mut self) {
        if self.freed {
            self.channels.freed.fetch_add(1, Ordering::SeqCst);
        }
        let before = self.channels.running.fetch_sub(1, Ordering::SeqCst);
        if self.freed || before == 1 {
            self.channels.ended.notify_waiters();
        }
    }
}

impl Channels {
    pub(super) async fn exec<E: Exec>(
        &self,
        exec: &E,
        req: &ExecRequest,
    ) -> Result<ExecOutput, TransportError> {
        self.running.fetch_add(1, Ordering::SeqCst);
        let mut running = Running {
            channels: self,
            freed: true,
        };
        let result = exec.exec(req).await;
        running.freed = !matches!(&result, Err(e) if refused(e));
        result
    }

    /// Calls that have run on a channel and ended so far.
    pub(super) fn freed(&self) -> usize {
        self.freed.load(Ordering::SeqCst)
    }

    /// After a refused channel, asked for when [`Channels::freed`] said `seen`: true once a
    /// channel has freed since (another call ran on one and ended), false when none has and
    /// none is running (the server allows no channel now: two groups it always refuses end
    /// here rather than wake each other until the deadline).
    pub(super) async fn wait_for_one(&self, seen: usize) -> bool {
        loop {
            let ended = self.ended.notified();
            let mut ended = std::pin::pin!(ended);
            ended.as_mut().enable();
            if self.freed() > seen {
                return true;
            }
            if self.running.load(Ordering::SeqCst) == 0 {
                return false;
            }
            ended.await;
        }
    }
}

/// The server refused the group's channel: the command never ran.
pub(super) fn refused(e: &TransportError) -> bool {
    matches!(e.kind, probe_transport::ErrorKind::ChannelRefused(_))
}
