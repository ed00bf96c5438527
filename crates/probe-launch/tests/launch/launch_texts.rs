//! Launch texts as people really write them, case by case (rust-analyzer style): a command kept in
//! a variable (a string, a here-document, `read -d ''`) and run with `eval`, `$CMD`, `sh -c`,
//! `nohup ... &`; a command pasted into Markdown (fenced blocks, inline backticks, `$ ` and `# `
//! prompts, the program's output, prose around it). Each case shows what the first launch read,
//! against an inline insta snapshot. After a deliberate change, `INSTA_FORCE_PASS=1 cargo test -p
//! probe-launch --test launch launch_texts` runs every case to its end and leaves the new texts in
//! `.launch_texts.rs.pending-snap` beside this file; `cargo insta accept` writes them in. Only
//! cargo-insta rewrites inline snapshots (`INSTA_UPDATE=always` also just writes that file);
//! without it, copy each new text from its failure's diff. Review the diff either way.
use probe_launch::common::common_fields;
use probe_launch::{ParseHints, reconstruct};

fn render(text: &str) -> String {
    let launches = reconstruct(text, &ParseHints::default());
    let Some(l) = launches.first() else {
        return "no launch".into();
    };
    let mut out = vec![
        format!("launches: {}", launches.len()),
        format!("engine: {}", l.engine),
        format!("wrappers: {}", l.wrappers.join(" > ")),
    ];
    if !l.log_files.is_empty() {
        out.push(format!("logs: {}", l.log_files.join(", ")));
    }
    out.push(format!("fields: {}", common_fields(l)));
    out.join("\n")
}

macro_rules! check {
    ($text:expr, @$expected:literal $(,)?) => {
        insta::assert_snapshot!(render($text), @$expected)
    };
}

#[test]
fn command_in_a_string_run_with_eval() {
    check!(
        "CMD=\"python -m sglang.launch_server --model-path Qwen/Qwen2.5-7B --tp 2 --port 30000\"\neval \"$CMD\"\n",
        @r#"
            launches: 1
            engine: sglang
            wrappers: eval
            fields: {"engine":"sglang","model":"Qwen/Qwen2.5-7B","tensor_parallel":2,"port":30000,"wrapper":"eval"}"#,
    );
    check!(
        "MODEL=meta-llama/Llama-3.1-8B\nCMD=\"vllm serve $MODEL --port 8001\"\nCMD+=\" --max-model-len 8192\"\neval $CMD\n",
        @r#"
            launches: 1
            engine: vllm
            wrappers: eval
            fields: {"engine":"vllm","model":"meta-llama/Llama-3.1-8B","port":8001,"context_length":8192,"wrapper":"eval"}"#,
    );
}

#[test]
fn command_in_a_string_run_as_a_word() {
    check!(
        "CMD=\"python -m sglang.launch_server --model-path Qwen/Qwen2.5-7B --tp 2\"\nnohup $CMD > server.log 2>&1 &\n",
        @r#"
            launches: 1
            engine: sglang
            wrappers: nohup
            logs: server.log
            fields: {"engine":"sglang","model":"Qwen/Qwen2.5-7B","tensor_parallel":2,"wrapper":"nohup"}"#,
    );
    check!(
        "CMD=\"vllm serve m --port 8000\"\nexec $CMD\n",
        @r#"
            launches: 1
            engine: vllm
            wrappers: 
            fields: {"engine":"vllm","model":"m","port":8000}"#,
    );
}

