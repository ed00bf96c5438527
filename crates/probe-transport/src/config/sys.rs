//! The few libc calls resolution needs (user database, uid, host name).
#![allow(unsafe_code)]

use std::ffi::{CStr, CString};
use std::path::PathBuf;

/// Name and home directory of a passwd entry.
pub(crate) struct Passwd {
    pub name: String,
    pub dir: PathBuf,
}

fn from_pw(pw: &libc::passwd) -> Option<Passwd> {
    if pw.pw_name.is_null() || pw.pw_dir.is_null() {
        return None;
    }
    // SAFETY: getpwuid_r/getpwnam_r filled `pw` with NUL-terminated strings that live in `buf`,
    // which outlives this call.
    let (name, dir) = unsafe { (CStr::from_ptr(pw.pw_name), CStr::from_ptr(pw.pw_dir)) };
    Some(Passwd {
        name: name.to_string_lossy().into_owned(),
        dir: PathBuf::from(dir.to_string_lossy().into_owned()),
    })
}

/// The real uid of this process.
pub(crate) fn uid() -> u32 {
    // SAFETY: getuid has no preconditions and cannot fail.
    unsafe { libc::getuid() }
}

/// The passwd entry of the current uid, when the user database has one.
pub(crate) fn current_user() -> Option<Passwd> {
    let mut buf = vec![0 as libc::c_char; 16384];
    // SAFETY: all-zero is a valid `passwd` (pointers null, integers zero).
    let mut pw: libc::passwd = unsafe { std::mem::zeroed() };
    let mut result: *mut libc::passwd = std::ptr::null_mut();
    // SAFETY: pointers are valid for the given sizes; getpwuid_r writes only into `pw` and `buf`.
    let rc = unsafe { libc::getpwuid_r(uid(), &mut pw, buf.as_mut_ptr(), buf.len(), &mut result) };
    if rc != 0 || result.is_null() {
        return None;
    }
    from_pw(&pw)
}

/// Home directory of a named user (for `~user/...`).
pub(crate) fn home_of(user: &str) -> Option<PathBuf> {
    let name = CString::new(user).ok()?;
    let mut buf = vec![0 as libc::c_char; 16384];
    // SAFETY: all-zero is a valid `passwd`.
    let mut pw: libc::passwd = unsafe { std::mem::zeroed() };
    let mut result: *mut libc::passwd = std::ptr::null_mut();
    // SAFETY: as in `current_user`; `name` is NUL-terminated.
    let rc = unsafe {
        libc::getpwnam_r(
            name.as_ptr(),
            &mut pw,
            buf.as_mut_ptr(),
            buf.len(),
            &mut result,
        )
    };
    if rc != 0 || result.is_null() {
        return None;
    }
    from_pw(&pw).map(|p| p.dir)
}

/// This machine's host name (`gethostname`), as OpenSSH's `%l`.
pub(crate) fn hostname() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: buf is valid for its length; gethostname NUL-terminates on success when it fits.
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len() - 1) };
    if rc != 0 {
        return String::new();
    }
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(buf.get(..end).unwrap_or_default()).into_owned()
}
