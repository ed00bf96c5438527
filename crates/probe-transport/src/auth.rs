//! User authentication: the agent first (`SSH_AUTH_SOCK` or `IdentityAgent`), then identity files.
//! Every method tried is recorded, so a failure names them all.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use russh::client::Handle;
use russh::keys::agent::client::AgentClient;
use russh::keys::{HashAlg, PrivateKey, PrivateKeyWithHashAlg, PublicKey};

use crate::PassphrasePrompt;
use crate::error::{ErrorKind, TransportError, clean};
use crate::host_key::{Client, Ended, Lost};
use crate::settings::HostSettings;

/// Keys decrypted during this `connect`, so a key used for a jump host and the target is asked
/// for once.
#[derive(Default)]
pub(crate) struct KeyCache {
    keys: Mutex<HashMap<PathBuf, Option<Arc<PrivateKey>>>>,
    /// Time spent in the passphrase prompt, which the authentication deadline does not count.
    prompt_wait: Mutex<Duration>,
}

impl KeyCache {
    /// Total time spent waiting for the user at the passphrase prompt so far.
    pub(crate) fn prompt_wait(&self) -> Duration {
        self.prompt_wait.lock().map(|d| *d).unwrap_or_default()
    }
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

/// Authenticates on `h`, agent first, then identity files. `lost` is where the connection's
/// handler writes why it ended, so a connection closed before any key was answered is not
/// reported as keys refused.
pub(crate) async fn authenticate(
    h: &mut Handle<Client>,
    s: &HostSettings,
    input: &AuthInput<'_>,
    lost: &Lost,
) -> Result<(), TransportError> {
    let hash: Option<HashAlg> = h.best_supported_rsa_hash().await.ok().flatten().flatten();
    let mut tried = Tried::default();
    if let Some(sock) = agent_socket(s)
        && with_agent(h, s, hash, &sock, lost, &mut tried).await
    {
        return Ok(());
    }
    if !h.is_closed() && with_identity_files(h, s, input, hash, lost, &mut tried).await {
        return Ok(());
    }
    let kind = if h.is_closed() && tried.refused == 0 {
        // Nothing was refused: the connection ended first (a server that closes it, a packet
        // we cannot take). Saying "rejected" here would send the user after the wrong thing.
        ErrorKind::AuthInterrupted {
            cause: interrupted(lost),
            tried: tried.lines,
        }
    } else {
        ErrorKind::AuthFailed { tried: tried.lines }
    };
    Err(TransportError::new(format!("{}@{}", s.user, s.alias), kind))
}

/// What authentication tried, one entry a method or key, and how many keys the server refused.
#[derive(Default)]
struct Tried {
    lines: Vec<String>,
    refused: usize,
}

impl Tried {
    fn push(&mut self, line: String) {
        self.lines.push(line);
    }
}

/// Why the connection ended before any key was answered, as the handler heard it.
fn interrupted(lost: &Lost) -> String {
    match lost.lock().ok().and_then(|l| l.clone()) {
        // Measured: OpenSSH's sshd sends a `Banner` file of up to ~256 KiB before it answers the
        // first key; with a larger one (up to the 1 MiB it reads) its pre-authentication process
        // ends and the connection closes.
        Some(Ended::ServerClosed) => "the server closed the connection before it answered any \
             key (OpenSSH's sshd does this when its pre-authentication Banner file is larger \
             than about 256 KiB)"
            .to_string(),
        Some(other) => format!("{other}, before the server answered any key"),
        None => "the connection closed before the server answered any key".to_string(),
    }
}

/// The entry of an attempt the connection's end cut short, and whether the server refused it:
/// a disconnect message is the server's answer (sshd at MaxAuthTries disconnects with "Too many
/// authentication failures" instead of refusing the key), a closed connection is none.
fn cut_short(lost: &Lost) -> (String, bool) {
    match lost.lock().ok().and_then(|l| l.clone()) {
        Some(Ended::ServerDisconnected(why)) => (format!("the server disconnected: {why}"), true),
        _ => ("no answer, the connection ended".to_string(), false),
    }
}

/// An attempt that got no answer because the connection was gone: russh answers one on a
/// closed connection with a failure that names no method to continue with (a server's refusal
/// names them; one that refuses and then disconnects, as after MaxAuthTries, still refused).
fn unanswered<E>(h: &Handle<Client>, r: &Result<russh::client::AuthResult, E>) -> bool {
    h.is_closed()
        && match r {
            Ok(russh::client::AuthResult::Success) => false,
            Ok(russh::client::AuthResult::Failure {
                remaining_methods, ..
            }) => remaining_methods.is_empty(),
            Err(_) => true,
        }
}

/// `IdentityAgent` (`none`: no agent), else `SSH_AUTH_SOCK`.
fn agent_socket(s: &HostSettings) -> Option<PathBuf> {
    match &s.identity_agent {
        Some(None) => None,
        Some(Some(p)) => Some(p.clone()),
        None => std::env::var_os("SSH_AUTH_SOCK")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from),
    }
}

