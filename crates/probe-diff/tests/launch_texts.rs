//! Launch texts as people really write them, case by case (rust-analyzer style): a command kept
//! in a variable (a string, a here-document, `read -d ''`) and run with `eval`, `$CMD`,
//! `sh -c`, `nohup ... &`; a command pasted into Markdown (fenced blocks, inline backticks,
//! `$ ` and `# ` prompts, the program's output, prose around it). Each case shows what the first
//! launch read: `UPDATE_EXPECT=1 cargo test -p probe-diff --test launch_texts` rewrites the
//! expected text after a deliberate change.

use expect_test::{Expect, expect};
use probe_diff::common::common_fields;
use probe_diff::launch::{ParseHints, reconstruct};

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

fn check(text: &str, want: Expect) {
    want.assert_eq(&render(text));
}

#[test]
fn command_in_a_string_run_with_eval() {
    check(
        "CMD=\"python -m sglang.launch_server --model-path Qwen/Qwen2.5-7B --tp 2 --port 30000\"\neval \"$CMD\"\n",
        expect![[r#"
            launches: 1
            engine: sglang
            wrappers: eval
            fields: {"engine":"sglang","model":"Qwen/Qwen2.5-7B","tensor_parallel":2,"port":30000,"wrapper":"eval"}"#]],
    );
    check(
        "MODEL=meta-llama/Llama-3.1-8B\nCMD=\"vllm serve $MODEL --port 8001\"\nCMD+=\" --max-model-len 8192\"\neval $CMD\n",
        expect![[r#"
            launches: 1
            engine: vllm
            wrappers: eval
            fields: {"engine":"vllm","model":"meta-llama/Llama-3.1-8B","port":8001,"context_length":8192,"wrapper":"eval"}"#]],
    );
}

#[test]
fn command_in_a_string_run_as_a_word() {
    check(
        "CMD=\"python -m sglang.launch_server --model-path Qwen/Qwen2.5-7B --tp 2\"\nnohup $CMD > server.log 2>&1 &\n",
        expect![[r#"
            launches: 1
            engine: sglang
            wrappers: nohup
            logs: server.log
            fields: {"engine":"sglang","model":"Qwen/Qwen2.5-7B","tensor_parallel":2,"wrapper":"nohup"}"#]],
    );
    check(
        "CMD=\"vllm serve m --port 8000\"\nexec $CMD\n",
        expect![[r#"
            launches: 1
            engine: vllm
            wrappers: 
            fields: {"engine":"vllm","model":"m","port":8000}"#]],
    );
}

#[test]
fn command_in_a_heredoc() {
    check(
        "PORT=30000\nCMD=$(cat <<EOF\npython -m sglang.launch_server --model-path Qwen/Qwen2.5-7B \\\n  --tp 2 --port $PORT\nEOF\n)\neval \"$CMD\"\n",
        expect![[r#"
            launches: 1
            engine: sglang
            wrappers: eval
            fields: {"engine":"sglang","model":"Qwen/Qwen2.5-7B","tensor_parallel":2,"port":30000,"wrapper":"eval"}"#]],
    );
    check(
        "read -r -d '' CMD <<'EOF'\nvllm serve meta-llama/Llama-3.1-8B --tensor-parallel-size 4 \\\n  --port 8001\nEOF\nnohup sh -c \"$CMD\" > /var/log/v.log 2>&1 &\n",
        expect![[r#"
            launches: 1
            engine: vllm
            wrappers: nohup > sh -c
            logs: /var/log/v.log
            fields: {"engine":"vllm","model":"meta-llama/Llama-3.1-8B","tensor_parallel":4,"port":8001,"wrapper":"nohup"}"#]],
    );
    check(
        "read -r CMD <<< \"vllm serve m --port 8002\"\n$CMD\n",
        expect![[r#"
            launches: 1
            engine: vllm
            wrappers: 
            fields: {"engine":"vllm","model":"m","port":8002}"#]],
    );
    check(
        "cat > cmd.txt <<EOF\nvllm serve m --port 8003\nEOF\nCMD=$(cat cmd.txt)\nbash -c \"$CMD\"\n",
        expect![[r#"
            launches: 1
            engine: vllm
            wrappers: bash -c
            fields: {"engine":"vllm","model":"m","port":8003,"wrapper":"bash -c"}"#]],
    );
}

#[test]
fn nohup_sh_c_with_the_command_inline() {
    check(
        "nohup sh -c \"python3 -m sglang.launch_server --model-path /m --port 30001\" > sg.log 2>&1 &",
        expect![[r#"
            launches: 1
            engine: sglang
            wrappers: nohup > sh -c
            logs: sg.log
            fields: {"engine":"sglang","model":"/m","port":30001,"wrapper":"nohup"}"#]],
    );
}

#[test]
fn nested_evals_are_bounded() {
    check("A='eval $A $A'\neval $A\n", expect!["no launch"]);
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
    check(
        "# Runbook: restart the inference server\n\nSSH to the box and run:\n\n```bash\n$ export CUDA_VISIBLE_DEVICES=0,1\n$ python -m sglang.launch_server \\\n    --model-path Qwen/Qwen2.5-7B \\\n    --tp 2 --port 30000\n[2025-01-01 10:00:00] server_args=ServerArgs(...)\n```\n\nThen check with `curl localhost:30000/health`.\n",
        expect![[r#"
            launches: 1
            engine: sglang
            wrappers: 
            fields: {"engine":"sglang","model":"Qwen/Qwen2.5-7B","tensor_parallel":2,"port":30000,"env":{"CUDA_VISIBLE_DEVICES":"0,1"}}"#]],
    );
    check(
        "It's slow since Tuesday. Launch:\n\n~~~sh\nvllm serve meta-llama/Llama-3.1-8B \\\n  --max-model-len 8192 --port 8001\n~~~\n",
        expect![[r#"
            launches: 1
            engine: vllm
            wrappers: 
            fields: {"engine":"vllm","model":"meta-llama/Llama-3.1-8B","port":8001,"context_length":8192}"#]],
    );
    check(
        "1. Start it:\n\n   ```\n   (venv) user@gpu01:~/srv$ vllm serve /models/m --tensor-parallel-size 8\n   INFO 05-01 12:00:00 api_server.py:1 vLLM API server version 0.10.1\n   ```\n",
        expect![[r#"
            launches: 1
            engine: vllm
            wrappers: 
            fields: {"engine":"vllm","model":"/models/m","tensor_parallel":8}"#]],
    );
}

#[test]
fn root_prompt_in_a_block() {
    check(
        "As root:\n\n```console\n# export VLLM_USE_V1=1\n# vllm serve /models/m --port 8000\n```\n",
        expect![[r#"
            launches: 1
            engine: vllm
            wrappers: 
            fields: {"engine":"vllm","model":"/models/m","port":8000,"env":{"VLLM_USE_V1":"1"}}"#]],
    );
    // A commented-out alternative next to the real command is a comment.
    check(
        "```bash\n# vllm serve /models/m --tensor-parallel-size 4\nvllm serve /models/m --tensor-parallel-size 8\n```\n",
        expect![[r#"
            launches: 1
            engine: vllm
            wrappers: 
            fields: {"engine":"vllm","model":"/models/m","tensor_parallel":8}"#]],
    );
}

#[test]
fn inline_backticks_in_prose() {
    check(
        "Ticket #123: after the upgrade we start it with `vllm serve meta-llama/Llama-3.1-8B --port 8001 --max-model-len 8192` and throughput fell.",
        expect![[r#"
            launches: 1
            engine: vllm
            wrappers: 
            fields: {"engine":"vllm","model":"meta-llama/Llama-3.1-8B","port":8001,"context_length":8192}"#]],
    );
    check(
        "Use ``CUDA_VISIBLE_DEVICES=0 python3 -m sglang.launch_server --model-path /m --tp 1`` (see `--tp`).",
        expect![[r#"
            launches: 1
            engine: sglang
            wrappers: 
            fields: {"engine":"sglang","model":"/m","tensor_parallel":1,"env":{"CUDA_VISIBLE_DEVICES":"0"}}"#]],
    );
}

#[test]
fn command_between_sentences() {
    check(
        "Hi team, it's slower since the upgrade. We run:\n\npython -m sglang.launch_server --model-path Qwen/Qwen2.5-7B --tp 2 \\\n  --port 30000\n\nand it used to do 70 tok/s.\n",
        expect![[r#"
            launches: 1
            engine: sglang
            wrappers: 
            fields: {"engine":"sglang","model":"Qwen/Qwen2.5-7B","tensor_parallel":2,"port":30000}"#]],
    );
}

#[test]
fn scripts_keep_their_backticks() {
    // Backticks in a script are command substitutions, not Markdown.
    check(
        "TS=`date +%s`\necho \"started `hostname`\"\nvllm serve /models/m --port 8000 > log.$TS 2>&1\n",
        expect![[r#"
            launches: 1
            engine: vllm
            wrappers: 
            logs: log.`date +%s`
            fields: {"engine":"vllm","model":"/models/m","port":8000}"#]],
    );
}
