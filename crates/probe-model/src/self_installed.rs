//! Engines installed outside package managers (issue 32, item 4): a binary an install script
//! or a build wrote, the git checkout it was built from or that a `pip install -e` points at,
//! read as files on the host (git is never run), and the names a content-addressed model store
//! gives its blobs (its manifests).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::UnixTime;

/// What round 2 read about self-installed engines.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct SelfInstalled {
    /// The program files running servers run, when they are not an interpreter.
    pub binaries: Vec<InstalledBinary>,
    /// Git checkouts: the one a binary was built in, the one an editable install points at.
    pub checkouts: Vec<Checkout>,
    /// Model names a model store's manifests give its blobs.
    pub model_names: Vec<BlobName>,
}

impl SelfInstalled {
    /// Nothing read: no binary, no checkout, no model name.
    pub fn is_empty(&self) -> bool {
        self.binaries.is_empty() && self.checkouts.is_empty() && self.model_names.is_empty()
    }
}

/// A program file, as `stat` gave it (no link followed).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct InstalledBinary {
    pub path: String,
    /// When it was last written (an install script that unpacks an archive may keep the
    /// archive's time instead: then it is the release's build time).
    pub mtime: Option<UnixTime>,
    pub size: Option<u64>,
    /// A symbolic link (its target is not followed).
    pub link: bool,
    /// The git checkout it sits in (its directory or one up to four above).
    pub checkout: Option<String>,
}

/// A git checkout's state, read from `.git/HEAD`, the ref file it names or `packed-refs`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct Checkout {
    /// The work tree's directory.
    pub dir: String,
    /// The branch `HEAD` names (`refs/heads/master`), none when it is detached.
    pub branch: Option<String>,
    /// The commit checked out (40 hex digits).
    pub commit: Option<String>,
    /// When the branch's loose ref file was last written (a commit, a pull, a checkout); none
    /// when it came from `packed-refs`.
    pub ref_mtime: Option<UnixTime>,
    /// When `FETCH_HEAD` was written (the last fetch or pull).
    pub fetched_at: Option<UnixTime>,
    /// When `ORIG_HEAD` was written (the last merge, pull, rebase or reset that moved HEAD).
    pub moved_at: Option<UnixTime>,
    /// The commit `ORIG_HEAD` holds: where HEAD was before that move.
    pub moved_from: Option<String>,
}

impl Checkout {
    /// The commit's short form (7 digits), as `git log --oneline` writes it.
    pub fn short(&self) -> Option<&str> {
        self.commit.as_deref().and_then(|c| c.get(..7))
    }
}

/// A blob of a model store named by a manifest (`llama3.3:70b` for
/// `sha256-7b91f419...`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct BlobName {
    /// The store's directory (the one that holds `blobs/` and `manifests/`).
    pub store: String,
    /// The blob's file name (`sha256-<64 hex>`).
    pub blob: String,
    /// The model's name: `NAME:TAG` for the default registry's library, else
    /// `REGISTRY/NAMESPACE/NAME:TAG`.
    pub name: String,
}
