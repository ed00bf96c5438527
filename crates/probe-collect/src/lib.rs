//! Read-only collection script, section framing, parsers and redaction.