#[test]
fn command_in_a_heredoc() {
    check!(
        "PORT=30000\nCMD=$(cat <<EOF\npython -m sglang.launch_server --model-path Qwen/Qwen2.5-7B \\\n  --tp 2 --port $PORT\nEOF\n)\neval \"$CMD\"\n",
        @r#"
            launches: 1
            engine: sglang
            wrappers: eval
            fields: {"engine":"sglang","model":"Qwen/Qwen2.5-7B","tensor_parallel":2,"port":30000,"wrapper":"eval"}"#,
    );
    check!(
        "read -r -d '' CMD <<'EOF'\nvllm serve meta-llama/Llama-3.1-8B --tensor-parallel-size 4 \\\n  --port 8001\nEOF\nnohup sh -c \"$CMD\" > /var/log/v.log 2>&1 &\n",
        @r#"
            launches: 1
            engine: vllm
            wrappers: nohup > sh -c
            logs: /var/log/v.log
            fields: {"engine":"vllm","model":"meta-llama/Llama-3.1-8B","tensor_parallel":4,"port":8001,"wrapper":"nohup"}"#,
    );
    check!(
        "read -r CMD <<< \"vllm serve m --port 8002\"\n$CMD\n",
        @r#"
            launches: 1
            engine: vllm
            wrappers: 
            fields: {"engine":"vllm","model":"m","port":8002}"#,
    );
    check!(
        "cat > cmd.txt <<EOF\nvllm serve m --port 8003\nEOF\nCMD=$(cat cmd.txt)\nbash -c \"$CMD\"\n",
        @r#"
            launches: 1
            engine: vllm
            wrappers: bash -c
            fields: {"engine":"vllm","model":"m","port":8003,"wrapper":"bash -c"}"#,
    );
}

#[test]
fn nohup_sh_c_with_the_command_inline() {
    check!(
        "nohup sh -c \"python3 -m sglang.launch_server --model-path /m --port 30001\" > sg.log 2>&1 &",
        @r#"
            launches: 1
            engine: sglang
            wrappers: nohup > sh -c
            logs: sg.log
            fields: {"engine":"sglang","model":"/m","port":30001,"wrapper":"nohup"}"#,
    );
}

#[test]
fn nested_evals_are_bounded() {
    check!("A='eval $A $A'\neval $A\n", @"no launch");
    // A value that doubles on every line stops being followed at the cap, not at 2^28 bytes.
    let text = format!(
        "X=x\n{}vllm serve m --served-model-name \"$X\" --port 8000\n",
        "X=$X$X\n".repeat(28)
    );
    let shown = render(&text);
    assert!(shown.contains("\"port\":8000"), "{shown}");
    assert!(shown.len() < 200_000, "{} bytes", shown.len());
}

#[test]
fn fenced_block_with_prompts_and_output() {
    check!(
        "# Runbook: restart the inference server\n\nSSH to the box and run:\n\n```bash\n$ export CUDA_VISIBLE_DEVICES=0,1\n$ python -m sglang.launch_server \\\n    --model-path Qwen/Qwen2.5-7B \\\n    --tp 2 --port 30000\n[2025-01-01 10:00:00] server_args=ServerArgs(...)\n```\n\nThen check with `curl localhost:30000/health`.\n",
        @r#"
            launches: 1
            engine: sglang
            wrappers: 
            fields: {"engine":"sglang","model":"Qwen/Qwen2.5-7B","tensor_parallel":2,"port":30000,"env":{"CUDA_VISIBLE_DEVICES":"0,1"}}"#,
    );
    check!(
        "It's slow since Tuesday. Launch:\n\n~~~sh\nvllm serve meta-llama/Llama-3.1-8B \\\n  --max-model-len 8192 --port 8001\n~~~\n",
        @r#"
            launches: 1
            engine: vllm
            wrappers: 
            fields: {"engine":"vllm","model":"meta-llama/Llama-3.1-8B","port":8001,"context_length":8192}"#,
    );
    check!(
        "1. Start it:\n\n   ```\n   (venv) user@gpu01:~/srv$ vllm serve /models/m --tensor-parallel-size 8\n   INFO 05-01 12:00:00 api_server.py:1 vLLM API server version 0.10.1\n   ```\n",
        @r#"
            launches: 1
            engine: vllm
            wrappers: 
            fields: {"engine":"vllm","model":"/models/m","tensor_parallel":8}"#,
    );
}

