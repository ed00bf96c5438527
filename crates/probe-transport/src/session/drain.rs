//! One exec channel drained: the command started, its stdin fed, stdout and stderr kept within
//! their caps, until the channel ends, the command's exit status and a short grace after it, or
//! the deadline.

use std::sync::Arc;
use std::time::{Duration, Instant};

use russh::ChannelMsg;
use russh::client;

use crate::error::{ErrorKind, TransportError, clean};
use crate::{ExecOutput, ExecRequest};

/// How long the channel may stay silent after the command's exit status before it counts as
/// done (each piece of output that still arrives starts the wait again).
const EXIT_GRACE: Duration = Duration::from_millis(1000);

pub(super) async fn drain(
    channel: russh::Channel<client::Msg>,
    command: String,
    req: ExecRequest,
    deadline: tokio::time::Instant,
    started: Instant,
    host: String,
) -> Result<ExecOutput, TransportError> {
    let err = |kind| TransportError::new(host.clone(), kind);
    start(&channel, command, &req, deadline, &err).await?;
    let (mut rd, wr) = channel.split();
    let wr = Arc::new(wr);
    let writer = {
        let wr = wr.clone();
        let stdin = req.stdin.clone();
        tokio::spawn(async move {
            if let Some(data) = stdin {
                let _ = wr.data(&data[..]).await;
            }
            let _ = wr.eof().await;
        })
    };
    let mut got = Received::new(&req);
    // Once the command has exited, output still in flight gets a short grace; a process it
    // left behind holding the session's pipes (an orphan) must not hold the channel open.
    let mut until = deadline;
    let result = loop {
        match tokio::time::timeout_at(until, rd.wait()).await {
            Err(_) if got.status.is_some() => {
                let _ = tokio::time::timeout(Duration::from_millis(500), wr.close()).await;
                break Ok(());
            }
            Err(_) => {
                // Deadline: close the channel and leave at once (russh drops the server's CLOSE
                // after a client close, so waiting for it would hang). The remote `timeout`
                // kills the command.
                let _ = tokio::time::timeout(Duration::from_millis(500), wr.close()).await;
                break Err(err(ErrorKind::ExecTimeout { after: req.timeout })
                    .with_partial_stdout(std::mem::take(&mut got.out.buf)));
            }
            Ok(None) => break Ok(()),
            Ok(Some(msg)) => match got.take(msg, &mut until, deadline) {
                Taken::More => {}
                Taken::Closed => break Ok(()),
                Taken::Refused => {
                    break Err(err(ErrorKind::Channel(
                        "server refused the exec request".into(),
                    )));
                }
            },
        }
    };
    writer.abort();
    result?;
    got.into_output(started, &err)
}

/// Asks the server to run `command` on the channel, within the deadline.
async fn start(
    channel: &russh::Channel<client::Msg>,
    command: String,
    req: &ExecRequest,
    deadline: tokio::time::Instant,
    err: &impl Fn(ErrorKind) -> TransportError,
) -> Result<(), TransportError> {
    if let Err(e) = tokio::time::timeout_at(deadline, channel.exec(true, command.into_bytes()))
        .await
        .map_err(|_| err(ErrorKind::ExecTimeout { after: req.timeout }))?
    {
        return Err(err(ErrorKind::Channel(clean(&e.to_string()))));
    }
    Ok(())
}

struct Capped {
    buf: Vec<u8>,
    cap: usize,
    truncated: bool,
}

impl Capped {
    fn new(cap: usize) -> Self {
        Capped {
            buf: Vec::new(),
            cap,
            truncated: false,
        }
    }
    fn push(&mut self, data: &[u8]) {
        let room = self.cap.saturating_sub(self.buf.len());
        if data.len() > room {
            self.truncated = true;
        }
        if let Some(part) = data.get(..room.min(data.len())) {
            self.buf.extend_from_slice(part);
        }
    }
}

/// What the channel has sent so far.
struct Received {
    out: Capped,
    err: Capped,
    status: Option<u32>,
    signal: Option<String>,
}

/// What one message leaves the channel: still open, closed, or the exec request refused.
enum Taken {
    More,
    Closed,
    Refused,
}

impl Received {
    fn new(req: &ExecRequest) -> Self {
        Received {
            out: Capped::new(req.stdout_cap),
            err: Capped::new(req.stderr_cap),
            status: None,
            signal: None,
        }
    }

    /// One message from the channel; once the command has exited, `until` comes down to the
    /// grace after the last thing received.
    fn take(
        &mut self,
        msg: ChannelMsg,
        until: &mut tokio::time::Instant,
        deadline: tokio::time::Instant,
    ) -> Taken {
        match msg {
            ChannelMsg::Data { data } => {
                self.out.push(&data);
                if self.status.is_some() {
                    *until = deadline.min(tokio::time::Instant::now() + EXIT_GRACE);
                }
            }
            ChannelMsg::ExtendedData { data, ext: 1 } => self.err.push(&data),
            ChannelMsg::ExitStatus { exit_status } => {
                self.status = Some(exit_status);
                *until = (*until).min(tokio::time::Instant::now() + EXIT_GRACE);
            }
            ChannelMsg::ExitSignal { signal_name, .. } => {
                self.signal = Some(format!("{signal_name:?}"))
            }
            ChannelMsg::Failure => return Taken::Refused,
            ChannelMsg::Close => return Taken::Closed,
            _ => {}
        }
        Taken::More
    }

    /// The command's output, or the error when it has no exit status (a signal, or a channel
    /// closed early).
    fn into_output(
        self,
        started: Instant,
        err: &impl Fn(ErrorKind) -> TransportError,
    ) -> Result<ExecOutput, TransportError> {
        let exit_status = match (self.status, self.signal) {
            (Some(s), _) => s,
            (None, Some(sig)) => return Err(err(ErrorKind::Signal(sig))),
            (None, None) => {
                return Err(err(ErrorKind::NoExitStatus(
                    "channel closed early; connection lost?".into(),
                )));
            }
        };
        Ok(ExecOutput {
            stdout: self.out.buf,
            stderr: self.err.buf,
            exit_status,
            stdout_truncated: self.out.truncated,
            stderr_truncated: self.err.truncated,
            elapsed: started.elapsed(),
        })
    }
}
