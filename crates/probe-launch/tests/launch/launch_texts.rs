//! Launch texts as people really write them, case by case (rust-analyzer style): a command kept in
//! a variable (a string, a here-document, `read -d ''`) and run with `eval`, `$CMD`, `sh -c`,
//! `nohup ... &`; a command pasted into Markdown (fenced blocks, inline backticks, `$ ` and `# `
//! prompts, the program's output, prose around it). Each case is `check!(Auto, input,
//! @"expected")`: every launch read from the input, as `support/render.rs` renders it, against an
//! inline insta snapshot; that file says how to update them after a deliberate change.

use probe_launch::TextKind;

#[test]
fn command_in_a_string_run_with_eval() {
    check!(
        Auto,
        "CMD=\"python -m sglang.launch_server --model-path Qwen/Qwen2.5-7B --tp 2 --port 30000\"\neval \"$CMD\"\n",
        @r#"
        launches: 1
        engine: sglang
        entry: python -m sglang.launch_server
        model: Qwen/Qwen2.5-7B
        interpreter: python
        wrappers: eval
        option model-path = "Qwen/Qwen2.5-7B" (--model-path Qwen/Qwen2.5-7B)
        option port = 30000 (--port 30000)
        option tp-size = 2 (--tp 2)
        fields: {"engine":"sglang","model":"Qwen/Qwen2.5-7B","tensor_parallel":2,"port":30000,"wrapper":"eval"}
    "#,
    );
    check!(
        Auto,
        "MODEL=meta-llama/Llama-3.1-8B\nCMD=\"vllm serve $MODEL --port 8001\"\nCMD+=\" --max-model-len 8192\"\neval $CMD\n",
        @r#"
        launches: 1
        engine: vllm
        entry: vllm serve
        model: meta-llama/Llama-3.1-8B
        wrappers: eval
        option max-model-len = 8192 (--max-model-len 8192)
        option port = 8001 (--port 8001)
        fields: {"engine":"vllm","model":"meta-llama/Llama-3.1-8B","port":8001,"context_length":8192,"wrapper":"eval"}
    "#,
    );
}

#[test]
fn command_in_a_string_run_as_a_word() {
    check!(
        Auto,
        "CMD=\"python -m sglang.launch_server --model-path Qwen/Qwen2.5-7B --tp 2\"\nnohup $CMD > server.log 2>&1 &\n",
        @r#"
        launches: 1
        engine: sglang
        entry: python -m sglang.launch_server
        model: Qwen/Qwen2.5-7B
        interpreter: python
        wrappers: nohup
        option model-path = "Qwen/Qwen2.5-7B" (--model-path Qwen/Qwen2.5-7B)
        option tp-size = 2 (--tp 2)
        logs: server.log
        fields: {"engine":"sglang","model":"Qwen/Qwen2.5-7B","tensor_parallel":2,"wrapper":"nohup"}
    "#,
    );
    check!(
        Auto,
        "CMD=\"vllm serve m --port 8000\"\nexec $CMD\n",
        @r#"
        launches: 1
        engine: vllm
        entry: vllm serve
        model: m
        option port = 8000 (--port 8000)
        fields: {"engine":"vllm","model":"m","port":8000}
    "#,
    );
}

#[test]
fn command_in_a_heredoc() {
    check!(
        Auto,
        "PORT=30000\nCMD=$(cat <<EOF\npython -m sglang.launch_server --model-path Qwen/Qwen2.5-7B \\\n  --tp 2 --port $PORT\nEOF\n)\neval \"$CMD\"\n",
        @r#"
        launches: 1
        engine: sglang
        entry: python -m sglang.launch_server
        model: Qwen/Qwen2.5-7B
        interpreter: python
        wrappers: eval
        option model-path = "Qwen/Qwen2.5-7B" (--model-path Qwen/Qwen2.5-7B)
        option port = 30000 (--port 30000)
        option tp-size = 2 (--tp 2)
        fields: {"engine":"sglang","model":"Qwen/Qwen2.5-7B","tensor_parallel":2,"port":30000,"wrapper":"eval"}
    "#,
    );
    check!(
        Auto,
        "read -r -d '' CMD <<'EOF'\nvllm serve meta-llama/Llama-3.1-8B --tensor-parallel-size 4 \\\n  --port 8001\nEOF\nnohup sh -c \"$CMD\" > /var/log/v.log 2>&1 &\n",
        @r#"
        launches: 1
        engine: vllm
        entry: vllm serve
        model: meta-llama/Llama-3.1-8B
        wrappers: nohup > sh -c
        option port = 8001 (--port 8001)
        option tensor-parallel-size = 4 (--tensor-parallel-size 4)
        logs: /var/log/v.log
        fields: {"engine":"vllm","model":"meta-llama/Llama-3.1-8B","tensor_parallel":4,"port":8001,"wrapper":"nohup"}
    "#,
    );
    check!(
        Auto,
        "read -r CMD <<< \"vllm serve m --port 8002\"\n$CMD\n",
        @r#"
        launches: 1
        engine: vllm
        entry: vllm serve
        model: m
        option port = 8002 (--port 8002)
        fields: {"engine":"vllm","model":"m","port":8002}
    "#,
    );
    check!(
        Auto,
        "cat > cmd.txt <<EOF\nvllm serve m --port 8003\nEOF\nCMD=$(cat cmd.txt)\nbash -c \"$CMD\"\n",
        @r#"
        launches: 1
        engine: vllm
        entry: vllm serve
        model: m
        wrappers: bash -c
        option port = 8003 (--port 8003)
        fields: {"engine":"vllm","model":"m","port":8003,"wrapper":"bash -c"}
    "#,
    );
}