#[test]
fn root_prompt_in_a_block() {
    check!(
        "As root:\n\n```console\n# export VLLM_USE_V1=1\n# vllm serve /models/m --port 8000\n```\n",
        @r#"
            launches: 1
            engine: vllm
            wrappers: 
            fields: {"engine":"vllm","model":"/models/m","port":8000,"env":{"VLLM_USE_V1":"1"}}"#,
    );
    // A commented-out alternative next to the real command is a comment.
    check!(
        "```bash\n# vllm serve /models/m --tensor-parallel-size 4\nvllm serve /models/m --tensor-parallel-size 8\n```\n",
        @r#"
            launches: 1
            engine: vllm
            wrappers: 
            fields: {"engine":"vllm","model":"/models/m","tensor_parallel":8}"#,
    );
}

#[test]
fn inline_backticks_in_prose() {
    check!(
        "Ticket #123: after the upgrade we start it with `vllm serve meta-llama/Llama-3.1-8B --port 8001 --max-model-len 8192` and throughput fell.",
        @r#"
            launches: 1
            engine: vllm
            wrappers: 
            fields: {"engine":"vllm","model":"meta-llama/Llama-3.1-8B","port":8001,"context_length":8192}"#,
    );
    check!(
        "Use ``CUDA_VISIBLE_DEVICES=0 python3 -m sglang.launch_server --model-path /m --tp 1`` (see `--tp`).",
        @r#"
            launches: 1
            engine: sglang
            wrappers: 
            fields: {"engine":"sglang","model":"/m","tensor_parallel":1,"env":{"CUDA_VISIBLE_DEVICES":"0"}}"#,
    );
}

#[test]
fn a_launcher_named_in_a_sentence_is_no_launch() {
    // A span that only names the program, inside running prose: a mention, nothing to run.
    check!(
        "I start the server with `vllm serve` and then run the benchmark against it.",
        @r#"no launch"#,
    );
    check!(
        "Please run `python -m sglang.launch_server` first, then `llama-server` on the other box.",
        @r#"no launch"#,
    );
    // The same sentence with a whole command in the span: a launch.
    check!(
        "I start the server with `vllm serve Qwen/Qwen3-8B -tp 2` and then run the benchmark.",
        @r#"
            launches: 1
            engine: vllm
            wrappers: 
            fields: {"engine":"vllm","model":"Qwen/Qwen3-8B","tensor_parallel":2}"#,
    );
    // A mention in the prose does not hide the command in the fenced block below it.
    check!(
        "Running `vllm serve` in the background needs `nohup`:\n\n```bash\nnohup vllm serve Qwen/Qwen3-8B --port 8001 > vllm.log 2>&1 &\n```\n",
        @r#"
            launches: 1
            engine: vllm
            wrappers: nohup
            logs: vllm.log
            fields: {"engine":"vllm","model":"Qwen/Qwen3-8B","port":8001,"wrapper":"nohup"}"#,
    );
    // A bare command in a block, or on a line of its own, is code, not a mention.
    check!(
        "Then:\n\n```\nvllm serve\n```\n",
        @r#"
            launches: 1
            engine: vllm
            wrappers: 
            fields: {"engine":"vllm"}"#,
    );
    check!(
        "Then start it:\n`vllm serve`\n",
        @r#"
            launches: 1
            engine: vllm
            wrappers: 
            fields: {"engine":"vllm"}"#,
    );
}

#[test]
fn command_between_sentences() {
    check!(
        "Hi team, it's slower since the upgrade. We run:\n\npython -m sglang.launch_server --model-path Qwen/Qwen2.5-7B --tp 2 \\\n  --port 30000\n\nand it used to do 70 tok/s.\n",
        @r#"
            launches: 1
            engine: sglang
            wrappers: 
            fields: {"engine":"sglang","model":"Qwen/Qwen2.5-7B","tensor_parallel":2,"port":30000}"#,
    );
}