/// First the agent's keys (with `IdentitiesOnly`, only those of the configured identity
/// files). True when one was accepted; what was tried is added to `tried`.
async fn with_agent(
    h: &mut Handle<Client>,
    s: &HostSettings,
    hash: Option<HashAlg>,
    sock: &Path,
    lost: &Lost,
    tried: &mut Tried,
) -> bool {
    let mut agent = match AgentClient::connect_uds(sock).await {
        Ok(agent) => agent,
        Err(e) => {
            tried.push(format!(
                "agent (not reachable at {}: {})",
                sock.display(),
                clean(&e.to_string())
            ));
            return false;
        }
    };
    let ids = match agent.request_identities().await {
        Ok(ids) => ids,
        Err(e) => {
            tried.push(format!("agent ({})", clean(&e.to_string())));
            return false;
        }
    };
    // The public halves of the configured identity files (for IdentitiesOnly).
    let file_publics: Vec<PublicKey> = s
        .identity_files
        .iter()
        .filter_map(|p| russh::keys::load_public_key(pub_path(p)).ok())
        .collect();
    let mut n = 0usize;
    for id in ids {
        let pk = id.public_key().into_owned();
        if s.identities_only && !file_publics.iter().any(|f| f.key_data() == pk.key_data()) {
            continue;
        }
        n += 1;
        let r = h
            .authenticate_publickey_with(s.user.clone(), pk, hash, &mut agent)
            .await;
        if unanswered(h, &r) {
            let (what, refused) = cut_short(lost);
            tried.push(format!("agent (key {n}: {what})"));
            tried.refused += usize::from(refused);
            return false;
        }
        match r {
            Ok(r) if r.success() => return true,
            Ok(_) => tried.refused += 1,
            Err(e) => {
                tried.push(format!("agent ({n} keys; {})", clean(&e.to_string())));
                return false;
            }
        }
    }
    let only = if s.identities_only {
        ", IdentitiesOnly"
    } else {
        ""
    };
    tried.push(format!(
        "agent ({n} key{}{only})",
        if n == 1 { "" } else { "s" }
    ));
    false
}

/// Then each identity file (decrypted through the prompt when encrypted). True when one was
/// accepted; what was tried is added to `tried`.
async fn with_identity_files(
    h: &mut Handle<Client>,
    s: &HostSettings,
    input: &AuthInput<'_>,
    hash: Option<HashAlg>,
    lost: &Lost,
    tried: &mut Tried,
) -> bool {
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
        let r = h
            .authenticate_publickey(
                s.user.clone(),
                PrivateKeyWithHashAlg::new(key, hash_for_key),
            )
            .await;
        if unanswered(h, &r) {
            let (what, refused) = cut_short(lost);
            tried.push(format!("{} ({what})", path.display()));
            tried.refused += usize::from(refused);
            return false;
        }
        match r {
            Ok(r) if r.success() => return true,
            Ok(_) => {
                tried.refused += 1;
                tried.push(format!("{} (rejected)", path.display()));
            }
            Err(e) => tried.push(format!(
                "{} (error: {})",
                path.display(),
                clean(&e.to_string())
            )),
        }
    }
    false
}

fn pub_path(p: &Path) -> PathBuf {
    let mut s = p.as_os_str().to_owned();
    s.push(".pub");
    PathBuf::from(s)
}

