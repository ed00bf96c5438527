//! Data-driven cases for the launch-text shapes of issue 34's third pass that real texts use
//! every day: supervisord programs (written from supervisord's documented format: `command=`
//! over indented continuation lines, `environment=` with quoted commas, `%(ENV_X)s`), a `case`
//! or `if` on a value that picks the launch, values a program prints (`$(python3 -c "...")`
//! over several lines), SkyPilot tasks (`envs:` feeding `run:`, `setup:` no launch), an argv
//! built in a string with defaults only when empty, and compose files read with the `.env`
//! beside them (the compose spec's `${VAR:-d}`, `${VAR-d}`, `${VAR:?e}`, `${VAR:+r}`). Each
//! `check!` case is `(input, expected)` against an inline snapshot (see `support/render.rs`);
//! the compose cases are `(compose, .env, expected fields)`.

use probe_launch::common::common_fields;
use probe_launch::compose_env::dotenv;
use probe_launch::{ParseHints, reconstruct};
use serde_json::{Value, json};

#[test]
fn supervisord_command_over_continuation_lines_through_a_login_shell() {
    // supervisord reads its file with Python's ConfigParser: an indented line continues the
    // value; `command=` is split as shlex does, so the single-quoted script is one argument.
    check!(
        Auto,
        "[program:vllm_vision]\ndirectory=/workspace\n\ncommand=/bin/bash -lc 'source /workspace/.venv/bin/activate; \\\n  export CUDA_VISIBLE_DEVICES=0; \\\n  vllm serve OpenGVLab/InternVL3_5-14B \\\n    --host 127.0.0.1 \\\n    --port 8001 \\\n    --max-model-len 32768 \\\n    --served-model-name internvl'\n\nautostart=true\nstdout_logfile=/workspace/logs/vllm.log\n",
        @r#"
        launches: 1
        engine: vllm
        entry: vllm serve
        model: OpenGVLab/InternVL3_5-14B
        venv: /workspace/.venv
        wrappers: bash -c > venv
        option host = "127.0.0.1" (--host 127.0.0.1)
        option max-model-len = 32768 (--max-model-len 32768)
        option port = 8001 (--port 8001)
        option served-model-name = ["internvl"] (--served-model-name internvl)
        env: CUDA_VISIBLE_DEVICES=0
        logs: /workspace/logs/vllm.log
        cwd: /workspace
        fields: {"engine":"vllm","model":"OpenGVLab/InternVL3_5-14B","host":"127.0.0.1","port":8001,"served_model_name":"internvl","context_length":32768,"env":{"CUDA_VISIBLE_DEVICES":"0"},"wrapper":"bash -c"}
    "#,
    );
    check!(
        Auto,
        "[program:vllm-primary]\ncommand=/opt/venv/bin/vllm serve mistralai/Mistral-7B-Instruct-v0.3\n        --port 8300 --gpu-memory-utilization 0.75 --max-model-len 8192\nenvironment=CUDA_VISIBLE_DEVICES=\"0\"\n",
        @r#"
        launches: 1
        engine: vllm
        entry: vllm serve
        model: mistralai/Mistral-7B-Instruct-v0.3
        venv: /opt/venv
        wrappers: venv
        option gpu-memory-utilization = 0.75 (--gpu-memory-utilization 0.75)
        option max-model-len = 8192 (--max-model-len 8192)
        option port = 8300 (--port 8300)
        env: CUDA_VISIBLE_DEVICES=0
        fields: {"engine":"vllm","model":"mistralai/Mistral-7B-Instruct-v0.3","port":8300,"context_length":8192,"gpu_memory_fraction":0.75,"env":{"CUDA_VISIBLE_DEVICES":"0"},"wrapper":"venv"}
    "#,
    );
}