#[test]
fn nohup_sh_c_with_the_command_inline() {
    check!(
        Auto,
        "nohup sh -c \"python3 -m sglang.launch_server --model-path /m --port 30001\" > sg.log 2>&1 &",
        @r#"
        launches: 1
        engine: sglang
        entry: python -m sglang.launch_server
        model: /m
        interpreter: python3
        wrappers: nohup > sh -c
        option model-path = "/m" (--model-path /m)
        option port = 30001 (--port 30001)
        logs: sg.log
        fields: {"engine":"sglang","model":"/m","port":30001,"wrapper":"nohup"}
    "#,
    );
}

#[test]
fn nested_evals_are_bounded() {
    check!(Auto, "A='eval $A $A'\neval $A\n", @"no launch");
    // A value that doubles on every line stops being followed at the cap, not at 2^28 bytes.
    let text = format!(
        "X=x\n{}vllm serve m --served-model-name \"$X\" --port 8000\n",
        "X=$X$X\n".repeat(28)
    );
    let shown = crate::render::read(&text, TextKind::Auto);
    assert!(shown.contains("\"port\":8000"), "{shown}");
    assert!(shown.len() < 200_000, "{} bytes", shown.len());
}

#[test]
fn fenced_block_with_prompts_and_output() {
    check!(
        Auto,
        "# Runbook: restart the inference server\n\nSSH to the box and run:\n\n```bash\n$ export CUDA_VISIBLE_DEVICES=0,1\n$ python -m sglang.launch_server \\\n    --model-path Qwen/Qwen2.5-7B \\\n    --tp 2 --port 30000\n[2025-01-01 10:00:00] server_args=ServerArgs(...)\n```\n\nThen check with `curl localhost:30000/health`.\n",
        @r#"
        launches: 1
        engine: sglang
        entry: python -m sglang.launch_server
        model: Qwen/Qwen2.5-7B
        interpreter: python
        option model-path = "Qwen/Qwen2.5-7B" (--model-path Qwen/Qwen2.5-7B)
        option port = 30000 (--port 30000)
        option tp-size = 2 (--tp 2)
        env: CUDA_VISIBLE_DEVICES=0,1
        fields: {"engine":"sglang","model":"Qwen/Qwen2.5-7B","tensor_parallel":2,"port":30000,"env":{"CUDA_VISIBLE_DEVICES":"0,1"}}
    "#,
    );
    check!(
        Auto,
        "It's slow since Tuesday. Launch:\n\n~~~sh\nvllm serve meta-llama/Llama-3.1-8B \\\n  --max-model-len 8192 --port 8001\n~~~\n",
        @r#"
        launches: 1
        engine: vllm
        entry: vllm serve
        model: meta-llama/Llama-3.1-8B
        option max-model-len = 8192 (--max-model-len 8192)
        option port = 8001 (--port 8001)
        fields: {"engine":"vllm","model":"meta-llama/Llama-3.1-8B","port":8001,"context_length":8192}
    "#,
    );
    check!(
        Auto,
        "1. Start it:\n\n   ```\n   (venv) user@gpu01:~/srv$ vllm serve /models/m --tensor-parallel-size 8\n   INFO 05-01 12:00:00 api_server.py:1 vLLM API server version 0.10.1\n   ```\n",
        @r#"
        launches: 1
        engine: vllm
        entry: vllm serve
        model: /models/m
        option tensor-parallel-size = 8 (--tensor-parallel-size 8)
        fields: {"engine":"vllm","model":"/models/m","tensor_parallel":8}
    "#,
    );
}

#[test]
fn root_prompt_in_a_block() {
    check!(
        Auto,
        "As root:\n\n```console\n# export VLLM_USE_V1=1\n# vllm serve /models/m --port 8000\n```\n",
        @r#"
        launches: 1
        engine: vllm
        entry: vllm serve
        model: /models/m
        option port = 8000 (--port 8000)
        env: VLLM_USE_V1=1
        fields: {"engine":"vllm","model":"/models/m","port":8000,"env":{"VLLM_USE_V1":"1"}}
    "#,
    );
    // A commented-out alternative next to the real command is a comment.
    check!(
        Auto,
        "```bash\n# vllm serve /models/m --tensor-parallel-size 4\nvllm serve /models/m --tensor-parallel-size 8\n```\n",
        @r#"
        launches: 1
        engine: vllm
        entry: vllm serve
        model: /models/m
        option tensor-parallel-size = 8 (--tensor-parallel-size 8)
        fields: {"engine":"vllm","model":"/models/m","tensor_parallel":8}
    "#,
    );
}

#[test]
fn inline_backticks_in_prose() {
    check!(
        Auto,
        "Ticket #123: after the upgrade we start it with `vllm serve meta-llama/Llama-3.1-8B --port 8001 --max-model-len 8192` and throughput fell.",
        @r#"
        launches: 1
        engine: vllm
        entry: vllm serve
        model: meta-llama/Llama-3.1-8B
        option max-model-len = 8192 (--max-model-len 8192)
        option port = 8001 (--port 8001)
        fields: {"engine":"vllm","model":"meta-llama/Llama-3.1-8B","port":8001,"context_length":8192}
    "#,
    );
    check!(
        Auto,
        "Use ``CUDA_VISIBLE_DEVICES=0 python3 -m sglang.launch_server --model-path /m --tp 1`` (see `--tp`).",
        @r#"
        launches: 1
        engine: sglang
        entry: python -m sglang.launch_server
        model: /m
        interpreter: python3
        option model-path = "/m" (--model-path /m)
        option tp-size = 1 (--tp 1)
        env: CUDA_VISIBLE_DEVICES=0
        fields: {"engine":"sglang","model":"/m","tensor_parallel":1,"env":{"CUDA_VISIBLE_DEVICES":"0"}}
    "#,
    );
}

