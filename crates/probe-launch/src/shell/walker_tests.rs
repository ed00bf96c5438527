//! The walker, case by case: each script with the simple commands it runs and their context, one
//! command per line, against an inline insta snapshot. After a deliberate change,
//! `INSTA_FORCE_PASS=1 cargo test -p probe-launch --lib shell` runs every case to its end and
//! leaves the new texts in `.walker_tests.rs.pending-snap` beside this file; `cargo insta accept`
//! writes them in. Only cargo-insta rewrites inline snapshots (`INSTA_UPDATE=always` also just
//! writes that file); without it, copy each new text from its failure's diff. Review the diff
//! either way.

use super::state::State;
use super::walker::{ShellCommand, commands};

fn show(c: &ShellCommand) -> String {
    let mut s: Vec<String> = c
        .argv
        .iter()
        .map(|a| {
            if a.is_empty() || a.contains(char::is_whitespace) {
                format!("{a:?}")
            } else {
                a.clone()
            }
        })
        .collect();
    for (k, v) in &c.prefix_env {
        s.push(format!("[env {k}={v}]"));
    }
    for (k, v) in c.exported.iter() {
        s.push(format!("[export {k}={v}]"));
    }
    if let Some(d) = &c.cwd {
        s.push(format!("[cwd {d}]"));
    }
    if !c.context_wrappers.is_empty() {
        s.push(format!("[in {}]", c.context_wrappers.join(",")));
    }
    if let Some(v) = &c.venv {
        s.push(format!("[venv {v}]"));
    }
    for (op, t) in &c.redirects {
        s.push(format!("[{op} {t}]"));
    }
    for t in &c.tee {
        s.push(format!("[tee {t}]"));
    }
    for w in &c.when {
        s.push(format!("[{w}]"));
    }
    for n in &c.undecided {
        s.push(format!("[{n}]"));
    }
    s.join(" ")
}

fn render(text: &str) -> String {
    let mut st = State::default();
    let shown: Vec<String> = commands(text, &mut st, 0).iter().map(show).collect();
    shown.join("\n")
}

macro_rules! check {
    ($text:expr, @$expected:literal $(,)?) => {
        insta::assert_snapshot!(render($text), @$expected)
    };
}

#[test]
fn assignments_and_parameters() {
    check!(
        "port=8082\nm=$1\nx=\"${HOST:-0.0.0.0}\"\np=/a/b/c.gguf\nrun --port $port --m ${m} --h \"${x}\" --f ${p##*/} --d ${p%/*} --e $ENV",
        @"run --port 8082 --m $1 --h ${HOST:-0.0.0.0} --f c.gguf --d /a/b --e $ENV",
    );
}

#[test]
fn control_flow() {
    check!(
        "dp=1\nwhile true; do\n case $1 in\n --dp) dp=$2; shift 2;;\n esac\ndone\nif [ -n \"$X\" ]; then\n  A=first\nelse\n  A=second\nfi\nrun --dp $dp --a $A --n $((dp * 2))",
        @r#"
            shift 2 [in a loop] [when $1 = --dp]
            run --dp $dp --a $A --n "$((dp * 2))" [$A is unknown: the text does not decide between first otherwise; second unless -n $X]"#,
    );
    check!(
        "start() {\n  vllm serve m\n}\nstart",
        @"vllm serve m",
    );
}

#[test]
fn values_the_text_does_not_decide() {
    // One value per arm of a `case` on `$1`: kept as written, with the reason; arms never mix.
    check!(
        "case \"$1\" in\n  small) M=q7; TP=1 ;;\n  large) M=q72; TP=4 ;;\nesac\nrun $M --tp $TP",
        @"run $M --tp $TP [$M is unknown: the text does not decide between q7 when $1 = small; q72 when $1 = large] [$TP is unknown: the text does not decide between 1 when $1 = small; 4 when $1 = large]",
    );
    // Every arm that may run sets the same value, one of them always runs: that value.
    check!(
        "case $GPU in\n  a100) P=8000 ;;\n  h100) P=8000 ;;\n  *) P=8000 ;;\nesac\nif [ -n \"$X\" ]; then Q=1; else Q=1; fi\nrun --port $P --q $Q",
        @"run --port 8000 --q 1",
    );
    // Pieces of the command line set in arms: one reading per arm, never two arms at once.
    check!(
        "case $1 in\n  a) X=\"--x 1\"; Y=\"--y 1\" ;;\n  b) X=\"--x 2\"; Y=\"--y 2\" ;;\nesac\nrun $X $Y",
        @r#"
            run --x 1 --y 1 [when $1 = a]
            run --x 2 --y 2 [when $1 = b]"#,
    );
    // Read where the branch that set it holds, the value is that branch's.
    check!(
        "M=a\nf() {\n  M=$1\n  run $M\n}\n[ -n \"$X\" ] && f b\nrun2 $M",
        @r#"
            run b [when -n $X]
            run2 $M [$M is unknown: the text does not decide between a otherwise; b when -n $X]"#,
    );
    // A program over several lines is no value: what it prints is kept as the variable, and
    // the note says whose output it is.
    check!(
        "N=$(python3 -c \"\nimport torch\nprint(torch.cuda.device_count())\n\")\nrun --tp $N",
        @r#"run --tp $N [$N is unknown: it is what $(python3 -c " … ) prints, which the text does not hold]"#,
    );
}

