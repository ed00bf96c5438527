//! Target strings: `host`, `user@host`, `user@host:port`, `[v6]:port`, `ssh://user@host:port`.
