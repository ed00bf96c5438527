//! The commands of a script cron or a service runs that write a server's output, read whole by
//! the launch texts' shell reader (so `DIR=/var/log/x` and `"$DIR/vllm-$DAY.log"` a few lines
//! on are one path), each with the line it is on where a line names its program and first
//! argument.

use probe_launch::{WritingCommand, writing_commands};

use super::PlaceText;
use crate::config::PlaceKind;

/// Lines of one script looked through at most for a command's line.
const MAX_LINES: usize = 2_000;

/// The commands of `text` that write their output to files, each with its line (1-based) if
/// one line names its program and first argument.
pub fn writes(text: &str) -> Vec<(Option<usize>, WritingCommand)> {
    writing_commands(text)
        .into_iter()
        .map(|w| (line_of(text, &w.argv), w))
        .collect()
}

fn line_of(text: &str, argv: &[String]) -> Option<usize> {
    let prog = argv.first()?;
    let prog = prog.rsplit('/').next().unwrap_or(prog);
    let first = argv.get(1);
    text.lines()
        .take(MAX_LINES)
        .position(|l| {
            let words: Vec<&str> = l.split_whitespace().collect();
            !l.trim_start().starts_with('#')
                && words
                    .iter()
                    .any(|w| w.rsplit('/').next().unwrap_or(w) == prog)
                && first.is_none_or(|a| words.contains(&a.as_str()))
        })
        .map(|i| i + 1)
}

/// What runs the script at `path`: the first cron, crontab or service line naming it
/// (`cron:/etc/cron.d/llm-logs line 3`), or the run-parts directory it is in.
pub fn runner(path: &str, texts: &[PlaceText]) -> Option<String> {
    let names = |l: &str| {
        l.split(|c: char| c.is_whitespace() || "'\";=".contains(c))
            .any(|w| w == path)
    };
    texts
        .iter()
        .filter(|t| {
            matches!(
                t.kind,
                PlaceKind::Cron | PlaceKind::Crontab | PlaceKind::Service
            )
        })
        .find_map(|t| {
            let no = t.text.lines().take(MAX_LINES).position(names)?;
            Some(format!("{}:{} line {}", t.kind.as_str(), t.path, no + 1))
        })
        .or_else(|| {
            let dir = path.rsplit_once('/')?.0;
            dir.starts_with("/etc/cron.")
                .then(|| format!("run-parts of {dir}"))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// (script, (line, argv[0], targets) of each command that writes)
    #[test]
    fn a_scripts_writes_with_its_own_values_and_lines() {
        type Case<'a> = (&'a str, &'a [(Option<usize>, &'a str, &'a [&'a str])]);
        let cases: &[Case] = &[
            (
                "#!/bin/sh\nDIR=/var/log/llm\nDAY=$(date +%F)\ndocker logs vllm >> \"$DIR/vllm-$DAY.log\"\n",
                &[(Some(4), "docker", &["/var/log/llm/vllm-$(date +%F).log"])],
            ),
            (
                "export OUT=\"/srv/out\"\nset -eu\njournalctl -u vllm \\\n  --since yesterday > ${OUT}/j.log\n",
                &[(Some(3), "journalctl", &["/srv/out/j.log"])],
            ),
            (
                "# docker logs c > /x\ndocker logs c > /var/log/c/c.log\n",
                &[(Some(2), "docker", &["/var/log/c/c.log"])],
            ),
            ("echo hi\n", &[]),
        ];
        for (text, want) in cases {
            let got: Vec<(Option<usize>, String, Vec<String>)> = writes(text)
                .into_iter()
                .map(|(n, w)| (n, w.argv[0].clone(), w.targets))
                .collect();
            let want: Vec<(Option<usize>, String, Vec<String>)> = want
                .iter()
                .map(|(n, a, t)| {
                    (
                        *n,
                        (*a).to_string(),
                        t.iter().map(|s| s.to_string()).collect(),
                    )
                })
                .collect();
            assert_eq!(got, want, "{text:?}");
        }
    }
}
