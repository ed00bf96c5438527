//! Reading a local file the operator named (a config, an inventory, an ssh_config and its
//! `Include`s, a known_hosts file, a key, a snapshot document, a launch text) without trusting
//! it: it must be a regular file (a FIFO, `/dev/zero` or a directory is refused, and a FIFO is
//! never waited on), and at most `cap` bytes are read. OpenSSH refuses such files too.
//!
//! This is the one helper for it; `probe-cli` uses it as well.

use std::io::Read as _;
use std::os::unix::fs::{FileTypeExt as _, OpenOptionsExt as _};
use std::path::{Path, PathBuf};

/// Cap for configuration-like files (ssh_config, known_hosts, keys, probe's config,
/// inventories, launch texts): far above any real one.
pub const CONFIG_CAP: u64 = 4 << 20;

/// Why a local file was not read. `Display` is one line naming the file.
#[derive(Debug, thiserror::Error)]
#[error("{}: {kind}", path.display())]
pub struct LocalFileError {
    pub path: PathBuf,
    pub kind: LocalFileErrorKind,
}

#[derive(Debug, thiserror::Error)]
pub enum LocalFileErrorKind {
    #[error("{0}")]
    Io(#[source] std::io::Error),
    #[error("not a regular file ({0})")]
    NotRegular(&'static str),
    #[error("larger than {} (the limit for this file)", human(*.0))]
    TooLarge(u64),
}

impl LocalFileError {
    /// Whether the file does not exist (callers that treat a missing file as empty).
    pub fn is_not_found(&self) -> bool {
        matches!(&self.kind, LocalFileErrorKind::Io(e) if e.kind() == std::io::ErrorKind::NotFound)
    }
}

fn human(bytes: u64) -> String {
    if bytes >= 1 << 20 && bytes.is_multiple_of(1 << 20) {
        format!("{} MiB", bytes >> 20)
    } else {
        format!("{bytes} bytes")
    }
}

fn kind_name(ft: std::fs::FileType) -> &'static str {
    if ft.is_dir() {
        "a directory"
    } else if ft.is_fifo() {
        "a FIFO"
    } else if ft.is_char_device() {
        "a character device"
    } else if ft.is_block_device() {
        "a block device"
    } else if ft.is_socket() {
        "a socket"
    } else {
        "not a plain file"
    }
}

/// Reads a regular file of at most `cap` bytes.
pub fn read_bounded(path: &Path, cap: u64) -> Result<Vec<u8>, LocalFileError> {
    let fail = |kind| LocalFileError {
        path: path.to_path_buf(),
        kind,
    };
    // O_NONBLOCK: opening a FIFO must not wait for a writer. It changes nothing for a
    // regular file, the only kind read.
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
        .map_err(|e| fail(LocalFileErrorKind::Io(e)))?;
    let meta = file
        .metadata()
        .map_err(|e| fail(LocalFileErrorKind::Io(e)))?;
    if !meta.file_type().is_file() {
        return Err(fail(LocalFileErrorKind::NotRegular(kind_name(
            meta.file_type(),
        ))));
    }
    if meta.len() > cap {
        return Err(fail(LocalFileErrorKind::TooLarge(cap)));
    }
    let mut bytes = Vec::new();
    file.take(cap.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|e| fail(LocalFileErrorKind::Io(e)))?;
    // The file may have grown since fstat.
    if bytes.len() as u64 > cap {
        return Err(fail(LocalFileErrorKind::TooLarge(cap)));
    }
    Ok(bytes)
}

/// [`read_bounded`] as text (lossy UTF-8).
pub fn read_bounded_text(path: &Path, cap: u64) -> Result<String, LocalFileError> {
    read_bounded(path, cap).map(|b| match String::from_utf8(b) {
        Ok(s) => s,
        Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_what_is_not_a_small_regular_file() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        let st = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(st.success());
        let big = dir.path().join("big");
        std::fs::write(&big, vec![b'x'; 2048]).unwrap();
        let ok = dir.path().join("ok");
        std::fs::write(&ok, "hello").unwrap();
        let cases: &[(&Path, &str)] = &[
            (
                Path::new("/dev/zero"),
                "not a regular file (a character device)",
            ),
            (&fifo, "not a regular file (a FIFO)"),
            (dir.path(), "not a regular file (a directory)"),
            (&big, "larger than 1024 bytes (the limit for this file)"),
        ];
        for (path, cause) in cases {
            let err = read_bounded(path, 1024).unwrap_err().to_string();
            assert_eq!(err, format!("{}: {cause}", path.display()));
        }
        assert_eq!(read_bounded(&ok, 1024).unwrap(), b"hello");
        let missing = read_bounded(&dir.path().join("none"), 10).unwrap_err();
        assert!(missing.is_not_found());
    }
}