#[test]
fn a_launcher_named_in_a_sentence_is_no_launch() {
    // A span that only names the program, inside running prose: a mention, nothing to run.
    check!(
        Auto,
        "I start the server with `vllm serve` and then run the benchmark against it.",
        @r#"no launch"#,
    );
    check!(
        Auto,
        "Please run `python -m sglang.launch_server` first, then `llama-server` on the other box.",
        @r#"no launch"#,
    );
    // The same sentence with a whole command in the span: a launch.
    check!(
        Auto,
        "I start the server with `vllm serve Qwen/Qwen3-8B -tp 2` and then run the benchmark.",
        @r#"
        launches: 1
        engine: vllm
        entry: vllm serve
        model: Qwen/Qwen3-8B
        option tensor-parallel-size = 2 (-tp 2)
        fields: {"engine":"vllm","model":"Qwen/Qwen3-8B","tensor_parallel":2}
    "#,
    );
    // A mention in the prose does not hide the command in the fenced block below it.
    check!(
        Auto,
        "Running `vllm serve` in the background needs `nohup`:\n\n```bash\nnohup vllm serve Qwen/Qwen3-8B --port 8001 > vllm.log 2>&1 &\n```\n",
        @r#"
        launches: 1
        engine: vllm
        entry: vllm serve
        model: Qwen/Qwen3-8B
        wrappers: nohup
        option port = 8001 (--port 8001)
        logs: vllm.log
        fields: {"engine":"vllm","model":"Qwen/Qwen3-8B","port":8001,"wrapper":"nohup"}
    "#,
    );
    // A bare command in a block, or on a line of its own, is code, not a mention.
    check!(
        Auto,
        "Then:\n\n```\nvllm serve\n```\n",
        @r#"
        launches: 1
        engine: vllm
        entry: vllm serve
        fields: {"engine":"vllm"}
    "#,
    );
    check!(
        Auto,
        "Then start it:\n`vllm serve`\n",
        @r#"
        launches: 1
        engine: vllm
        entry: vllm serve
        fields: {"engine":"vllm"}
    "#,
    );
}

#[test]
fn command_between_sentences() {
    check!(
        Auto,
        "Hi team, it's slower since the upgrade. We run:\n\npython -m sglang.launch_server --model-path Qwen/Qwen2.5-7B --tp 2 \\\n  --port 30000\n\nand it used to do 70 tok/s.\n",
        @r#"
        launches: 1
        engine: sglang
        entry: python -m sglang.launch_server
        model: Qwen/Qwen2.5-7B
        interpreter: python
        option model-path = "Qwen/Qwen2.5-7B" (--model-path Qwen/Qwen2.5-7B)
        option port = 30000 (--port 30000)
        option tp-size = 2 (--tp 2)
        fields: {"engine":"sglang","model":"Qwen/Qwen2.5-7B","tensor_parallel":2,"port":30000}
    "#,
    );
}

#[test]
fn unquoted_substitution_is_an_unknown_number_of_words() {
    // Its output is not in the text: no model is made of it, the options around it still count.
    check!(
        Auto,
        "vllm serve $(cat /etc/vllm/args) --port 8000\n",
        @r#"
        launches: 1
        engine: vllm
        entry: vllm serve
        option port = 8000 (--port 8000)
        fields: {"engine":"vllm","port":8000}
        warning: arguments come from $(cat /etc/vllm/args), whose output is not in the text (an unknown number of words)
    "#,
    );
    check!(
        Auto,
        "ExecStart=/bin/bash -c 'exec /opt/vllm/bin/vllm serve `cat /etc/vllm/model.args`'\n",
        @r#"
        launches: 1
        engine: vllm
        entry: vllm serve
        wrappers: bash -c
        fields: {"engine":"vllm","wrapper":"bash -c"}
        warning: arguments come from `cat /etc/vllm/model.args`, whose output is not in the text (an unknown number of words)
    "#,
    );
    // Quoted, it is one word: the model, as written.
    check!(
        Auto,
        "vllm serve \"$(cat model.txt)\" --port 8000\n",
        @r#"
        launches: 1
        engine: vllm
        entry: vllm serve
        model: $(cat model.txt)
        option port = 8000 (--port 8000)
        fields: {"engine":"vllm","model":"$(cat model.txt)","port":8000}
    "#,
    );
}

#[test]
fn scripts_keep_their_backticks() {
    // Backticks in a script are command substitutions, not Markdown.
    check!(
        Auto,
        "TS=`date +%s`\necho \"started `hostname`\"\nvllm serve /models/m --port 8000 > log.$TS 2>&1\n",
        @r#"
        launches: 1
        engine: vllm
        entry: vllm serve
        model: /models/m
        option port = 8000 (--port 8000)
        logs: log.`date +%s`
        fields: {"engine":"vllm","model":"/models/m","port":8000}
    "#,
    );
}