#[test]
fn supervisord_environment_and_its_own_expansions() {
    check!(
        Auto,
        "[program:sglang]\ncommand=python3 -m sglang.launch_server --model-path %(ENV_MODEL_PATH)s --tp 2 --port 30000\nenvironment=CUDA_VISIBLE_DEVICES=\"0,1\",HF_HOME=\"/data/hf\",SGLANG_LOG=%(ENV_LOGLEVEL)s\nstdout_logfile=/var/log/%(program_name)s.out\n",
        @r#"
        launches: 1
        engine: sglang
        entry: python -m sglang.launch_server
        model: %(ENV_MODEL_PATH)s
        interpreter: python3
        option model-path = "%(ENV_MODEL_PATH)s" (--model-path %(ENV_MODEL_PATH)s)
        option port = 30000 (--port 30000)
        option tp-size = 2 (--tp 2)
        env: CUDA_VISIBLE_DEVICES=0,1 HF_HOME=/data/hf SGLANG_LOG=%(ENV_LOGLEVEL)s
        logs: /var/log/sglang.out
        fields: {"engine":"sglang","model":"%(ENV_MODEL_PATH)s","tensor_parallel":2,"port":30000,"env":{"CUDA_VISIBLE_DEVICES":"0,1","HF_HOME":"/data/hf","SGLANG_LOG":"%(ENV_LOGLEVEL)s"}}
    "#,
    );
    // Programs that serve no model, and a section without `command=`: no launch.
    check!(
        Auto,
        "[supervisord]\nnodaemon=true\n\n[program:jupyter]\ncommand=/bin/bash -c \"jupyter lab --ip=0.0.0.0 --port=8000\"\n\n[program:worker]\ndirectory=/srv\n",
        @"no launch",
    );
}

#[test]
fn a_case_on_a_value_picks_the_launch() {
    // Each arm's launch, with the value it runs under; the arm that exits runs none. An
    // export in one arm is the environment of that arm's server only.
    check!(
        Auto,
        "#!/bin/bash\nMODEL=Qwen/Qwen2.5-7B-Instruct\ncase \"$1\" in\n  vllm)\n    export VLLM_USE_V1=1\n    vllm serve $MODEL --port 8000 --max-model-len 8192\n    ;;\n  sglang)\n    export SGLANG_ENABLE_JIT_DEEPGEMM=0\n    python3 -m sglang.launch_server --model-path $MODEL --port 30000\n    ;;\n  *)\n    echo \"usage: $0 vllm|sglang\"; exit 1\n    ;;\nesac\n",
        @r#"
        launches: 2
        engine: vllm
        entry: vllm serve
        model: Qwen/Qwen2.5-7B-Instruct
        option max-model-len = 8192 (--max-model-len 8192)
        option port = 8000 (--port 8000)
        env: VLLM_USE_V1=1
        fields: {"engine":"vllm","model":"Qwen/Qwen2.5-7B-Instruct","port":8000,"context_length":8192,"env":{"VLLM_USE_V1":"1"}}
        warning: when $1 = vllm
        warning: one of 3 branches runs, and the text does not fix which: $1 = vllm; $1 = sglang; $1 = *
        ---
        engine: sglang
        entry: python -m sglang.launch_server
        model: Qwen/Qwen2.5-7B-Instruct
        interpreter: python3
        option model-path = "Qwen/Qwen2.5-7B-Instruct" (--model-path Qwen/Qwen2.5-7B-Instruct)
        option port = 30000 (--port 30000)
        env: SGLANG_ENABLE_JIT_DEEPGEMM=0
        fields: {"engine":"sglang","model":"Qwen/Qwen2.5-7B-Instruct","port":30000,"env":{"SGLANG_ENABLE_JIT_DEEPGEMM":"0"}}
        warning: when $1 = sglang
        warning: one of 3 branches runs, and the text does not fix which: $1 = vllm; $1 = sglang; $1 = *
    "#,
    );
    // The same choice with `if`/`elif` on a variable from outside the text.
    check!(
        Auto,
        "if [ \"$ENGINE\" = vllm ]; then\n  export VLLM_ATTENTION_BACKEND=FLASH_ATTN\n  vllm serve m --tensor-parallel-size 2\nelif [ \"$ENGINE\" = sglang ]; then\n  python -m sglang.launch_server --model-path m --tp 2\nfi\n",
        @r#"
        launches: 2
        engine: vllm
        entry: vllm serve
        model: m
        option tensor-parallel-size = 2 (--tensor-parallel-size 2)
        env: VLLM_ATTENTION_BACKEND=FLASH_ATTN
        fields: {"engine":"vllm","model":"m","tensor_parallel":2,"env":{"VLLM_ATTENTION_BACKEND":"FLASH_ATTN"}}
        warning: when $ENGINE = vllm
        warning: one of 3 branches runs, and the text does not fix which: $ENGINE = vllm; $ENGINE = sglang; otherwise none of them
        ---
        engine: sglang
        entry: python -m sglang.launch_server
        model: m
        interpreter: python
        option model-path = "m" (--model-path m)
        option tp-size = 2 (--tp 2)
        fields: {"engine":"sglang","model":"m","tensor_parallel":2}
        warning: when $ENGINE = sglang, unless $ENGINE = vllm
        warning: one of 3 branches runs, and the text does not fix which: $ENGINE = vllm; $ENGINE = sglang; otherwise none of them
    "#,
    );
}

