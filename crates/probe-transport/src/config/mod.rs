//! `ssh_config` resolution with OpenSSH semantics (`ssh -G`).