#[test]
fn conda_environments() {
    check!("source /opt/miniconda3/bin/activate vllm\nrun", @"run [in conda] [venv vllm]");
    check!("source ~/anaconda3/envs/sg/bin/activate\nrun", @"run [in conda] [venv ~/anaconda3/envs/sg]");
    check!("source activate llm\nrun", @"run [in conda] [venv llm]");
    check!("source /srv/.venv/bin/activate\nrun", @"run [in venv] [venv /srv/.venv]");
}

#[test]
fn builtins_change_the_context() {
    check!(
        "export CUDA_VISIBLE_DEVICES=0,1\ncd /srv\nsource .venv/bin/activate\nconda activate llm\nset -gx HF_HOME /data/hf\nunset CUDA_VISIBLE_DEVICES\nCUDA_LAUNCH_BLOCKING=1 python -m x",
        @"python -m x [env CUDA_LAUNCH_BLOCKING=1] [export HF_HOME=/data/hf] [cwd /srv] [in venv,conda] [venv llm]",
    );
    check!(
        "MODEL ?= a/b\nPORT := 8000\nrun $(MODEL) --port $(PORT)",
        @"run a/b --port 8000",
    );
}

#[test]
fn commands_in_variables() {
    check!(
        "CMD=\"vllm serve \\\n  m --tp 2\"\neval \"$CMD\"\n$CMD > out.log 2>&1\nbash -c \"$CMD\" &",
        @r#"
            vllm serve m --tp 2 [in eval]
            vllm serve m --tp 2 [> out.log]
            bash -c "vllm serve   m --tp 2""#,
    );
    check!(
        "read -r -d '' CMD <<'EOF'\nvllm serve $M \\\n  --tp 2\nEOF\neval \"$CMD\"",
        @"vllm serve $M --tp 2 [in eval]",
    );
    check!(
        "M=x/y\nread -r A B <<< \"one $M three\"\nCMD=$(cat <<EOF\nsrv --model $M\nEOF\n)\nrun $A $B\n$CMD",
        @r#"
            run one x/y three
            srv --model x/y"#,
    );
    check!("read CMD\n$CMD", @"$CMD");
}

#[test]
fn redirections_tee_and_files() {
    check!(
        "cat > ./a.yml <<EOF\nk: v\nEOF\nnohup srv > out.log 2>&1 &\nsrv2 2>&1 | tee -a t.log\nsrv3 &>> all.log 3> fd3.log",
        @r#"
            cat [> ./a.yml]
            nohup srv [> out.log]
            srv2 [tee t.log]
            srv3 [&>> all.log]"#,
    );
}

#[test]
fn arrays() {
    check!(
        "N=\"${N:-3}\"\nA=(\n \"m\"\n --x 1\n)\nif (( N > 0 )); then\n A+=(--j '{\"n\":'\"${N}\"'}')\nfi\nexec run \"${A[@]}\"",
        @r#"exec run m --x 1 --j {"n":${N:-3}}"#,
    );
}

/// An unquoted value's words: blanks inside a substitution held as written are no word
/// boundary (`(value, words)`).
#[test]
fn value_words_keep_substitutions_whole() {
    use super::expand::value_words;
    let cases: &[(&str, &[&str])] = &[
        (" --tp 2  --port 8000 ", &["--tp", "2", "--port", "8000"]),
        (
            "--max-model-len $(grep x $f | cut -d: -f2) --tp 2",
            &["--max-model-len", "$(grep x $f | cut -d: -f2)", "--tp", "2"],
        ),
        ("a ${X:-b c} d", &["a", "${X:-b c}", "d"]),
        ("a `nproc --all` b", &["a", "`nproc --all`", "b"]),
        ("$(a $(b c) d) e", &["$(a $(b c) d)", "e"]),
        ("x=$((1 + 2)) y", &["x=$((1 + 2))", "y"]),
        // Unbalanced: the rest is one word.
        ("--m $(never closed x y", &["--m", "$(never closed x y"]),
        ("(a b) {c d}", &["(a", "b)", "{c", "d}"]),
    ];
    for (value, want) in cases {
        assert_eq!(value_words(value), *want, "{value}");
    }
}

proptest::proptest! {
    /// Without `$` or a backquote a value splits exactly on blanks; with them, no text is lost
    /// or invented: the words, in order, are the value's non-blank runs.
    #[test]
    fn value_words_split_like_the_shell(v in "[ a-z$(){}`|:-]{0,80}") {
        let words = super::expand::value_words(&v);
        if !v.contains('$') && !v.contains('`') {
            proptest::prop_assert_eq!(words.clone(), v.split_whitespace().collect::<Vec<_>>());
        }
        let joined: String = words.concat();
        let squeezed: String = v.split_whitespace().collect();
        proptest::prop_assert_eq!(joined.replace(char::is_whitespace, ""), squeezed);
        for w in &words {
            proptest::prop_assert!(!w.is_empty());
        }
    }
}