/// Calls the prompt, adding the time the user took to [`KeyCache::prompt_wait`]. On a
/// multi-threaded runtime the (blocking) prompt runs via `block_in_place`, so other hosts'
/// connections keep moving, and their timers stay honest, while the user types.
fn timed_prompt(prompt: &PassphrasePrompt, path: &Path, cache: &KeyCache) -> Option<String> {
    use tokio::runtime::{Handle, RuntimeFlavor};
    let started = Instant::now();
    let multi_thread = Handle::try_current()
        .is_ok_and(|h| matches!(h.runtime_flavor(), RuntimeFlavor::MultiThread));
    let answer = if multi_thread {
        tokio::task::block_in_place(|| prompt(path))
    } else {
        prompt(path)
    };
    if let Ok(mut d) = cache.prompt_wait.lock() {
        *d += started.elapsed();
    }
    answer
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
    let text = match crate::local_file::read_bounded_text(path, crate::local_file::CONFIG_CAP) {
        Ok(t) => t,
        Err(e) => return Loaded::Skip(format!("unreadable: {}", clean(&e.kind.to_string()))),
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
                (None, Some(prompt)) => match timed_prompt(prompt, path, input.cache) {
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

/// Tries a user gets for one key's passphrase, as OpenSSH's `NumberOfPasswordPrompts`.
const PASSPHRASE_TRIES: usize = 3;

/// Wraps `inner` so each key file's passphrase is asked for once per process, not once per
/// host: keep the returned prompt for the whole run (a fleet audit connects to many hosts with
/// the same key).
///
/// * A passphrase is checked against the key file before it is remembered; a wrong one is asked
///   again, up to 3 tries (OpenSSH's `NumberOfPasswordPrompts`).
/// * A refusal (`inner` returns `None`) or 3 wrong answers are remembered too: that key is
///   skipped for the rest of the run instead of asking again on every host.
/// * Prompts are serialised: concurrent connections waiting for the same key wait for the one
///   answer, and two prompts never interleave on the terminal.
/// * Keys are remembered by canonical path. Passphrases stay in memory for the process.
pub fn cached_prompt(inner: PassphrasePrompt) -> PassphrasePrompt {
    let answers: Mutex<HashMap<PathBuf, Option<String>>> = Mutex::new(HashMap::new());
    Arc::new(move |path: &Path| {
        let id = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
        // Held across the prompt on purpose (see above).
        let mut answers = answers
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(hit) = answers.get(&id) {
            return hit.clone();
        }
        let text = crate::local_file::read_bounded_text(path, crate::local_file::CONFIG_CAP).ok();
        let mut answer = None;
        for _ in 0..PASSPHRASE_TRIES {
            let Some(pass) = inner(path) else { break };
            // An unreadable file cannot be checked here; the caller reports it.
            let fits = text
                .as_deref()
                .is_none_or(|t| russh::keys::decode_secret_key(t, Some(&pass)).is_ok());
            if fits {
                answer = Some(pass);
                break;
            }
        }
        answers.insert(id, answer.clone());
        answer
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    fn counting(answers: Vec<Option<&'static str>>) -> (PassphrasePrompt, Arc<AtomicUsize>) {
        let calls = Arc::new(AtomicUsize::new(0));
        let seen = calls.clone();
        let prompt: PassphrasePrompt = Arc::new(move |_p: &Path| {
            let i = seen.fetch_add(1, Ordering::SeqCst);
            answers.get(i).copied().flatten().map(str::to_string)
        });
        (prompt, calls)
    }

    #[test]
    fn cached_prompt_asks_once_per_key_and_retries_wrong_answers() {
        let dir = tempfile::tempdir().unwrap();
        let k1 = probe_testkit::KeyPair::generate(dir.path(), "k1", "ed25519", "right", None);
        let k2 = probe_testkit::KeyPair::generate(dir.path(), "k2", "ed25519", "other", None);

        // Wrong, then right: asked twice, then never again for that key.
        let (inner, calls) = counting(vec![Some("wrong"), Some("right"), Some("other")]);
        let prompt = cached_prompt(inner);
        assert_eq!(prompt(&k1.private).as_deref(), Some("right"));
        assert_eq!(calls.load(Ordering::SeqCst), 2);
        for _ in 0..5 {
            assert_eq!(prompt(&k1.private).as_deref(), Some("right"));
        }
        // The same file under another spelling is the same key.
        let other_spelling = dir.path().join(".").join("k1");
        assert_eq!(prompt(&other_spelling).as_deref(), Some("right"));
        assert_eq!(calls.load(Ordering::SeqCst), 2);
        // Another key is asked for separately.
        assert_eq!(prompt(&k2.private).as_deref(), Some("other"));
        assert_eq!(calls.load(Ordering::SeqCst), 3);
        assert_eq!(prompt(&k2.private).as_deref(), Some("other"));
        assert_eq!(calls.load(Ordering::SeqCst), 3);
    }

    #[test]
    fn cached_prompt_remembers_refusals_and_gives_up_after_three_wrong() {
        let dir = tempfile::tempdir().unwrap();
        let k = probe_testkit::KeyPair::generate(dir.path(), "k", "ed25519", "right", None);
        let (inner, calls) = counting(vec![None, Some("right")]);
        let prompt = cached_prompt(inner);
        assert_eq!(prompt(&k.private), None);
        assert_eq!(prompt(&k.private), None);
        assert_eq!(calls.load(Ordering::SeqCst), 1);

        let (inner, calls) = counting(vec![Some("a"), Some("b"), Some("c"), Some("right")]);
        let prompt = cached_prompt(inner);
        assert_eq!(prompt(&k.private), None);
        assert_eq!(calls.load(Ordering::SeqCst), 3);
        assert_eq!(prompt(&k.private), None);
        assert_eq!(calls.load(Ordering::SeqCst), 3);
    }
}
