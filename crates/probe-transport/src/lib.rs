//! SSH transport (russh) that resolves targets like OpenSSH, and a local executor with the same interface.
