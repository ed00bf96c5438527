//! User authentication: the agent first (`SSH_AUTH_SOCK` or `IdentityAgent`), then identity files.
//! Every method tried is recorded, so a failure names them all.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use russh::client::Handle;
use russh::keys::agent::client::AgentClient;
use russh::keys::{HashAlg, PrivateKey, PrivateKeyWithHashAlg, PublicKey};

use crate::PassphrasePrompt;
use crate::error::{ErrorKind, TransportError, clean};
use crate::session::Client;
use crate::settings::HostSettings;

/// Keys decrypted during this `connect`, so a key used for a jump host and the target is asked
/// for once.
#[derive(Default)]
pub(crate) struct KeyCache {
    keys: Mutex<HashMap<PathBuf, Option<Arc<PrivateKey>>>>,
}

enum Loaded {
    Key(Arc<PrivateKey>),
    Skip(String),
}

pub(crate) struct AuthInput<'a> {
    pub prompt: Option<&'a PassphrasePrompt>,
    pub batch: bool,
    pub cache: &'a KeyCache,
}

pub(crate) async fn authenticate(
    h: &mut Handle<Client>,
    s: &HostSettings,
    input: &AuthInput<'_>,
) -> Result<(), TransportError> {
    let who = format!("{}@{}", s.user, s.alias);
    let fail = |kind: ErrorKind| TransportError::new(who.clone(), kind);
    let hash: Option<HashAlg> = h.best_supported_rsa_hash().await.ok().flatten().flatten();
    let mut tried: Vec<String> = Vec::new();

    // The public halves of the configured identity files (for IdentitiesOnly).
    let file_publics: Vec<PublicKey> = s
        .identity_files
        .iter()
        .filter_map(|p| russh::keys::load_public_key(pub_path(p)).ok())
        .collect();

    // 1. Agent.
    let agent_path = match &s.identity_agent {
        Some(None) => None,
        Some(Some(p)) => Some(p.clone()),
        None => std::env::var_os("SSH_AUTH_SOCK")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from),
    };
    if let Some(sock) = agent_path {
        match AgentClient::connect_uds(&sock).await {
            Err(e) => tried.push(format!(
                "agent (not reachable at {}: {})",
                sock.display(),
                clean(&e.to_string())
            )),
            Ok(mut agent) => match agent.request_identities().await {
                Err(e) => tried.push(format!("agent ({})", clean(&e.to_string()))),
                Ok(ids) => {
                    let mut n = 0usize;
                    for id in ids {
                        let pk = id.public_key().into_owned();
                        if s.identities_only
                            && !file_publics.iter().any(|f| f.key_data() == pk.key_data())
                        {
                            continue;
                        }
                        n += 1;
                        match h
                            .authenticate_publickey_with(s.user.clone(), pk, hash, &mut agent)
                            .await
                        {
                            Ok(r) if r.success() => return Ok(()),
                            Ok(_) => {}
                            Err(e) => {
                                tried.push(format!("agent ({n} keys; {})", clean(&e.to_string())));
                                n = usize::MAX;
                                break;
                            }
                        }
                    }
                    if n != usize::MAX {
                        let only = if s.identities_only {
                            ", IdentitiesOnly"
                        } else {
                            ""
                        };
                        tried.push(format!(
                            "agent ({n} key{}{only})",
                            if n == 1 { "" } else { "s" }
                        ));
                    }
                }
            },
        }
    }

    // 2. Identity files.
    for path in &s.identity_files {
        if !path.exists() {
            if s.identities_configured {
                tried.push(format!("{} (not found)", path.display()));
            }
            continue;
        }
        let key = match load_key(path, input) {
            Loaded::Key(k) => k,
            Loaded::Skip(why) => {
                tried.push(format!("{} ({why})", path.display()));
                continue;
            }
        };
        let hash_for_key = if key.algorithm().is_rsa() { hash } else { None };
        match h
            .authenticate_publickey(
                s.user.clone(),
                PrivateKeyWithHashAlg::new(key, hash_for_key),
            )
            .await
        {
            Ok(r) if r.success() => return Ok(()),
            Ok(_) => tried.push(format!("{} (rejected)", path.display())),
            Err(e) => {
                tried.push(format!(
                    "{} (error: {})",
                    path.display(),
                    clean(&e.to_string())
                ));
                if h.is_closed() {
                    break;
                }
            }
        }
    }
    Err(fail(ErrorKind::AuthFailed { tried }))
}

fn pub_path(p: &Path) -> PathBuf {
    let mut s = p.as_os_str().to_owned();
    s.push(".pub");
    PathBuf::from(s)
}

fn load_key(path: &Path, input: &AuthInput<'_>) -> Loaded {
    if let Ok(cache) = input.cache.keys.lock()
        && let Some(hit) = cache.get(path)
    {
        return match hit {
            Some(k) => Loaded::Key(k.clone()),
            None => Loaded::Skip("encrypted, passphrase not available".into()),
        };
    }
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) => return Loaded::Skip(format!("unreadable: {}", clean(&e.to_string()))),
    };
    let result = match russh::keys::decode_secret_key(&text, None) {
        Ok(k) => Loaded::Key(Arc::new(k)),
        Err(russh::keys::Error::KeyIsEncrypted) => {
            let why = if input.batch {
                Some("encrypted, no passphrase: batch mode")
            } else if input.prompt.is_none() {
                Some("encrypted, no passphrase: no TTY")
            } else {
                None
            };
            match (why, input.prompt) {
                (Some(why), _) => Loaded::Skip(why.into()),
                (None, None) => Loaded::Skip("encrypted".into()),
                (None, Some(prompt)) => match prompt(path) {
                    None => Loaded::Skip("encrypted, no passphrase given".into()),
                    Some(pass) => match russh::keys::decode_secret_key(&text, Some(&pass)) {
                        Ok(k) => Loaded::Key(Arc::new(k)),
                        Err(_) => Loaded::Skip("encrypted, wrong passphrase".into()),
                    },
                },
            }
        }
        Err(e) => return Loaded::Skip(format!("unreadable key: {}", clean(&e.to_string()))),
    };
    if let Ok(mut cache) = input.cache.keys.lock() {
        cache.insert(
            path.to_path_buf(),
            match &result {
                Loaded::Key(k) => Some(k.clone()),
                Loaded::Skip(_) => None,
            },
        );
    }
    result
}
