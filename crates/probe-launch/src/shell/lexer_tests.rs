//! The lexer, case by case: each input with its tokens, one per line, against an inline insta
//! snapshot. After a deliberate change, `INSTA_FORCE_PASS=1 cargo test -p probe-launch --lib shell`
//! runs every case to its end and leaves the new texts in `.lexer_tests.rs.pending-snap` beside
//! this file; `cargo insta accept` writes them in. Only cargo-insta rewrites inline snapshots
//! (`INSTA_UPDATE=always` also just writes that file); without it, copy each new text from its
//! failure's diff. Review the diff either way.

use super::lexer::{Part, Tok, Word, lex};

fn word(w: &Word) -> String {
    let mut s: Vec<String> = w
        .parts
        .iter()
        .map(|p| match p {
            Part::Lit(t, false) => t.clone(),
            Part::Lit(t, true) => format!("'{t}'"),
            Part::Var { name, op, .. } => match op {
                Some(op) => format!("var({name} {op})"),
                None => format!("var({name})"),
            },
            Part::Cmd(raw, _) => format!("cmd({raw})"),
            Part::Arith(raw, _) => format!("arith({raw})"),
        })
        .collect();
    if let Some(items) = &w.array {
        s.push(format!(
            "array[{}]",
            items.iter().map(word).collect::<Vec<_>>().join(", ")
        ));
    }
    s.join(" + ")
}

fn render(text: &str) -> String {
    lex(text)
        .iter()
        .map(|t| match t {
            Tok::Word(w) => format!("word {}", word(w)),
            Tok::Op(op) => format!("op {op:?}"),
            Tok::Redir(fd, op, w) => match fd {
                Some(fd) => format!("redir {fd}{} {}", op.as_str(), word(w)),
                None => format!("redir {} {}", op.as_str(), word(w)),
            },
            Tok::Heredoc(h) => format!("heredoc expands={} {:?}", h.expands, h.body),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

macro_rules! check {
    ($text:expr, @$expected:literal $(,)?) => {
        insta::assert_snapshot!(render($text), @$expected)
    };
}

#[test]
fn words_and_quotes() {
    check!(
        r#"vllm serve "a b" 'c d' e\ f"#,
        @r#"
            word vllm
            word serve
            word 'a b'
            word 'c d'
            word e + ' ' + f"#,
    );
    check!(
        r#"--json '{"n":'"${N}"'}'"#,
        @r#"
            word --json
            word '{"n":' + var(N) + '' + '}'"#,
    );
    check!(
        "unterminated 'quote",
        @r#"
        word unterminated
        word 'quote'"#,
    );
}

#[test]
fn operators() {
    check!(
        "a && b || c; d & e | f |& g ;; (h)\n",
        @r#"
            word a
            op And
            word b
            op Or
            word c
            op Semi
            word d
            op Background
            word e
            op Pipe
            word f
            op PipeAll
            word g
            op CaseEnd
            op Open
            word h
            op Close
            op Newline"#,
    );
}

#[test]
fn continuations_and_comments() {
    check!(
        "python -m x \\\n  --a 1 # note\n--b",
        @r#"
            word python
            word -m
            word x
            word --a
            word 1
            op Newline
            word --b"#,
    );
    check!(
        "a \\\r\nb",
        @r#"
        word a
        word b"#,
    );
}

#[test]
fn expansions() {
    check!(
        "$A ${B:-x} ${C##*/} $1 $(basename $D) `date` $((N * 2)) ${ARR[@]}",
        @r#"
            word var(A)
            word var(B :-x)
            word var(C ##*/)
            word var(1)
            word cmd($(basename $D))
            word cmd(`date`)
            word arith($((N * 2)))
            word var(ARR [@])"#,
    );
}

#[test]
fn redirections() {
    check!(
        "srv > out.log 2>&1 &>> all.log >| f < in <<< \"$X\" 3<&-",
        @r#"
            word srv
            redir > out.log
            redir 2> &1
            redir &>> all.log
            redir > f
            redir < in
            redir <<< var(X) + ''
            redir 3< &-"#,
    );
}

#[test]
fn heredocs() {
    check!(
        "cat > a.yml <<EOF\nk: $V\nEOF\nread -r -d '' CMD <<'END'\nvllm serve \\\n  m\nEND\n",
        @r#"
            word cat
            redir > a.yml
            redir << EOF
            heredoc expands=true "k: $V\n"
            op Newline
            word read
            word -r
            word -d
            word ''
            word CMD
            redir << 'END'
            heredoc expands=false "vllm serve \\\n  m\n"
            op Newline"#,
    );
    check!(
        "cat <<-EOF\n\tindented\n\tEOF\nnext",
        @r#"
            word cat
            redir << EOF
            heredoc expands=true "\tindented\n"
            op Newline
            word next"#,
    );
}

#[test]
fn arrays_and_markers() {
    check!(
        "A=(m --x 1) B+=(\"q r\") --api-key <redacted:c457ccd7>",
        @r#"
            word A= + array[m, --x, 1]
            word B+= + array['q r']
            word --api-key
            word '<redacted:c457ccd7>'"#,
    );
}