#[test]
fn unquoted_substitution_is_an_unknown_number_of_words() {
    // Its output is not in the text: no model is made of it, the options around it still count.
    check!(
        "vllm serve $(cat /etc/vllm/args) --port 8000\n",
        @r#"
            launches: 1
            engine: vllm
            wrappers: 
            fields: {"engine":"vllm","port":8000}"#,
    );
    check!(
        "ExecStart=/bin/bash -c 'exec /opt/vllm/bin/vllm serve `cat /etc/vllm/model.args`'\n",
        @r#"
            launches: 1
            engine: vllm
            wrappers: bash -c
            fields: {"engine":"vllm","wrapper":"bash -c"}"#,
    );
    // Quoted, it is one word: the model, as written.
    check!(
        "vllm serve \"$(cat model.txt)\" --port 8000\n",
        @r#"
            launches: 1
            engine: vllm
            wrappers: 
            fields: {"engine":"vllm","model":"$(cat model.txt)","port":8000}"#,
    );
}

#[test]
fn scripts_keep_their_backticks() {
    // Backticks in a script are command substitutions, not Markdown.
    check!(
        "TS=`date +%s`\necho \"started `hostname`\"\nvllm serve /models/m --port 8000 > log.$TS 2>&1\n",
        @r#"
            launches: 1
            engine: vllm
            wrappers: 
            logs: log.`date +%s`
            fields: {"engine":"vllm","model":"/models/m","port":8000}"#,
    );
}

