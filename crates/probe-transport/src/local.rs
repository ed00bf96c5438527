//! Runs commands on this machine with `sh -c`, with the same caps and deadline semantics as the
//! SSH executor. The command runs in its own process group, which is killed at the deadline.

use std::process::Stdio;
use std::time::Instant;

use tokio::io::{AsyncRead, AsyncReadExt as _, AsyncWriteExt as _};

use crate::error::{ErrorKind, TransportError};
use crate::{ExecOutput, ExecRequest};

/// Local executor (`probe host local`).
#[derive(Debug, Clone, Default)]
pub struct LocalExec {
    _private: (),
}

async fn read_capped<R: AsyncRead + Unpin>(mut r: R, cap: usize) -> (Vec<u8>, bool) {
    let mut buf = Vec::new();
    let mut truncated = false;
    let mut chunk = vec![0u8; 64 * 1024];
    loop {
        match r.read(&mut chunk).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                let room = cap.saturating_sub(buf.len());
                if n > room {
                    truncated = true;
                }
                if let Some(part) = chunk.get(..n.min(room)) {
                    buf.extend_from_slice(part);
                }
            }
        }
    }
    (buf, truncated)
}

fn kill_group(pgid: u32) {
    let Ok(pgid) = i32::try_from(pgid) else {
        return;
    };
    if pgid > 0 {
        // kill(2) of the negative pid: the whole process group. A group already gone is fine.
        let _ = nix::sys::signal::killpg(
            nix::unistd::Pid::from_raw(pgid),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
}

impl LocalExec {
    pub fn new() -> Self {
        LocalExec { _private: () }
    }

    pub fn host(&self) -> &str {
        "local"
    }

    pub async fn exec(&self, req: &ExecRequest) -> Result<ExecOutput, TransportError> {
        let started = Instant::now();
        let err = |kind| TransportError::new("local", kind);
        let mut child = spawn_sh(req).map_err(err)?;
        let pid = child.id().unwrap_or(0);
        let stdin_task = child
            .stdin
            .take()
            .zip(req.stdin.clone())
            .map(|(mut w, data)| {
                tokio::spawn(async move {
                    let _ = w.write_all(&data).await;
                    let _ = w.shutdown().await;
                })
            });
        let stdout = child
            .stdout
            .take()
            .map(|r| tokio::spawn(read_capped(r, req.stdout_cap)));
        let stderr = child
            .stderr
            .take()
            .map(|r| tokio::spawn(read_capped(r, req.stderr_cap)));
        let status = match tokio::time::timeout(req.timeout, child.wait()).await {
            Ok(Ok(s)) => s,
            Ok(Err(e)) => return Err(err(ErrorKind::Local(e.to_string()))),
            Err(_) => {
                kill_group(pid);
                let _ = child.wait().await;
                if let Some(t) = stderr {
                    t.abort();
                }
                // What the group wrote before it was killed (its pipes are closed now, unless
                // an escaped process holds them: then nothing).
                let partial = partial_stdout(stdout).await;
                return Err(
                    err(ErrorKind::ExecTimeout { after: req.timeout }).with_partial_stdout(partial)
                );
            }
        };
        // The shell is gone; children that kept the pipes open must not hold us past the deadline.
        let rest = req.timeout.saturating_sub(started.elapsed());
        let collect = async {
            let o = match stdout {
                Some(t) => t.await.unwrap_or_default(),
                None => (Vec::new(), false),
            };
            let e = match stderr {
                Some(t) => t.await.unwrap_or_default(),
                None => (Vec::new(), false),
            };
            (o, e)
        };
        let ((stdout, stdout_truncated), (stderr, stderr_truncated)) =
            match tokio::time::timeout(rest, collect).await {
                Ok(r) => r,
                Err(_) => {
                    kill_group(pid);
                    return Err(err(ErrorKind::ExecTimeout { after: req.timeout }));
                }
            };
        if let Some(t) = stdin_task {
            t.abort();
        }
        let exit_status = exit_code(status).map_err(err)?;
        Ok(ExecOutput {
            stdout,
            stderr,
            exit_status,
            stdout_truncated,
            stderr_truncated,
            elapsed: started.elapsed(),
        })
    }
}

/// `sh -c COMMAND` in its own process group, stdin piped only where there is input.
fn spawn_sh(req: &ExecRequest) -> Result<tokio::process::Child, ErrorKind> {
    let mut cmd = tokio::process::Command::new("sh");
    cmd.arg("-c")
        .arg(&req.command)
        .stdin(if req.stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    cmd.spawn()
        .map_err(|e| ErrorKind::Local(format!("cannot start sh: {e}")))
}

/// What a killed group wrote to stdout (its pipes are closed now, unless an escaped process
/// holds them: then nothing after a short wait).
async fn partial_stdout(stdout: Option<tokio::task::JoinHandle<(Vec<u8>, bool)>>) -> Vec<u8> {
    match stdout {
        Some(mut t) => {
            let wait = std::time::Duration::from_millis(300);
            let got = tokio::time::timeout(wait, &mut t).await;
            t.abort();
            match got {
                Ok(Ok((o, _))) => o,
                _ => Vec::new(),
            }
        }
        None => Vec::new(),
    }
}

/// The shell's exit code; a shell killed by a signal, or without a status, is an error.
fn exit_code(status: std::process::ExitStatus) -> Result<u32, ErrorKind> {
    use std::os::unix::process::ExitStatusExt as _;
    match (status.code(), status.signal()) {
        (Some(c), _) => Ok(u32::try_from(c).unwrap_or(255)),
        (None, Some(sig)) => Err(ErrorKind::Signal(format!("{sig}"))),
        (None, None) => Err(ErrorKind::NoExitStatus("no status".into())),
    }
}