#[test]
fn control_flow_decides_the_command() {
    // A reassignment inside an undecidable branch keeps both values.
    check!(
        Auto,
        "cmd=\"vllm serve m --port 8000\"\nif [ \"$1\" = \"-d\" ]; then\n  cmd=\"nohup ${cmd} > log 2>&1 &\"\nfi\neval $cmd\n",
        @r#"
        launches: 2
        engine: vllm
        entry: vllm serve
        model: m
        wrappers: eval
        option port = 8000 (--port 8000)
        fields: {"engine":"vllm","model":"m","port":8000,"wrapper":"eval"}
        ---
        engine: vllm
        entry: vllm serve
        model: m
        wrappers: eval > nohup
        option port = 8000 (--port 8000)
        logs: log
        fields: {"engine":"vllm","model":"m","port":8000,"wrapper":"eval"}
        warning: when $1 = -d
    "#,
    );
    // Both branches run something.
    check!(
        Auto,
        "if [ \"$MODE\" = big ]; then\n  vllm serve m --tensor-parallel-size 8\nelif [ \"$MODE\" = mid ]; then\n  vllm serve m --tensor-parallel-size 4\nelse\n  vllm serve m --tensor-parallel-size 1\nfi\n",
        @r#"
        launches: 3
        engine: vllm
        entry: vllm serve
        model: m
        option tensor-parallel-size = 8 (--tensor-parallel-size 8)
        fields: {"engine":"vllm","model":"m","tensor_parallel":8}
        warning: when $MODE = big
        warning: one of 3 branches runs, and the text does not fix which: $MODE = big; $MODE = mid; otherwise
        ---
        engine: vllm
        entry: vllm serve
        model: m
        option tensor-parallel-size = 4 (--tensor-parallel-size 4)
        fields: {"engine":"vllm","model":"m","tensor_parallel":4}
        warning: when $MODE = mid, unless $MODE = big
        warning: one of 3 branches runs, and the text does not fix which: $MODE = big; $MODE = mid; otherwise
        ---
        engine: vllm
        entry: vllm serve
        model: m
        option tensor-parallel-size = 1 (--tensor-parallel-size 1)
        fields: {"engine":"vllm","model":"m","tensor_parallel":1}
        warning: unless $MODE = big or $MODE = mid
        warning: one of 3 branches runs, and the text does not fix which: $MODE = big; $MODE = mid; otherwise
    "#,
    );
    // A branch the text decides is taken or left out.
    check!(
        Auto,
        "MODE=big\nif [ \"$MODE\" = big ]; then\n  TP=8\nelse\n  TP=1\nfi\nvllm serve m --tensor-parallel-size $TP\n",
        @r#"
        launches: 1
        engine: vllm
        entry: vllm serve
        model: m
        option tensor-parallel-size = 8 (--tensor-parallel-size 8)
        fields: {"engine":"vllm","model":"m","tensor_parallel":8}
    "#,
    );
    // `case` picks flags.
    check!(
        Auto,
        "case \"$1\" in\n  fast|-f) EXTRA=\"--max-num-seqs 512\" ;;\n  *) EXTRA=\"--max-num-seqs 64\" ;;\nesac\nvllm serve m $EXTRA\n",
        @r#"
        launches: 2
        engine: vllm
        entry: vllm serve
        model: m
        option max-num-seqs = 512 (--max-num-seqs 512)
        fields: {"engine":"vllm","model":"m","max_running_requests":512}
        warning: when $1 = fast|-f
        ---
        engine: vllm
        entry: vllm serve
        model: m
        option max-num-seqs = 64 (--max-num-seqs 64)
        fields: {"engine":"vllm","model":"m","max_running_requests":64}
        warning: unless $1 = fast|-f
    "#,
    );
    // `&&` / `||` after a test: a value the text does not decide is unknown, with its reason.
    check!(
        Auto,
        "PORT=8000\n[ -n \"$ALT\" ] && PORT=9000\nvllm serve m --port $PORT\n",
        @r#"
        launches: 1
        engine: vllm
        entry: vllm serve
        model: m
        option port = "$PORT" (--port $PORT)
        fields: {"engine":"vllm","model":"m","port":"$PORT"}
        warning: $PORT is unknown: the text does not decide between 8000 otherwise; 9000 when -n $ALT
    "#,
    );
}

#[test]
fn loops_that_start_servers() {
    check!(
        Auto,
        "for i in 0 1; do\n  CUDA_VISIBLE_DEVICES=$i vllm serve m --port 800$i &\ndone\nwait\n",
        @r#"
        launches: 2
        engine: vllm
        entry: vllm serve
        model: m
        option port = 8000 (--port 8000)
        env: CUDA_VISIBLE_DEVICES=0
        fields: {"engine":"vllm","model":"m","port":8000,"env":{"CUDA_VISIBLE_DEVICES":"0"}}
        ---
        engine: vllm
        entry: vllm serve
        model: m
        option port = 8001 (--port 8001)
        env: CUDA_VISIBLE_DEVICES=1
        fields: {"engine":"vllm","model":"m","port":8001,"env":{"CUDA_VISIBLE_DEVICES":"1"}}
    "#,
    );
    check!(
        Auto,
        "for i in $(seq 0 $((N - 1))); do\n  CUDA_VISIBLE_DEVICES=$i vllm serve m --port $((8000 + i)) &\ndone\n",
        @r#"
        launches: 1
        engine: vllm
        entry: vllm serve
        model: m
        option port = "$((8000 + i))" (--port $((8000 + i)))
        env: CUDA_VISIBLE_DEVICES=$i
        fields: {"engine":"vllm","model":"m","port":"$((8000 + i))","env":{"CUDA_VISIBLE_DEVICES":"$i"}}
        warning: in a loop
    "#,
    );
    check!(
        Auto,
        "for gpu in {0..2}; do CUDA_VISIBLE_DEVICES=$gpu python -m sglang.launch_server --model-path /m --port 3000$gpu & done",
        @r#"
        launches: 3
        engine: sglang
        entry: python -m sglang.launch_server
        model: /m
        interpreter: python
        option model-path = "/m" (--model-path /m)
        option port = 30000 (--port 30000)
        env: CUDA_VISIBLE_DEVICES=0
        fields: {"engine":"sglang","model":"/m","port":30000,"env":{"CUDA_VISIBLE_DEVICES":"0"}}
        ---
        engine: sglang
        entry: python -m sglang.launch_server
        model: /m
        interpreter: python
        option model-path = "/m" (--model-path /m)
        option port = 30001 (--port 30001)
        env: CUDA_VISIBLE_DEVICES=1
        fields: {"engine":"sglang","model":"/m","port":30001,"env":{"CUDA_VISIBLE_DEVICES":"1"}}
        ---
        engine: sglang
        entry: python -m sglang.launch_server
        model: /m
        interpreter: python
        option model-path = "/m" (--model-path /m)
        option port = 30002 (--port 30002)
        env: CUDA_VISIBLE_DEVICES=2
        fields: {"engine":"sglang","model":"/m","port":30002,"env":{"CUDA_VISIBLE_DEVICES":"2"}}
    "#,
    );
}