/// Every launch of `text`, one line each: its fields and the conditions it runs under.
fn render_all(text: &str) -> String {
    let launches = reconstruct(text, &ParseHints::default());
    if launches.is_empty() {
        return "no launch".into();
    }
    launches
        .iter()
        .map(|l| {
            let notes: Vec<&str> = l
                .warnings
                .iter()
                .map(String::as_str)
                .filter(|w| {
                    w.starts_with("when ")
                        || w.starts_with("unless ")
                        || w.starts_with("in ")
                        || w.starts_with("read ")
                })
                .collect();
            if notes.is_empty() {
                format!("{}", common_fields(l))
            } else {
                format!("{} [{}]", common_fields(l), notes.join("; "))
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

macro_rules! check_all {
    ($text:expr, @$expected:literal $(,)?) => {
        insta::assert_snapshot!(render_all($text), @$expected)
    };
}

#[test]
fn control_flow_decides_the_command() {
    // A reassignment inside an undecidable branch keeps both values.
    check_all!(
        "cmd=\"vllm serve m --port 8000\"\nif [ \"$1\" = \"-d\" ]; then\n  cmd=\"nohup ${cmd} > log 2>&1 &\"\nfi\neval $cmd\n",
        @r#"
            {"engine":"vllm","model":"m","port":8000,"wrapper":"eval"}
            {"engine":"vllm","model":"m","port":8000,"wrapper":"eval"} [when $1 = -d]"#,
    );
    // Both branches run something.
    check_all!(
        "if [ \"$MODE\" = big ]; then\n  vllm serve m --tensor-parallel-size 8\nelif [ \"$MODE\" = mid ]; then\n  vllm serve m --tensor-parallel-size 4\nelse\n  vllm serve m --tensor-parallel-size 1\nfi\n",
        @r#"
            {"engine":"vllm","model":"m","tensor_parallel":8} [when $MODE = big]
            {"engine":"vllm","model":"m","tensor_parallel":4} [when $MODE = mid, unless $MODE = big]
            {"engine":"vllm","model":"m","tensor_parallel":1} [unless $MODE = big or $MODE = mid]"#,
    );
    // A branch the text decides is taken or left out.
    check_all!(
        "MODE=big\nif [ \"$MODE\" = big ]; then\n  TP=8\nelse\n  TP=1\nfi\nvllm serve m --tensor-parallel-size $TP\n",
        @r#"{"engine":"vllm","model":"m","tensor_parallel":8}"#,
    );
    // `case` picks flags.
    check_all!(
        "case \"$1\" in\n  fast|-f) EXTRA=\"--max-num-seqs 512\" ;;\n  *) EXTRA=\"--max-num-seqs 64\" ;;\nesac\nvllm serve m $EXTRA\n",
        @r#"
            {"engine":"vllm","model":"m","max_running_requests":512} [when $1 = fast|-f]
            {"engine":"vllm","model":"m","max_running_requests":64} [unless $1 = fast|-f]"#,
    );
    // `&&` / `||` after a test.
    check_all!(
        "PORT=8000\n[ -n \"$ALT\" ] && PORT=9000\nvllm serve m --port $PORT\n",
        @r#"
            {"engine":"vllm","model":"m","port":8000}
            {"engine":"vllm","model":"m","port":9000} [when -n $ALT]"#,
    );
}

#[test]
fn loops_that_start_servers() {
    check_all!(
        "for i in 0 1; do\n  CUDA_VISIBLE_DEVICES=$i vllm serve m --port 800$i &\ndone\nwait\n",
        @r#"
            {"engine":"vllm","model":"m","port":8000,"env":{"CUDA_VISIBLE_DEVICES":"0"}}
            {"engine":"vllm","model":"m","port":8001,"env":{"CUDA_VISIBLE_DEVICES":"1"}}"#,
    );
    check_all!(
        "for i in $(seq 0 $((N - 1))); do\n  CUDA_VISIBLE_DEVICES=$i vllm serve m --port $((8000 + i)) &\ndone\n",
        @r#"{"engine":"vllm","model":"m","port":"$((8000 + i))","env":{"CUDA_VISIBLE_DEVICES":"$i"}} [in a loop]"#,
    );
    check_all!(
        "for gpu in {0..2}; do CUDA_VISIBLE_DEVICES=$gpu python -m sglang.launch_server --model-path /m --port 3000$gpu & done",
        @r#"
            {"engine":"sglang","model":"/m","port":30000,"env":{"CUDA_VISIBLE_DEVICES":"0"}}
            {"engine":"sglang","model":"/m","port":30001,"env":{"CUDA_VISIBLE_DEVICES":"1"}}
            {"engine":"sglang","model":"/m","port":30002,"env":{"CUDA_VISIBLE_DEVICES":"2"}}"#,
    );
}

#[test]
fn counted_loops() {
    check_all!(
        "base=8010\nfor ((i=0; i<2; i++)); do\n  export CUDA_VISIBLE_DEVICES=$i\n  vllm serve m --port $((base + i)) &\ndone\n",
        @r#"
            {"engine":"vllm","model":"m","port":8010,"env":{"CUDA_VISIBLE_DEVICES":"0"}}
            {"engine":"vllm","model":"m","port":8011,"env":{"CUDA_VISIBLE_DEVICES":"1"}}"#,
    );
    check_all!(
        "for (( i = 0; i < N; i++ )); do vllm serve m --port $((8000 + i)) & done",
        @r#"{"engine":"vllm","model":"m","port":"$((8000 + i))"} [in a loop]"#,
    );
}

#[test]
fn functions_and_positional_parameters() {
    check_all!(
        "start_server() {\n  local model=$1\n  local port=${2:-8000}\n  vllm serve \"$model\" --port \"$port\" \"${@:3}\"\n}\nMODEL=meta-llama/Llama-3.1-8B\nstart_server $MODEL 8001\n",
        @r#"{"engine":"vllm","model":"meta-llama/Llama-3.1-8B","port":8001}"#,
    );
    check_all!(
        "function serve {\n  python -m sglang.launch_server --model-path \"$1\" --tp \"$2\"\n}\nserve Qwen/Qwen2.5-7B 2\nserve Qwen/Qwen2.5-72B 8\n",
        @r#"
            {"engine":"sglang","model":"Qwen/Qwen2.5-7B","tensor_parallel":2}
            {"engine":"sglang","model":"Qwen/Qwen2.5-72B","tensor_parallel":8}"#,
    );
    // Defined, never called: read, and noted.
    check_all!(
        "run() {\n  vllm serve m --port 8000\n}\n",
        @r#"{"engine":"vllm","model":"m","port":8000} [in function run]"#,
    );
    // A file written in the text and sourced.
    check_all!(
        "cat > env.sh <<EOF\nexport MODEL=/models/m\nPORT=8100\nEOF\nsource ./env.sh\nvllm serve $MODEL --port $PORT\n",
        @r#"{"engine":"vllm","model":"/models/m","port":8100,"env":{"MODEL":"/models/m"}}"#,
    );
    // getopts: the values come from outside, kept as written.
    check_all!(
        "PORT=8000\nwhile getopts \"m:p:\" opt; do\n  case $opt in\n    m) MODEL=$OPTARG ;;\n    p) PORT=$OPTARG ;;\n  esac\ndone\nvllm serve $MODEL --port $PORT\n",
        @r#"{"engine":"vllm","model":"$MODEL","port":"$PORT"}"#,
    );
}

#[test]
fn text_as_people_paste_it() {
    // One pair of backticks around a multi-line command.
    check_all!(
        "We start it with `vllm serve meta-llama/Llama-3.1-8B \\\n  --tensor-parallel-size 2 \\\n  --port 8001` on the box.\n",
        @r#"{"engine":"vllm","model":"meta-llama/Llama-3.1-8B","tensor_parallel":2,"port":8001}"#,
    );
    // A fence without a language, CRLF line ends.
    check_all!(
        "Run:\r\n\r\n```\r\nvllm serve /models/m \\\r\n  --max-model-len 8192 --port 8000\r\n```\r\n",
        @r#"{"engine":"vllm","model":"/models/m","port":8000,"context_length":8192} [read CRLF line ends as LF]"#,
    );
    // A continuation followed by trailing spaces.
    check_all!(
        "python -m sglang.launch_server --model-path /m \\   \n  --tp 2 --port 30000\n",
        @r#"{"engine":"sglang","model":"/m","tensor_parallel":2,"port":30000} [read a backslash followed by spaces at a line's end as a continuation]"#,
    );
    // A documentation site's dashes, typographic quotes and a non-breaking space.
    check_all!(
        "vllm serve m \u{2014}tensor-parallel-size 4 \u{2013}served-model-name \u{201C}my\u{00A0}model\u{201D} --port\u{00A0}8000\n",
        @r#"{"engine":"vllm","model":"m","tensor_parallel":4,"port":8000,"served_model_name":"my model"} [read `—tensor-parallel-size` as `--tensor-parallel-size`; read `–served-model-name` as `--served-model-name`; read typographic quotes as ASCII quotes; read non-breaking spaces as spaces]"#,
    );
    // `(( N > 0 ))` is arithmetic: no redirection to a file named 0.
    check_all!(
        "N=2\nif (( N > 0 )); then\n  vllm serve m --tensor-parallel-size $N\nfi\n",
        @r#"{"engine":"vllm","model":"m","tensor_parallel":2}"#,
    );
    // Runbook prose with `image:` and `services:` lines is not compose.
    check_all!(
        "Incident notes\nimage: vllm/vllm-openai:v0.10.1 on all nodes\nservices: inference only\n\nWe restarted with:\n\n```bash\nvllm serve /models/m --port 8000\n```\n",
        @r#"{"engine":"vllm","model":"/models/m","port":8000}"#,
    );
    // Prose alone holds no launch.
    check_all!(
        "image: the new one\nservices: we serve vllm and sglang with tensor parallel 8 for Qwen.\n",
        @"no launch",
    );
}

/// The issue's own text: the `-d` variant is a launch of its own, under nohup, with its log.
#[test]
fn the_daemon_variant_keeps_its_wrapper_and_log() {
    let text = "cmd=$(cat <<- EOF\npython -m sglang.launch_server --model-path /m \\\n--tp 1 --port 6011\nEOF\n)\nif [ \"-d\" = \"$1\" ]; then\n  cmd=\"nohup ${cmd} > /srv/logs/sglang.log 2>&1 &\"\nfi\neval $cmd\n";
    let launches = reconstruct(text, &ParseHints::default());
    let shown: Vec<String> = launches
        .iter()
        .map(|l| {
            format!(
                "{} logs={:?} notes={:?}",
                l.wrappers.join(" > "),
                l.log_files,
                l.warnings
            )
        })
        .collect();
    insta::assert_debug_snapshot!(shown, @r#"
        [
            "eval logs=[] notes=[]",
            "eval > nohup logs=[\"/srv/logs/sglang.log\"] notes=[\"when -d = $1\"]",
        ]
    "#);
}
