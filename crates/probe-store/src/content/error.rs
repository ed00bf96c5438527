//! Why stored content could not be written or read back: a damaged or foreign store, told
//! apart by kind (a codec's failure, text that is not UTF-8 or JSON, a slot list or section
//! that does not add up), each keeping its cause as `source`.

/// A content error; both stores turn it into their [`crate::StoreError`].
#[derive(Debug, thiserror::Error)]
pub(crate) enum ContentError {
    /// zstd refused to compress or decompress.
    #[error("zstd: {0}")]
    Zstd(#[source] std::io::Error),
    #[error(transparent)]
    Utf8(#[from] std::str::Utf8Error),
    #[error(transparent)]
    Utf8Bytes(#[from] std::string::FromUtf8Error),
    #[error(transparent)]
    Json(#[from] serde_json::Error),
    #[error(transparent)]
    Number(#[from] std::num::TryFromIntError),
    /// Stored bytes that do not add up (a section's size or address, a slot list, a layout).
    #[error("{0}")]
    Damaged(String),
}

impl From<String> for ContentError {
    fn from(what: String) -> ContentError {
        ContentError::Damaged(what)
    }
}

impl From<&str> for ContentError {
    fn from(what: &str) -> ContentError {
        ContentError::Damaged(what.to_string())
    }
}