#[test]
fn counted_loops() {
    check!(
        Auto,
        "base=8010\nfor ((i=0; i<2; i++)); do\n  export CUDA_VISIBLE_DEVICES=$i\n  vllm serve m --port $((base + i)) &\ndone\n",
        @r#"
        launches: 2
        engine: vllm
        entry: vllm serve
        model: m
        option port = 8010 (--port 8010)
        env: CUDA_VISIBLE_DEVICES=0
        fields: {"engine":"vllm","model":"m","port":8010,"env":{"CUDA_VISIBLE_DEVICES":"0"}}
        ---
        engine: vllm
        entry: vllm serve
        model: m
        option port = 8011 (--port 8011)
        env: CUDA_VISIBLE_DEVICES=1
        fields: {"engine":"vllm","model":"m","port":8011,"env":{"CUDA_VISIBLE_DEVICES":"1"}}
    "#,
    );
    check!(
        Auto,
        "for (( i = 0; i < N; i++ )); do vllm serve m --port $((8000 + i)) & done",
        @r#"
        launches: 1
        engine: vllm
        entry: vllm serve
        model: m
        option port = "$((8000 + i))" (--port $((8000 + i)))
        fields: {"engine":"vllm","model":"m","port":"$((8000 + i))"}
        warning: in a loop
    "#,
    );
}

#[test]
fn functions_and_positional_parameters() {
    check!(
        Auto,
        "start_server() {\n  local model=$1\n  local port=${2:-8000}\n  vllm serve \"$model\" --port \"$port\" \"${@:3}\"\n}\nMODEL=meta-llama/Llama-3.1-8B\nstart_server $MODEL 8001\n",
        @r#"
        launches: 1
        engine: vllm
        entry: vllm serve
        model: meta-llama/Llama-3.1-8B
        option port = 8001 (--port 8001)
        unknown: meta-llama/Llama-3.1-8B 8001
        fields: {"engine":"vllm","model":"meta-llama/Llama-3.1-8B","port":8001}
        warning: unexpected argument meta-llama/Llama-3.1-8B 8001
    "#,
    );
    check!(
        Auto,
        "function serve {\n  python -m sglang.launch_server --model-path \"$1\" --tp \"$2\"\n}\nserve Qwen/Qwen2.5-7B 2\nserve Qwen/Qwen2.5-72B 8\n",
        @r#"
        launches: 2
        engine: sglang
        entry: python -m sglang.launch_server
        model: Qwen/Qwen2.5-7B
        interpreter: python
        option model-path = "Qwen/Qwen2.5-7B" (--model-path Qwen/Qwen2.5-7B)
        option tp-size = 2 (--tp 2)
        fields: {"engine":"sglang","model":"Qwen/Qwen2.5-7B","tensor_parallel":2}
        ---
        engine: sglang
        entry: python -m sglang.launch_server
        model: Qwen/Qwen2.5-72B
        interpreter: python
        option model-path = "Qwen/Qwen2.5-72B" (--model-path Qwen/Qwen2.5-72B)
        option tp-size = 8 (--tp 8)
        fields: {"engine":"sglang","model":"Qwen/Qwen2.5-72B","tensor_parallel":8}
    "#,
    );
    // Defined, never called: read, and noted.
    check!(
        Auto,
        "run() {\n  vllm serve m --port 8000\n}\n",
        @r#"
        launches: 1
        engine: vllm
        entry: vllm serve
        model: m
        option port = 8000 (--port 8000)
        fields: {"engine":"vllm","model":"m","port":8000}
        warning: in function run
    "#,
    );
    // A file written in the text and sourced.
    check!(
        Auto,
        "cat > env.sh <<EOF\nexport MODEL=/models/m\nPORT=8100\nEOF\nsource ./env.sh\nvllm serve $MODEL --port $PORT\n",
        @r#"
        launches: 1
        engine: vllm
        entry: vllm serve
        model: /models/m
        option port = 8100 (--port 8100)
        env: MODEL=/models/m
        fields: {"engine":"vllm","model":"/models/m","port":8100,"env":{"MODEL":"/models/m"}}
    "#,
    );
    // getopts: the values come from outside, kept as written.
    check!(
        Auto,
        "PORT=8000\nwhile getopts \"m:p:\" opt; do\n  case $opt in\n    m) MODEL=$OPTARG ;;\n    p) PORT=$OPTARG ;;\n  esac\ndone\nvllm serve $MODEL --port $PORT\n",
        @r#"
        launches: 1
        engine: vllm
        entry: vllm serve
        model: $MODEL
        option port = "$PORT" (--port $PORT)
        fields: {"engine":"vllm","model":"$MODEL","port":"$PORT"}
    "#,
    );
}