#[test]
fn a_value_a_program_prints_is_not_guessed() {
    check!(
        Auto,
        "#!/bin/bash\nMAX_LEN=$(python3 -c \"\nimport json\ncfg = json.load(open('/models/q/config.json'))\nprint(cfg['max_position_embeddings'])\n\")\nvllm serve /models/q --max-model-len $MAX_LEN --port 8000\n",
        @r#"
        launches: 1
        engine: vllm
        entry: vllm serve
        model: /models/q
        option max-model-len = "$MAX_LEN" (--max-model-len $MAX_LEN)
        option port = 8000 (--port 8000)
        fields: {"engine":"vllm","model":"/models/q","port":8000,"context_length":"$MAX_LEN"}
        warning: $MAX_LEN is unknown: it is what $(python3 -c " … ) prints, which the text does not hold
    "#,
    );
    // Inline in the command: an unknown number of words, none invented.
    check!(
        Auto,
        "vllm serve /models/q --port 8000 $(python3 -c \"\nimport torch\nprint('--tensor-parallel-size', torch.cuda.device_count())\n\")\n",
        @r#"
        launches: 1
        engine: vllm
        entry: vllm serve
        model: /models/q
        option port = 8000 (--port 8000)
        fields: {"engine":"vllm","model":"/models/q","port":8000}
        warning: arguments come from $(python3 -c "
        import torch
        print('--tensor-parallel-size', torch.cuda.device_count())
        "), whose output is not in the text (an unknown number of words)
    "#,
    );
    // A one-line pipeline's output is kept as written where it is used.
    check!(
        Auto,
        "TP=$(nvidia-smi -L | wc -l)\nvllm serve m --tensor-parallel-size $TP\n",
        @r#"
        launches: 1
        engine: vllm
        entry: vllm serve
        model: m
        option tensor-parallel-size = "$(nvidia-smi -L | wc -l)" (--tensor-parallel-size $(nvidia-smi -L | wc -l))
        fields: {"engine":"vllm","model":"m","tensor_parallel":"$(nvidia-smi -L | wc -l)"}
    "#,
    );
}

#[test]
fn an_argv_built_in_a_string_with_defaults_when_empty() {
    check!(
        Auto,
        "if [ -z \"$GPU_NUM\" ]; then\n    GPU_NUM=1\nfi\nargs=\"--model $REPO_ID --tensor-parallel-size $GPU_NUM\"\nif [ -f \"$cfg\" ]; then\n    MAX=$(grep max_position_embeddings $cfg | cut -d: -f2 | tr -d ' ,')\n    args=\"$args --max-model-len $MAX\"\nfi\npython3 -m vllm.entrypoints.openai.api_server $args\n",
        @r#"
        launches: 2
        engine: vllm
        entry: python -m vllm.entrypoints.openai.api_server
        model: $REPO_ID
        interpreter: python3
        option model = "$REPO_ID" (--model $REPO_ID)
        option tensor-parallel-size = "$GPU_NUM" (--tensor-parallel-size $GPU_NUM)
        fields: {"engine":"vllm","model":"$REPO_ID","tensor_parallel":"$GPU_NUM"}
        warning: $GPU_NUM is unknown: 1 when it is empty, else the value it has from outside the text
        ---
        engine: vllm
        entry: python -m vllm.entrypoints.openai.api_server
        model: $REPO_ID
        interpreter: python3
        option max-model-len = "$(grep max_position_embeddings $cfg | cut -d: -f2 | tr -d ' ,')" (--max-model-len $(grep max_position_embeddings $cfg | cut -d: -f2 | tr -d ' ,'))
        option model = "$REPO_ID" (--model $REPO_ID)
        option tensor-parallel-size = "$GPU_NUM" (--tensor-parallel-size $GPU_NUM)
        fields: {"engine":"vllm","model":"$REPO_ID","tensor_parallel":"$GPU_NUM","context_length":"$(grep max_position_embeddings $cfg | cut -d: -f2 | tr -d ' ,')"}
        warning: when -f $cfg
        warning: $GPU_NUM is unknown: 1 when it is empty, else the value it has from outside the text
    "#,
    );
}

#[test]
fn a_skypilot_task_with_a_value_given_at_launch() {
    // `envs:` without a value is given with `--env` at `sky launch`: not in the text.
    // `setup:` installs; `run:` is the launch, its arithmetic on SkyPilot's variables kept.
    check!(
        Auto,
        "envs:\n  MODEL_NAME: Qwen/Qwen2.5-72B-Instruct\n  HF_TOKEN:\n\nresources:\n  accelerators: H100:8\n\nnum_nodes: 2\n\nsetup: |\n  pip install vllm\n\nrun: |\n  TP=$(($SKYPILOT_NUM_GPUS_PER_NODE * $SKYPILOT_NUM_NODES))\n  vllm serve $MODEL_NAME --tensor-parallel-size $TP --port 8000\n",
        @r#"
        launches: 1
        engine: vllm
        entry: vllm serve
        model: Qwen/Qwen2.5-72B-Instruct
        option port = 8000 (--port 8000)
        option tensor-parallel-size = "$(($SKYPILOT_NUM_GPUS_PER_NODE * $SKYPILOT_NUM_NODES))" (--tensor-parallel-size $(($SKYPILOT_NUM_GPUS_PER_NODE * $SKYPILOT_NUM_NODES)))
        env: MODEL_NAME=Qwen/Qwen2.5-72B-Instruct
        fields: {"engine":"vllm","model":"Qwen/Qwen2.5-72B-Instruct","tensor_parallel":"$(($SKYPILOT_NUM_GPUS_PER_NODE * $SKYPILOT_NUM_NODES))","port":8000,"env":{"MODEL_NAME":"Qwen/Qwen2.5-72B-Instruct"}}
        warning: the run: script of a SkyPilot task, with its envs: exported
    "#,
    );
}

/// `(compose, .env, expected fields)`: Compose interpolates with the `.env` beside the file;
/// a variable the `.env` does not set stays as written (the shell may set it).
#[test]
fn compose_interpolation_with_the_dotenv_beside_it() {
    let compose = |command: &str| {
        format!("services:\n  llm:\n    image: vllm/vllm-openai:v0.9.1\n    command: {command}\n")
    };
    let cases: Vec<(String, &str, Value)> = vec![
        (
            compose("--model ${MODEL:-Qwen/Qwen2.5-7B-Instruct} --max-model-len ${MAX_LEN-4096}"),
            "MAX_LEN=\n",
            json!({"engine": "vllm", "model": "${MODEL:-Qwen/Qwen2.5-7B-Instruct}", "wrapper": "docker"}),
        ),
        (
            compose("--model ${MODEL:?set MODEL in .env} ${TP:+--tensor-parallel-size $TP}"),
            "MODEL=meta-llama/Llama-3.1-8B-Instruct\nTP=2\n",
            json!({"engine": "vllm", "model": "meta-llama/Llama-3.1-8B-Instruct", "tensor_parallel": 2, "wrapper": "docker"}),
        ),
        (
            compose("--model ${MODEL:-${DEFAULT_MODEL}} --port ${PORT:-8000}"),
            "MODEL=\nDEFAULT_MODEL=\"Qwen/Qwen3-8B\"\nexport PORT=9000 # the port\n",
            json!({"engine": "vllm", "model": "Qwen/Qwen3-8B", "port": 9000, "wrapper": "docker"}),
        ),
        (
            compose("--model m ${EXTRA:+--enforce-eager} --max-num-seqs ${SEQS:-64}"),
            "EXTRA=\n",
            json!({"engine": "vllm", "model": "m", "max_running_requests": "${SEQS:-64}", "wrapper": "docker"}),
        ),
    ];
    for (text, env, want) in cases {
        let hints = ParseHints {
            env: dotenv(env),
            ..ParseHints::default()
        };
        let got = reconstruct(&text, &hints);
        assert_eq!(
            got.first().map(common_fields),
            Some(want),
            "{text}\n.env:\n{env}"
        );
    }
}

#[test]
fn extra_arguments_from_outside_are_no_model() {
    // `sglang serve` takes a positional model, but a variable the text leaves to the
    // environment stands for any number of words: the named `--model-path` is the model.
    // `pty` is Vast.ai's shell function around `unbuffer -p`.
    check!(
        Auto,
        "pty sglang serve --model-path \"${SGLANG_MODEL:-}\" ${SGLANG_ARGS:-} --port 18000\n",
        @r#"
        launches: 1
        engine: sglang
        entry: sglang serve
        model: ${SGLANG_MODEL:-}
        option model-path = "${SGLANG_MODEL:-}" (--model-path ${SGLANG_MODEL:-})
        option port = 18000 (--port 18000)
        unknown: ${SGLANG_ARGS:-}
        fields: {"engine":"sglang","model":"${SGLANG_MODEL:-}","port":18000}
        warning: unresolved variable in argument ${SGLANG_ARGS:-}
    "#,
    );
    check!(Auto, "unbuffer -p vllm serve Qwen/Qwen3-8B $EXTRA_ARGS\n", @r#"
        launches: 1
        engine: vllm
        entry: vllm serve
        model: Qwen/Qwen3-8B
        unknown: $EXTRA_ARGS
        fields: {"engine":"vllm","model":"Qwen/Qwen3-8B"}
        warning: unresolved variable in argument $EXTRA_ARGS
    "#);
}

#[test]
fn a_default_set_only_when_empty_is_not_the_value() {
    // `[ -z "$TP" ] && TP=2`: the environment's TP otherwise, so the value is unknown.
    check!(
        Auto,
        "[ -z \"$TP\" ] && TP=2\nvllm serve m --tensor-parallel-size $TP\n",
        @r#"
        launches: 1
        engine: vllm
        entry: vllm serve
        model: m
        option tensor-parallel-size = "$TP" (--tensor-parallel-size $TP)
        fields: {"engine":"vllm","model":"m","tensor_parallel":"$TP"}
        warning: $TP is unknown: 2 when it is empty, else the value it has from outside the text
    "#,
    );
    // Set in the text before the test: the test is decided and the value known.
    check!(
        Auto,
        "TP=4\nif [ -z \"$TP\" ]; then TP=2; fi\nvllm serve m --tensor-parallel-size $TP\n",
        @r#"
        launches: 1
        engine: vllm
        entry: vllm serve
        model: m
        option tensor-parallel-size = 4 (--tensor-parallel-size 4)
        fields: {"engine":"vllm","model":"m","tensor_parallel":4}
    "#,
    );
}
