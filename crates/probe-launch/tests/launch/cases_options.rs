//! Data-driven cases, rust-analyzer style: Option and value reading (`launch/options.rs`,
//! `launch/values.rs`): how each kind of value is taken from the words after a flag, and the
//! engines' start-up log lines. Each case is `(input, expected)`; the expectation is an inline
//! insta snapshot (`cargo insta test --accept` rewrites them after a deliberate change; review the
//! diff).

#[test]
fn inline_values_and_negated_bools() {
    check!(
        Shell,
        "vllm serve m --max-num-seqs=64 --no-enable-prefix-caching --enforce-eager",
        @r#"
        launches: 1
        engine: vllm
        entry: vllm serve
        model: m
        option enable-prefix-caching = false (--no-enable-prefix-caching)
        option enforce-eager = true (--enforce-eager)
        option max-num-seqs = 64 (--max-num-seqs=64)
        fields: {"engine":"vllm","model":"m","max_running_requests":64}
    "#
    );
}

#[test]
fn unknown_option_keeps_its_value() {
    check!(
        Shell,
        "vllm serve m --not-a-flag 3 --port 8000",
        @r#"
        launches: 1
        engine: vllm
        entry: vllm serve
        model: m
        option port = 8000 (--port 8000)
        unknown: --not-a-flag 3
        fields: {"engine":"vllm","model":"m","port":8000}
        warning: unknown option --not-a-flag
    "#
    );
}

#[test]
fn list_option_takes_words_up_to_the_next_option() {
    check!(
        Shell,
        "sglang serve --model-path m --cuda-graph-bs 1 2 4 --tp 2",
        @r#"
        launches: 1
        engine: sglang
        entry: sglang serve
        model: m
        option cuda-graph-bs-decode = ["1","2","4"] (--cuda-graph-bs 1 2 4)
        option model-path = "m" (--model-path m)
        option tp-size = 2 (--tp 2)
        fields: {"engine":"sglang","model":"m","tensor_parallel":2}
    "#
    );
}

#[test]
fn json_option() {
    check!(
        Shell,
        "vllm serve m --speculative-config '{\"method\": \"eagle\", \"num_speculative_tokens\": 3}'",
        @r#"
        launches: 1
        engine: vllm
        entry: vllm serve
        model: m
        option speculative-config = {"method":"eagle","num_speculative_tokens":3} (--speculative-config {"method": "eagle", "num_speculative_tokens": 3})
        fields: {"engine":"vllm","model":"m","speculative":{"algorithm":"eagle","num_speculative_tokens":3}}
    "#
    );
}

#[test]
fn missing_value_at_the_end() {
    check!(
        Shell,
        "vllm serve m --port",
        @r#"
        launches: 1
        engine: vllm
        entry: vllm serve
        model: m
        option port = null (--port)
        fields: {"engine":"vllm","model":"m"}
        warning: --port is missing its value
    "#
    );
}

#[test]
fn sglang_server_args_log_line() {
    check!(
        SglangServerArgs,
        "server_args=ServerArgs(model_path='/m', tp_size=2, mem_fraction_static=0.85, disable_radix_cache=False, chunked_prefill_size=None)",
        @r#"
        launches: 1
        engine: sglang
        entry: sglang start-up log
        model: /m
        option disable-radix-cache = false (--disable-radix-cache=false)
        option mem-fraction-static = 0.85 (--mem-fraction-static 0.85)
        option tp-size = 2 (--tp-size 2)
        fields: {"engine":"sglang","model":"/m","tensor_parallel":2,"gpu_memory_fraction":0.85}
    "#
    );
}

#[test]
fn vllm_non_default_args_log_line() {
    check!(
        VllmNonDefaultArgs,
        "non-default args: {'model_tag': 'm', 'max_model_len': 8192, 'enable_prefix_caching': True}",
        @r#"
        launches: 1
        engine: vllm
        entry: vllm start-up log
        model: m
        option enable-prefix-caching = true (--enable-prefix-caching)
        option max-model-len = 8192 (--max-model-len 8192)
        fields: {"engine":"vllm","model":"m","context_length":8192}
    "#
    );
}
