//! Where the commands of a shell text write their output: a cron line, a timer's `ExecStart=`,
//! a script that saves a server's output (`docker logs vllm >> /var/log/llm/vllm-$(date +%F).log`,
//! `journalctl -u vllm | tee -a ...`, `--log-file ...`, `-o ...`). Read with the same shell
//! reader as every launch text (`shell`), on one bounded budget; nothing is run.

use std::collections::BTreeMap;

use crate::shell;

/// One simple command of a text and the files its output goes to.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WritingCommand {
    /// The command's words, expanded as far as the text fixes them (`$(date +%F)` stays as
    /// written).
    pub argv: Vec<String>,
    /// Files written: `>`/`>>` (stdout or stderr), `| tee [-a] FILE`, and the value of
    /// `--log-file`, `--output`/`-o` (when it is a path), in that order, each once.
    pub targets: Vec<String>,
}

/// Options whose value is a file the command writes its output or log to.
const FILE_OPTIONS: &[&str] = &["--log-file", "--logfile", "--output", "-o", "--output-file"];

/// Shells nested in shells (`sh -c '...'`) read at most this deep.
const MAX_NESTED: usize = 3;

/// The commands of `text` that write their output to a file (see [`WritingCommand`]); the
/// script of a `sh -c '...'` is read too.
pub fn writing_commands(text: &str) -> Vec<WritingCommand> {
    writing_commands_at(text, 0)
}

fn writing_commands_at(text: &str, depth: usize) -> Vec<WritingCommand> {
    let mut end = text.len().min(crate::hints::MAX_TEXT);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let text = text.get(..end).unwrap_or("");
    let budget = crate::work::budget_of(text.len(), &BTreeMap::new());
    let mut st = shell::State {
        budget,
        ..Default::default()
    };
    let mut out: Vec<WritingCommand> = Vec::new();
    for c in shell::commands(text, &mut st, 0) {
        let mut targets: Vec<String> = Vec::new();
        let mut push = |t: &str| {
            let t = t.trim();
            if !t.is_empty() && !targets.iter().any(|x| x == t) {
                targets.push(t.to_string());
            }
        };
        for (_, t) in &c.redirects {
            push(t);
        }
        for t in &c.tee {
            push(t);
        }
        let shell = c.argv.first().map(|a| a.rsplit('/').next().unwrap_or(a));
        if matches!(shell, Some("sh" | "bash" | "dash" | "zsh" | "ash"))
            && depth < MAX_NESTED
            && let Some(at) = c.argv.iter().position(|a| a == "-c")
            && let Some(script) = c.argv.get(at + 1)
        {
            // The redirections of the shell itself apply to every command of its script.
            let mut inner = writing_commands_at(script, depth + 1);
            for i in &mut inner {
                for t in &targets {
                    if !i.targets.contains(t) {
                        i.targets.push(t.clone());
                    }
                }
            }
            out.extend(inner);
            continue;
        }
        let mut words = c.argv.iter().skip(1).peekable();
        while let Some(w) = words.next() {
            let (name, inline) = match w.split_once('=') {
                Some((n, v)) if n.starts_with("--") => (n, Some(v.to_string())),
                _ => (w.as_str(), None),
            };
            if !FILE_OPTIONS.contains(&name) {
                continue;
            }
            let value = inline.or_else(|| words.peek().map(|v| (*v).clone()));
            // `-o`/`--output` name a file only as a path (`journalctl -o short-iso` is a format).
            if let Some(v) = value.filter(|v| v.starts_with('/') || name.contains("log")) {
                push(&v);
            }
        }
        if !targets.is_empty() {
            out.push(WritingCommand {
                argv: c.argv,
                targets,
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_of_redirections_tee_and_options() {
        /// (text, (argv[0], targets) of each command found)
        type Case<'a> = (&'a str, &'a [(&'a str, &'a [&'a str])]);
        let cases: &[Case] = &[
            (
                "docker logs --since 24h vllm-server >> /var/log/llm/vllm-$(date +%F).log 2>&1",
                &[("docker", &["/var/log/llm/vllm-$(date +%F).log"])],
            ),
            (
                "journalctl -u vllm.service --since yesterday -o short-iso | tee -a /srv/logs/vllm.log >/dev/null",
                &[("journalctl", &["/srv/logs/vllm.log"])],
            ),
            (
                "D=/var/log/keep; docker logs llm-vllm-1 > \"$D/vllm.$(date +%Y%m%d).log\"",
                &[("docker", &["/var/log/keep/vllm.$(date +%Y%m%d).log"])],
            ),
            (
                "vllm serve m --port 8000 --log-file /var/log/vllm/serve.log",
                &[("vllm", &["/var/log/vllm/serve.log"])],
            ),
            (
                "kubectl logs pod/vllm-0 -o /tmp/x",
                &[("kubectl", &["/tmp/x"])],
            ),
            ("journalctl -u vllm -o short-iso", &[]),
            ("echo hi", &[]),
        ];
        for (text, want) in cases {
            let got = writing_commands(text);
            let got: Vec<(String, Vec<String>)> = got
                .into_iter()
                .map(|c| (c.argv.first().cloned().unwrap_or_default(), c.targets))
                .collect();
            let want: Vec<(String, Vec<String>)> = want
                .iter()
                .map(|(a, t)| {
                    (
                        (*a).to_string(),
                        t.iter().map(|s| (*s).to_string()).collect(),
                    )
                })
                .collect();
            assert_eq!(got, want, "{text}");
        }
    }

    #[test]
    fn hostile_text_is_bounded() {
        let big = "docker logs x >> /a/$(date).log\n".repeat(100_000);
        let got = writing_commands(&big);
        assert!(got.len() <= 100_000);
        assert!(writing_commands("\0\u{202e}$((((((").is_empty());
    }
}