#[test]
fn text_as_people_paste_it() {
    // One pair of backticks around a multi-line command.
    check!(
        Auto,
        "We start it with `vllm serve meta-llama/Llama-3.1-8B \\\n  --tensor-parallel-size 2 \\\n  --port 8001` on the box.\n",
        @r#"
        launches: 1
        engine: vllm
        entry: vllm serve
        model: meta-llama/Llama-3.1-8B
        option port = 8001 (--port 8001)
        option tensor-parallel-size = 2 (--tensor-parallel-size 2)
        fields: {"engine":"vllm","model":"meta-llama/Llama-3.1-8B","tensor_parallel":2,"port":8001}
    "#,
    );
    // A fence without a language, CRLF line ends.
    check!(
        Auto,
        "Run:\r\n\r\n```\r\nvllm serve /models/m \\\r\n  --max-model-len 8192 --port 8000\r\n```\r\n",
        @r#"
        launches: 1
        engine: vllm
        entry: vllm serve
        model: /models/m
        option max-model-len = 8192 (--max-model-len 8192)
        option port = 8000 (--port 8000)
        fields: {"engine":"vllm","model":"/models/m","port":8000,"context_length":8192}
        warning: read CRLF line ends as LF
    "#,
    );
    // A continuation followed by trailing spaces.
    check!(
        Auto,
        "python -m sglang.launch_server --model-path /m \\   \n  --tp 2 --port 30000\n",
        @r#"
        launches: 1
        engine: sglang
        entry: python -m sglang.launch_server
        model: /m
        interpreter: python
        option model-path = "/m" (--model-path /m)
        option port = 30000 (--port 30000)
        option tp-size = 2 (--tp 2)
        fields: {"engine":"sglang","model":"/m","tensor_parallel":2,"port":30000}
        warning: read a backslash followed by spaces at a line's end as a continuation
    "#,
    );
    // A documentation site's dashes, typographic quotes and a non-breaking space.
    check!(
        Auto,
        "vllm serve m \u{2014}tensor-parallel-size 4 \u{2013}served-model-name \u{201C}my\u{00A0}model\u{201D} --port\u{00A0}8000\n",
        @r#"
        launches: 1
        engine: vllm
        entry: vllm serve
        model: m
        option port = 8000 (--port 8000)
        option served-model-name = ["my model"] (--served-model-name my model)
        option tensor-parallel-size = 4 (--tensor-parallel-size 4)
        fields: {"engine":"vllm","model":"m","tensor_parallel":4,"port":8000,"served_model_name":"my model"}
        warning: read `—tensor-parallel-size` as `--tensor-parallel-size`
        warning: read `–served-model-name` as `--served-model-name`
        warning: read typographic quotes as ASCII quotes
        warning: read non-breaking spaces as spaces
    "#,
    );
    // `(( N > 0 ))` is arithmetic: no redirection to a file named 0.
    check!(
        Auto,
        "N=2\nif (( N > 0 )); then\n  vllm serve m --tensor-parallel-size $N\nfi\n",
        @r#"
        launches: 1
        engine: vllm
        entry: vllm serve
        model: m
        option tensor-parallel-size = 2 (--tensor-parallel-size 2)
        fields: {"engine":"vllm","model":"m","tensor_parallel":2}
    "#,
    );
    // Runbook prose with `image:` and `services:` lines is not compose.
    check!(
        Auto,
        "Incident notes\nimage: vllm/vllm-openai:v0.10.1 on all nodes\nservices: inference only\n\nWe restarted with:\n\n```bash\nvllm serve /models/m --port 8000\n```\n",
        @r#"
        launches: 1
        engine: vllm
        entry: vllm serve
        model: /models/m
        option port = 8000 (--port 8000)
        fields: {"engine":"vllm","model":"/models/m","port":8000}
    "#,
    );
    // Prose alone holds no launch.
    check!(
        Auto,
        "image: the new one\nservices: we serve vllm and sglang with tensor parallel 8 for Qwen.\n",
        @"no launch",
    );
}

