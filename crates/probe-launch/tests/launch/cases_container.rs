//! Data-driven cases, rust-analyzer style. The container readers (`launch/container.rs`): `docker
//! run`, compose services, Kubernetes containers. Each case is `(input, expected)`; the expectation
//! is an inline insta snapshot (`cargo insta test --accept` rewrites them after a deliberate
//! change; review the diff).

#[test]
fn docker_run_image_entry_point() {
    check!(
        Shell,
        "docker run --gpus all -p 8000:8000 vllm/vllm-openai:v0.8.5 --model m --tensor-parallel-size 2",
        @r#"
        launches: 1
        engine: vllm
        entry: vllm serve
        model: m
        wrappers: docker
        option model = "m" (--model m)
        option tensor-parallel-size = 2 (--tensor-parallel-size 2)
        fields: {"engine":"vllm","model":"m","tensor_parallel":2,"wrapper":"docker"}
    "#
    );
}

#[test]
fn docker_run_with_command_and_env() {
    check!(
        Shell,
        "docker run -e HF_TOKEN=secret --name s lmsysorg/sglang:latest python3 -m sglang.launch_server --model-path m",
        @r#"
        launches: 1
        engine: sglang
        entry: python -m sglang.launch_server
        model: m
        interpreter: python3
        wrappers: docker
        option model-path = "m" (--model-path m)
        env: HF_TOKEN=secret
        fields: {"engine":"sglang","model":"m","env":{"HF_TOKEN":"secret"},"wrapper":"docker"}
    "#
    );
}

#[test]
fn unknown_image_guessed_from_its_name() {
    check!(
        Shell,
        "docker run -e VLLM_USE_V1=1 vastai/vllm:v0.7.0 --model m --tensor-parallel-size 2",
        @r#"
        launches: 1
        engine: vllm
        entry: vllm serve
        model: m
        wrappers: docker
        option model = "m" (--model m)
        option tensor-parallel-size = 2 (--tensor-parallel-size 2)
        env: VLLM_USE_V1=1
        fields: {"engine":"vllm","model":"m","tensor_parallel":2,"env":{"VLLM_USE_V1":"1"},"wrapper":"docker"}
    "#
    );
}

#[test]
fn compose_service() {
    check!(
        Compose,
        "services:\n  llm:\n    image: vllm/vllm-openai:latest\n    command: [\"--model\", \"m\", \"--max-model-len\", \"8192\"]\n    environment:\n      - VLLM_LOGGING_LEVEL=DEBUG\n",
        @r#"
        launches: 1
        engine: vllm
        entry: vllm serve
        model: m
        wrappers: docker
        option max-model-len = 8192 (--max-model-len 8192)
        option model = "m" (--model m)
        env: VLLM_LOGGING_LEVEL=DEBUG
        fields: {"engine":"vllm","model":"m","context_length":8192,"env":{"VLLM_LOGGING_LEVEL":"DEBUG"},"wrapper":"docker"}
    "#
    );
}

#[test]
fn kubernetes_container() {
    check!(
        Kubernetes,
        "containers:\n  - name: sglang\n    image: lmsysorg/sglang:v0.4.6\n    command: [\"python3\", \"-m\", \"sglang.launch_server\"]\n    args: [\"--model-path\", \"m\", \"--tp\", \"2\"]\n",
        @r#"
        launches: 1
        engine: sglang
        entry: python -m sglang.launch_server
        model: m
        interpreter: python3
        option model-path = "m" (--model-path m)
        option tp-size = 2 (--tp 2)
        fields: {"engine":"sglang","model":"m","tensor_parallel":2}
    "#
    );
}

#[test]
fn dockerfile_env_builds_on_earlier_env() {
    // The builder substitutes `$PATH` in an `ENV` with the value an earlier `ENV` gave it; the
    // base image's own value is not in the text and stays `$PATH`. Single quotes keep `$`.
    check!(
        Dockerfile,
        "FROM lmsysorg/sglang:latest\nENV PATH=\"/root/.local/bin:$PATH\"\nENV PATH=\"/opt/venv/bin:$PATH\" HOME=/root\nENV CACHE=${HOME}/.cache LIT='$HOME' OLD=$UNSET\nCMD [\"python3\", \"-m\", \"sglang.launch_server\", \"--model-path\", \"m\"]\n",
        @r#"
        launches: 1
        engine: sglang
        entry: python -m sglang.launch_server
        model: m
        interpreter: python3
        wrappers: docker
        option model-path = "m" (--model-path m)
        env: CACHE=/root/.cache HOME=/root LIT=$HOME OLD=$UNSET PATH=/opt/venv/bin:/root/.local/bin:$PATH
        fields: {"engine":"sglang","model":"m","env":{"CACHE":"/root/.cache","HOME":"/root","LIT":"$HOME","OLD":"$UNSET","PATH":"/opt/venv/bin:/root/.local/bin:$PATH"},"wrapper":"docker"}
    "#
    );
}
