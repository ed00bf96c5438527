//! Data-driven cases, rust-analyzer style. The argv reader (`launch/argv.rs`, wrappers from
//! `configs/wrappers.toml`): one command line in, the launch it runs out. Each case is `(input,
//! expected)`; the expectation is an inline insta snapshot (`cargo insta test --accept` rewrites
//! them after a deliberate change; review the diff).

#[test]
fn engine_binary_with_positional_model() {
    check!(
        Shell,
        "vllm serve Qwen/Qwen2-7B-Instruct --tensor-parallel-size 2 --max-model-len 16k",
        @r#"
        launches: 1
        engine: vllm
        entry: vllm serve
        model: Qwen/Qwen2-7B-Instruct
        option max-model-len = 16000 (--max-model-len 16k)
        option tensor-parallel-size = 2 (--tensor-parallel-size 2)
        fields: {"engine":"vllm","model":"Qwen/Qwen2-7B-Instruct","tensor_parallel":2,"context_length":16000}
    "#
    );
}

#[test]
fn nohup_python_module_with_redirect() {
    check!(
        Shell,
        "nohup python3 -m sglang.launch_server --model-path /models/llama --tp 4 > /var/log/sglang.log 2>&1 &",
        @r#"
        launches: 1
        engine: sglang
        entry: python -m sglang.launch_server
        model: /models/llama
        interpreter: python3
        wrappers: nohup
        option model-path = "/models/llama" (--model-path /models/llama)
        option tp-size = 4 (--tp 4)
        logs: /var/log/sglang.log
        fields: {"engine":"sglang","model":"/models/llama","tensor_parallel":4,"wrapper":"nohup"}
    "#
    );
}

#[test]
fn scan_wrapper_then_env_assignments() {
    check!(
        Shell,
        "numactl -N 0 -m 0 env CUDA_VISIBLE_DEVICES=0,1 vllm serve m --port 8001",
        @r#"
        launches: 1
        engine: vllm
        entry: vllm serve
        model: m
        wrappers: numactl
        option port = 8001 (--port 8001)
        env: CUDA_VISIBLE_DEVICES=0,1
        fields: {"engine":"vllm","model":"m","port":8001,"env":{"CUDA_VISIBLE_DEVICES":"0,1"},"wrapper":"numactl"}
    "#
    );
}

#[test]
fn uv_run_with_value_flags() {
    check!(
        Shell,
        "uv run --with vllm --python 3.12 vllm serve m",
        @r#"
        launches: 1
        engine: vllm
        entry: vllm serve
        model: m
        wrappers: uv run
        fields: {"engine":"vllm","model":"m","wrapper":"uv run"}
    "#
    );
}

#[test]
fn conda_run_names_the_environment() {
    check!(
        Shell,
        "conda run -n serve python -m vllm.entrypoints.openai.api_server --model m",
        @r#"
        launches: 1
        engine: vllm
        entry: python -m vllm.entrypoints.openai.api_server
        model: m
        interpreter: python
        venv: serve
        wrappers: conda
        option model = "m" (--model m)
        fields: {"engine":"vllm","model":"m","wrapper":"conda"}
    "#
    );
}

#[test]
fn bash_c_script() {
    check!(
        Shell,
        "bash -lc 'exec vllm serve m --port 8001'",
        @r#"
        launches: 1
        engine: vllm
        entry: vllm serve
        model: m
        wrappers: bash -c
        option port = 8001 (--port 8001)
        fields: {"engine":"vllm","model":"m","port":8001,"wrapper":"bash -c"}
    "#
    );
}

#[test]
fn distributed_launcher_runs_a_module() {
    check!(
        Shell,
        "torchrun --nproc_per_node 2 -m sglang.launch_server --model-path m",
        @r#"
        launches: 1
        engine: sglang
        entry: python -m sglang.launch_server
        model: m
        interpreter: python
        option model-path = "m" (--model-path m)
        fields: {"engine":"sglang","model":"m"}
    "#
    );
}

#[test]
fn nsys_label_takes_its_subcommand() {
    check!(
        Shell,
        "nsys profile -o trace vllm serve m",
        @r#"
        launches: 1
        engine: vllm
        entry: vllm serve
        model: m
        wrappers: nsys profile
        fields: {"engine":"vllm","model":"m","wrapper":"nsys profile"}
    "#
    );
}

#[test]
fn sudo_value_flags_and_venv_binary() {
    check!(
        Shell,
        "sudo -u vllm /opt/venv/bin/vllm serve m",
        @r#"
        launches: 1
        engine: vllm
        entry: vllm serve
        model: m
        venv: /opt/venv
        wrappers: venv
        fields: {"engine":"vllm","model":"m","wrapper":"venv"}
    "#
    );
}

#[test]
fn pasted_prompt() {
    check!(
        Shell,
        "(venv) me@gpu1:~/srv$ vllm serve m --port 9000",
        @r#"
        launches: 1
        engine: vllm
        entry: vllm serve
        model: m
        option port = 9000 (--port 9000)
        fields: {"engine":"vllm","model":"m","port":9000}
    "#
    );
}

#[test]
fn console_script_run_by_its_interpreter() {
    check!(
        Argv,
        "/usr/bin/python3\0/opt/venv/bin/vllm\0serve\0m\0",
        @r#"
        launches: 1
        engine: vllm
        entry: vllm serve
        model: m
        interpreter: /usr/bin/python3
        venv: /opt/venv
        wrappers: venv
        fields: {"engine":"vllm","model":"m","wrapper":"venv"}
    "#
    );
}

#[test]
fn tmux_command_given_as_one_string() {
    check!(
        Shell,
        "tmux new -d 'cd /srv && vllm serve m --port 9000'",
        @r#"
        launches: 1
        engine: vllm
        entry: vllm serve
        model: m
        option port = 9000 (--port 9000)
        cwd: /srv
        fields: {"engine":"vllm","model":"m","port":9000}
    "#
    );
}

#[test]
fn no_server_no_launch() {
    check!(
        Shell,
        "ls -la /models && nvidia-smi",
        @"no launch"
    );
}

#[test]
fn python_c_is_not_a_launch() {
    check!(
        Shell,
        "python3 -c 'import vllm'",
        @"no launch"
    );
}

#[test]
fn option_followed_by_an_option_has_no_value() {
    check!(
        Shell,
        "llama-server -hf org/model-GGUF:Q4_K_M --port 8080 -c  -ngl 999",
        @r#"
        launches: 1
        engine: llama.cpp
        entry: llama-server
        model: org/model-GGUF:Q4_K_M
        option ctx-size = null (-c)
        option hf-repo = "org/model-GGUF:Q4_K_M" (-hf org/model-GGUF:Q4_K_M)
        option n-gpu-layers = "999" (-ngl 999)
        option port = 8080 (--port 8080)
        fields: {"engine":"llama.cpp","model":"org/model-GGUF:Q4_K_M","port":8080}
        warning: -c is missing its value
    "#
    );
}