/// The issue's own text: the `-d` variant is a launch of its own, under nohup, with its log.
#[test]
fn the_daemon_variant_keeps_its_wrapper_and_log() {
    let text = "cmd=$(cat <<- EOF\npython -m sglang.launch_server --model-path /m \\\n--tp 1 --port 6011\nEOF\n)\nif [ \"-d\" = \"$1\" ]; then\n  cmd=\"nohup ${cmd} > /srv/logs/sglang.log 2>&1 &\"\nfi\neval $cmd\n";
    check!(Auto, text, @r#"
        launches: 2
        engine: sglang
        entry: python -m sglang.launch_server
        model: /m
        interpreter: python
        wrappers: eval
        option model-path = "/m" (--model-path /m)
        option port = 6011 (--port 6011)
        option tp-size = 1 (--tp 1)
        fields: {"engine":"sglang","model":"/m","tensor_parallel":1,"port":6011,"wrapper":"eval"}
        ---
        engine: sglang
        entry: python -m sglang.launch_server
        model: /m
        interpreter: python
        wrappers: eval > nohup
        option model-path = "/m" (--model-path /m)
        option port = 6011 (--port 6011)
        option tp-size = 1 (--tp 1)
        logs: /srv/logs/sglang.log
        fields: {"engine":"sglang","model":"/m","tensor_parallel":1,"port":6011,"wrapper":"eval"}
        warning: when -d = $1
    "#);
}

#[test]
fn an_argv_accumulated_over_lines_and_conditions() {
    check!(
        Auto,
        "#!/bin/bash\nMODEL=meta-llama/Llama-3.1-8B-Instruct\nCMD=\"python3 -m vllm.entrypoints.openai.api_server\"\nARGS=\"--model $MODEL\"\nARGS=\"$ARGS --port 8000\"\nif [ -n \"$TP\" ]; then\n  ARGS=\"$ARGS --tensor-parallel-size $TP\"\nfi\nARGS=\"$ARGS --max-model-len 8192\"\nARGS+=\" --gpu-memory-utilization 0.9\"\n$CMD $ARGS\n",
        @r#"
        launches: 2
        engine: vllm
        entry: python -m vllm.entrypoints.openai.api_server
        model: meta-llama/Llama-3.1-8B-Instruct
        interpreter: python3
        option gpu-memory-utilization = 0.9 (--gpu-memory-utilization 0.9)
        option max-model-len = 8192 (--max-model-len 8192)
        option model = "meta-llama/Llama-3.1-8B-Instruct" (--model meta-llama/Llama-3.1-8B-Instruct)
        option port = 8000 (--port 8000)
        fields: {"engine":"vllm","model":"meta-llama/Llama-3.1-8B-Instruct","port":8000,"context_length":8192,"gpu_memory_fraction":0.9}
        ---
        engine: vllm
        entry: python -m vllm.entrypoints.openai.api_server
        model: meta-llama/Llama-3.1-8B-Instruct
        interpreter: python3
        option gpu-memory-utilization = 0.9 (--gpu-memory-utilization 0.9)
        option max-model-len = 8192 (--max-model-len 8192)
        option model = "meta-llama/Llama-3.1-8B-Instruct" (--model meta-llama/Llama-3.1-8B-Instruct)
        option port = 8000 (--port 8000)
        option tensor-parallel-size = "$TP" (--tensor-parallel-size $TP)
        fields: {"engine":"vllm","model":"meta-llama/Llama-3.1-8B-Instruct","tensor_parallel":"$TP","port":8000,"context_length":8192,"gpu_memory_fraction":0.9}
        warning: when -n $TP
    "#,
    );
}

#[test]
fn a_case_on_its_arguments_leaves_the_values_unknown() {
    check!(
        Auto,
        "#!/bin/bash\ncase \"$1\" in\n  small) MODEL=Qwen/Qwen2.5-7B-Instruct; TP=1 ;;\n  large) MODEL=Qwen/Qwen2.5-72B-Instruct; TP=4 ;;\nesac\nvllm serve $MODEL --tensor-parallel-size $TP --port 8000\n",
        @r#"
        launches: 1
        engine: vllm
        entry: vllm serve
        model: $MODEL
        option port = 8000 (--port 8000)
        option tensor-parallel-size = "$TP" (--tensor-parallel-size $TP)
        fields: {"engine":"vllm","model":"$MODEL","tensor_parallel":"$TP","port":8000}
        warning: $MODEL is unknown: the text does not decide between Qwen/Qwen2.5-7B-Instruct when $1 = small; Qwen/Qwen2.5-72B-Instruct when $1 = large
        warning: $TP is unknown: the text does not decide between 1 when $1 = small; 4 when $1 = large
    "#,
    );
    check!(
        Auto,
        "#!/bin/bash\ncase \"$GPU\" in\n  a100) PORT=8000 ;;\n  h100) PORT=8000 ;;\n  *) PORT=8000 ;;\nesac\nvllm serve Qwen/Qwen2.5-7B-Instruct --port $PORT\n",
        @r#"
        launches: 1
        engine: vllm
        entry: vllm serve
        model: Qwen/Qwen2.5-7B-Instruct
        option port = 8000 (--port 8000)
        fields: {"engine":"vllm","model":"Qwen/Qwen2.5-7B-Instruct","port":8000}
    "#,
    );
}

#[test]
fn a_python_program_over_lines_gives_no_arguments() {
    check!(
        Auto,
        "#!/bin/bash\nNUM_GPUS=$(python3 -c \"\nimport torch\nprint(torch.cuda.device_count())\n\")\nMODEL=$(python3 -c \"import os\nprint(os.environ.get('M', 'x'))\")\nvllm serve Qwen/Qwen2.5-7B-Instruct --tensor-parallel-size $NUM_GPUS\n",
        @r#"
        launches: 1
        engine: vllm
        entry: vllm serve
        model: Qwen/Qwen2.5-7B-Instruct
        option tensor-parallel-size = "$NUM_GPUS" (--tensor-parallel-size $NUM_GPUS)
        fields: {"engine":"vllm","model":"Qwen/Qwen2.5-7B-Instruct","tensor_parallel":"$NUM_GPUS"}
        warning: $NUM_GPUS is unknown: it is what $(python3 -c " … ) prints, which the text does not hold
    "#,
    );
}

#[test]
fn conda_environments_are_conda() {
    check!(
        Auto,
        "source /opt/miniconda3/bin/activate vllm\nvllm serve Qwen/Qwen2.5-7B-Instruct\n",
        @r#"
        launches: 1
        engine: vllm
        entry: vllm serve
        model: Qwen/Qwen2.5-7B-Instruct
        venv: vllm
        wrappers: conda
        fields: {"engine":"vllm","model":"Qwen/Qwen2.5-7B-Instruct","wrapper":"conda"}
    "#,
    );
    check!(
        Auto,
        "conda run -n vllm --no-capture-output vllm serve Qwen/Qwen2.5-7B-Instruct\n",
        @r#"
        launches: 1
        engine: vllm
        entry: vllm serve
        model: Qwen/Qwen2.5-7B-Instruct
        venv: vllm
        wrappers: conda
        fields: {"engine":"vllm","model":"Qwen/Qwen2.5-7B-Instruct","wrapper":"conda"}
    "#,
    );
    check!(
        Auto,
        "source ~/anaconda3/envs/vllm/bin/activate\nvllm serve Qwen/Qwen2.5-7B-Instruct\n",
        @r#"
        launches: 1
        engine: vllm
        entry: vllm serve
        model: Qwen/Qwen2.5-7B-Instruct
        venv: ~/anaconda3/envs/vllm
        wrappers: conda
        fields: {"engine":"vllm","model":"Qwen/Qwen2.5-7B-Instruct","wrapper":"conda"}
    "#,
    );
}

#[test]
fn config_files_written_beside_the_launch() {
    check!(
        Auto,
        "#!/bin/bash\ncat > /tmp/vllm-config.yaml <<EOF\nmodel: meta-llama/Llama-3.1-8B-Instruct\ntensor-parallel-size: 2\nmax_model_len: 16384\ngpu-memory-utilization: 0.85\nport: 8080\nEOF\nvllm serve --config /tmp/vllm-config.yaml\n",
        @r#"
        launches: 1
        engine: vllm
        entry: vllm serve
        model: meta-llama/Llama-3.1-8B-Instruct
        option config = "/tmp/vllm-config.yaml" (--config /tmp/vllm-config.yaml)
        option gpu-memory-utilization = 0.85 (gpu-memory-utilization: 0.85 (in /tmp/vllm-config.yaml))
        option max-model-len = 16384 (max_model_len: 16384 (in /tmp/vllm-config.yaml))
        option model = "meta-llama/Llama-3.1-8B-Instruct" (model: "meta-llama/Llama-3.1-8B-Instruct" (in /tmp/vllm-config.yaml))
        option port = 8080 (port: 8080 (in /tmp/vllm-config.yaml))
        option tensor-parallel-size = 2 (tensor-parallel-size: 2 (in /tmp/vllm-config.yaml))
        fields: {"engine":"vllm","model":"meta-llama/Llama-3.1-8B-Instruct","tensor_parallel":2,"port":8080,"context_length":16384,"gpu_memory_fraction":0.85}
    "#,
    );
    check!(
        Auto,
        "cat > extra-llm-api-config.yml <<EOF\nenable_attention_dp: true\nkv_cache_config:\n  free_gpu_memory_fraction: 0.8\n  dtype: fp8\ncuda_graph_config:\n  enable_padding: true\nEOF\ntrtllm-serve nvidia/DeepSeek-R1-FP4 --host 0.0.0.0 --port 8000 --backend pytorch --tp_size 8 --ep_size 8 --max_batch_size 256 --extra_llm_api_options extra-llm-api-config.yml\n",
        @r#"
        launches: 1
        engine: trtllm
        entry: trtllm-serve
        model: nvidia/DeepSeek-R1-FP4
        option backend = "pytorch" (--backend pytorch)
        option config = "extra-llm-api-config.yml" (--extra_llm_api_options extra-llm-api-config.yml)
        option cuda_graph_config.enable_padding = true (cuda_graph_config.enable_padding: true (in extra-llm-api-config.yml))
        option enable_attention_dp = true (enable_attention_dp: true (in extra-llm-api-config.yml))
        option ep_size = 8 (--ep_size 8)
        option host = "0.0.0.0" (--host 0.0.0.0)
        option kv_cache_config.dtype = "fp8" (kv_cache_config.dtype: "fp8" (in extra-llm-api-config.yml))
        option kv_cache_config.free_gpu_memory_fraction = 0.8 (kv_cache_config.free_gpu_memory_fraction: 0.8 (in extra-llm-api-config.yml))
        option max_batch_size = 256 (--max_batch_size 256)
        option port = 8000 (--port 8000)
        option tp_size = 8 (--tp_size 8)
        fields: {"engine":"trtllm","model":"nvidia/DeepSeek-R1-FP4","tensor_parallel":8,"host":"0.0.0.0","port":8000,"gpu_memory_fraction":0.8,"max_running_requests":256,"kv_cache_dtype":"fp8"}
    "#,
    );
    check!(
        Auto,
        "cat > extra.yml <<EOF\nmax_batch_size: 128\nkv_cache_config:\n  free_gpu_memory_fraction: 0.75\nEOF\ntrtllm-serve m --max_batch_size 256 --extra_llm_api_options extra.yml\n",
        @r#"
        launches: 1
        engine: trtllm
        entry: trtllm-serve
        model: m
        option config = "extra.yml" (--extra_llm_api_options extra.yml)
        option kv_cache_config.free_gpu_memory_fraction = 0.75 (kv_cache_config.free_gpu_memory_fraction: 0.75 (in extra.yml))
        option max_batch_size = 128 (max_batch_size: 128 (in extra.yml))
        fields: {"engine":"trtllm","model":"m","gpu_memory_fraction":0.75,"max_running_requests":128}
        warning: --max_batch_size 256 is overridden by max_batch_size: 128 (in extra.yml): the engine applies the file over its flags
    "#,
    );
}
