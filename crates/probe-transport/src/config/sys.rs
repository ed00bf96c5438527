//! The user database (uid, passwd entries) and the host name resolution needs, through nix's
//! safe wrappers of `getpwuid_r`, `getpwnam_r` and `gethostname`.

use std::path::PathBuf;

use nix::unistd::{User, gethostname, getuid};

/// Name and home directory of a passwd entry.
pub(crate) struct Passwd {
    pub name: String,
    pub dir: PathBuf,
}

/// The real uid of this process.
pub(crate) fn uid() -> u32 {
    getuid().as_raw()
}

/// The passwd entry of the current uid, when the user database has one.
pub(crate) fn current_user() -> Option<Passwd> {
    let user = User::from_uid(getuid()).ok()??;
    Some(Passwd {
        name: user.name,
        dir: user.dir,
    })
}

/// Home directory of a named user (for `~user/...`).
pub(crate) fn home_of(user: &str) -> Option<PathBuf> {
    User::from_name(user).ok()?.map(|u| u.dir)
}

/// This machine's host name (`gethostname`), as OpenSSH's `%l`.
pub(crate) fn hostname() -> String {
    gethostname()
        .map(|h| h.to_string_lossy().into_owned())
        .unwrap_or_default()
}
