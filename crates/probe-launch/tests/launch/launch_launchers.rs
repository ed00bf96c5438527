//! The launchers of the ecosystem, case by case: engines configured by environment or by their own
//! files (Ollama, LMDeploy, TensorRT-LLM, Triton, Ray Serve), Kubernetes beyond Deployments (Helm
//! values of the vLLM production stack, KServe, LeaderWorkerSet), job and process managers (Slurm,
//! supervisord, pm2, podman quadlets, systemd templates and prefixes) and session managers in
//! history (`tmux`, `screen`, `docker exec`). Each case is `check!(Auto, input, @"expected")`:
//! every launch read from the input, as `support/render.rs` renders it, against an inline insta
//! snapshot; that file says how to update them after a deliberate change.

#[test]
fn ollama_is_configured_by_its_environment() {
    check!(
        Auto,
        "OLLAMA_HOST=0.0.0.0:11434 OLLAMA_CONTEXT_LENGTH=32768 OLLAMA_NUM_PARALLEL=4 ollama serve",
        @r#"
        launches: 1
        engine: ollama
        entry: ollama serve
        option context-length = 32768 (OLLAMA_CONTEXT_LENGTH=32768)
        option host = "0.0.0.0" (OLLAMA_HOST=0.0.0.0:11434)
        option num-parallel = 4 (OLLAMA_NUM_PARALLEL=4)
        option port = 11434 (OLLAMA_HOST=0.0.0.0:11434)
        env: OLLAMA_CONTEXT_LENGTH=32768 OLLAMA_HOST=0.0.0.0:11434 OLLAMA_NUM_PARALLEL=4
        fields: {"engine":"ollama","host":"0.0.0.0","port":11434,"context_length":32768,"env":{"OLLAMA_CONTEXT_LENGTH":"32768","OLLAMA_HOST":"0.0.0.0:11434","OLLAMA_NUM_PARALLEL":"4"}}
    "#,
    );
    check!(
        Auto,
        "[Service]\nExecStart=/usr/local/bin/ollama serve\nUser=ollama\nEnvironment=\"OLLAMA_HOST=0.0.0.0\"\nEnvironment=\"OLLAMA_KV_CACHE_TYPE=q8_0\"\nEnvironment=\"OLLAMA_FLASH_ATTENTION=1\"\n",
        @r#"
        launches: 1
        engine: ollama
        entry: ollama serve
        option flash-attention = "1" (OLLAMA_FLASH_ATTENTION=1)
        option host = "0.0.0.0" (OLLAMA_HOST=0.0.0.0)
        option kv-cache-type = "q8_0" (OLLAMA_KV_CACHE_TYPE=q8_0)
        env: OLLAMA_FLASH_ATTENTION=1 OLLAMA_HOST=0.0.0.0 OLLAMA_KV_CACHE_TYPE=q8_0
        fields: {"engine":"ollama","host":"0.0.0.0","kv_cache_dtype":"q8_0","env":{"OLLAMA_FLASH_ATTENTION":"1","OLLAMA_HOST":"0.0.0.0","OLLAMA_KV_CACHE_TYPE":"q8_0"}}
    "#,
    );
    check!(
        Auto,
        "docker run -d --gpus=all -v ollama:/root/.ollama -p 11434:11434 -e OLLAMA_NUM_PARALLEL=2 --name ollama ollama/ollama",
        @r#"
        launches: 1
        engine: ollama
        entry: ollama serve
        wrappers: docker
        option num-parallel = 2 (OLLAMA_NUM_PARALLEL=2)
        env: OLLAMA_NUM_PARALLEL=2
        fields: {"engine":"ollama","env":{"OLLAMA_NUM_PARALLEL":"2"},"wrapper":"docker"}
    "#,
    );
}

#[test]
fn ollama_modelfile_parameters() {
    check!(
        Auto,
        "FROM qwen2.5:14b\nPARAMETER num_ctx 32768\nPARAMETER temperature 0.6\nSYSTEM \"\"\"You are a helpful assistant.\"\"\"\n",
        @r#"
        launches: 1
        engine: ollama
        entry: Modelfile
        model: qwen2.5:14b
        option num_ctx = 32768 (PARAMETER num_ctx 32768)
        option temperature = 0.6 (PARAMETER temperature 0.6)
        fields: {"engine":"ollama","model":"qwen2.5:14b","context_length":32768}
    "#,
    );
    // Prose that starts "From" is neither.
    check!(
        Auto,
        "From the docs:\nPARAMETER num_ctx sets the context.\nCMD is the container command.\n",
        @"no launch",
    );
    // A Dockerfile is no Modelfile.
    check!(
        Auto,
        "FROM python:3.11\nRUN pip install vllm\nCMD [\"vllm\", \"serve\", \"m\", \"--port\", \"8000\"]\n",
        @r#"
        launches: 1
        engine: vllm
        entry: vllm serve
        model: m
        wrappers: docker
        option port = 8000 (--port 8000)
        fields: {"engine":"vllm","model":"m","port":8000,"wrapper":"docker"}
    "#,
    );
}

#[test]
fn lmdeploy_and_tensorrt_llm() {
    check!(
        Auto,
        "lmdeploy serve api_server internlm/internlm2_5-7b-chat --server-port 23333 --tp 2 --session-len 32768 --cache-max-entry-count 0.5 --backend pytorch",
        @r#"
        launches: 1
        engine: lmdeploy
        entry: lmdeploy serve api_server
        model: internlm/internlm2_5-7b-chat
        option backend = "pytorch" (--backend pytorch)
        option cache-max-entry-count = 0.5 (--cache-max-entry-count 0.5)
        option server-port = 23333 (--server-port 23333)
        option session-len = 32768 (--session-len 32768)
        option tp = 2 (--tp 2)
        fields: {"engine":"lmdeploy","model":"internlm/internlm2_5-7b-chat","tensor_parallel":2,"port":23333,"context_length":32768,"gpu_memory_fraction":0.5}
    "#,
    );
    check!(
        Auto,
        "trtllm-serve meta-llama/Llama-3.1-8B-Instruct --host 0.0.0.0 --port 8000 --backend pytorch --tp_size 2 --max_batch_size 64 --max_seq_len 8192 --kv_cache_free_gpu_memory_fraction 0.9",
        @r#"
        launches: 1
        engine: trtllm
        entry: trtllm-serve
        model: meta-llama/Llama-3.1-8B-Instruct
        option backend = "pytorch" (--backend pytorch)
        option host = "0.0.0.0" (--host 0.0.0.0)
        option kv_cache_free_gpu_memory_fraction = 0.9 (--kv_cache_free_gpu_memory_fraction 0.9)
        option max_batch_size = 64 (--max_batch_size 64)
        option max_seq_len = 8192 (--max_seq_len 8192)
        option port = 8000 (--port 8000)
        option tp_size = 2 (--tp_size 2)
        fields: {"engine":"trtllm","model":"meta-llama/Llama-3.1-8B-Instruct","tensor_parallel":2,"host":"0.0.0.0","port":8000,"context_length":8192,"gpu_memory_fraction":0.9,"max_running_requests":64}
    "#,
    );
    check!(
        Auto,
        "mpirun -n 2 --allow-run-as-root trtllm-serve /models/llama --tp_size 2 --port 8001",
        @r#"
        launches: 1
        engine: trtllm
        entry: trtllm-serve
        model: /models/llama
        wrappers: mpirun
        option port = 8001 (--port 8001)
        option tp_size = 2 (--tp_size 2)
        fields: {"engine":"trtllm","model":"/models/llama","tensor_parallel":2,"port":8001,"wrapper":"mpirun"}
    "#,
    );
    check!(
        Auto,
        "mpirun --allow-run-as-root --oversubscribe -np 8 trtllm-llmapi-launch trtllm-serve deepseek-ai/DeepSeek-R1 --tp_size 8 --ep_size 8",
        @r#"
        launches: 1
        engine: trtllm
        entry: trtllm-serve
        model: deepseek-ai/DeepSeek-R1
        wrappers: mpirun
        option ep_size = 8 (--ep_size 8)
        option tp_size = 8 (--tp_size 8)
        fields: {"engine":"trtllm","model":"deepseek-ai/DeepSeek-R1","tensor_parallel":8,"wrapper":"mpirun"}
    "#,
    );
}

#[test]
fn triton_server() {
    check!(
        Auto,
        "tritonserver --model-repository=/models --http-port 8000 --grpc-port 8001 --metrics-port 8002",
        @r#"
        launches: 1
        engine: other
        entry: tritonserver
        model: /models
        option grpc-port = 8001 (--grpc-port 8001)
        option http-port = 8000 (--http-port 8000)
        option metrics-port = 8002 (--metrics-port 8002)
        option model-repository = "/models" (--model-repository=/models)
        fields: {"engine":"other","model":"/models","port":8000}
    "#,
    );
    check!(
        Auto,
        "docker run --gpus all --rm -p8000:8000 -v $PWD/models:/models nvcr.io/nvidia/tritonserver:24.08-trtllm-python-py3 tritonserver --model-repository /models --log-verbose 1",
        @r#"
        launches: 1
        engine: other
        entry: tritonserver
        model: /models
        wrappers: docker
        option log-verbose = 1 (--log-verbose 1)
        option model-repository = "/models" (--model-repository /models)
        fields: {"engine":"other","model":"/models","wrapper":"docker"}
    "#,
    );
}

#[test]
fn ray_serve() {
    check!(
        Auto,
        "apiVersion: ray.io/v1\nkind: RayService\nmetadata:\n  name: ray-serve-llm\nspec:\n  serveConfigV2: |\n    applications:\n    - name: llms\n      import_path: ray.serve.llm:build_openai_app\n      args:\n        llm_configs:\n        - model_loading_config:\n            model_id: qwen2.5-7b-instruct\n            model_source: Qwen/Qwen2.5-7B-Instruct\n          engine_kwargs:\n            dtype: bfloat16\n            max_model_len: 1024\n            tensor_parallel_size: 2\n            gpu_memory_utilization: 0.75\n",
        @r#"
        launches: 1
        engine: vllm
        entry: vllm serve
        model: Qwen/Qwen2.5-7B-Instruct
        option dtype = "bfloat16" (--dtype bfloat16)
        option gpu-memory-utilization = 0.75 (--gpu_memory_utilization 0.75)
        option max-model-len = 1024 (--max_model_len 1024)
        option served-model-name = ["qwen2.5-7b-instruct"] (--served-model-name qwen2.5-7b-instruct)
        option tensor-parallel-size = 2 (--tensor_parallel_size 2)
        fields: {"engine":"vllm","model":"Qwen/Qwen2.5-7B-Instruct","tensor_parallel":2,"served_model_name":"qwen2.5-7b-instruct","context_length":1024,"gpu_memory_fraction":0.75,"dtype":"bfloat16"}
    "#,
    );
    check!(Auto, "serve run serve_config.yaml", @"no launch");
}

#[test]
fn kubernetes_beyond_deployments() {
    // Helm values of the vLLM production stack: the chart turns each modelSpec into `vllm serve`.
    check!(
        Auto,
        "servingEngineSpec:\n  runtimeClassName: \"\"\n  modelSpec:\n  - name: \"llama3\"\n    repository: \"vllm/vllm-openai\"\n    tag: \"latest\"\n    modelURL: \"meta-llama/Llama-3.1-8B-Instruct\"\n    replicaCount: 1\n    requestGPU: 2\n    vllmConfig:\n      maxModelLen: 4096\n      dtype: \"bfloat16\"\n      tensorParallelSize: 2\n      extraArgs: [\"--gpu-memory-utilization\", \"0.8\"]\n",
        @r#"
        launches: 1
        engine: vllm
        entry: vllm serve
        model: meta-llama/Llama-3.1-8B-Instruct
        option dtype = "bfloat16" (--dtype bfloat16)
        option gpu-memory-utilization = 0.8 (--gpu-memory-utilization 0.8)
        option max-model-len = 4096 (--max-model-len 4096)
        option tensor-parallel-size = 2 (--tensor-parallel-size 2)
        fields: {"engine":"vllm","model":"meta-llama/Llama-3.1-8B-Instruct","tensor_parallel":2,"context_length":4096,"gpu_memory_fraction":0.8,"dtype":"bfloat16"}
    "#,
    );
    // KServe: the serving runtime supplies the image; the predictor's args are the server's.
    check!(
        Auto,
        "apiVersion: serving.kserve.io/v1beta1\nkind: InferenceService\nmetadata:\n  name: huggingface-llama3\nspec:\n  predictor:\n    model:\n      modelFormat:\n        name: huggingface\n      args:\n        - --model_name=llama3\n        - --model_id=meta-llama/meta-llama-3-8b-instruct\n        - --max-model-len=8192\n        - --tensor-parallel-size=2\n      resources:\n        limits:\n          nvidia.com/gpu: \"2\"\n",
        @r#"
        launches: 1
        engine: vllm
        entry: vllm serve
        model: meta-llama/meta-llama-3-8b-instruct
        option max-model-len = 8192 (--max-model-len=8192)
        option served-model-name = ["llama3"] (--served-model-name llama3)
        option tensor-parallel-size = 2 (--tensor-parallel-size=2)
        fields: {"engine":"vllm","model":"meta-llama/meta-llama-3-8b-instruct","tensor_parallel":2,"served_model_name":"llama3","context_length":8192}
    "#,
    );
    // With vLLM turned off, the predictor runs transformers: no vLLM launch.
    check!(
        Auto,
        "apiVersion: serving.kserve.io/v1beta1\nkind: InferenceService\nspec:\n  predictor:\n    model:\n      modelFormat:\n        name: huggingface\n      args:\n      - --model_name=llama2\n      - --model_id=meta-llama/Llama-2-7b-chat-hf\n      - --backend=huggingface\n",
        @"no launch",
    );
    // LeaderWorkerSet: the leader serves; the workers only join.
    check!(
        Auto,
        "apiVersion: leaderworkerset.x-k8s.io/v1\nkind: LeaderWorkerSet\nmetadata:\n  name: sglang\nspec:\n  leaderWorkerTemplate:\n    size: 2\n    leaderTemplate:\n      spec:\n        containers:\n          - name: sglang-leader\n            image: lmsysorg/sglang:latest\n            command:\n              - python3\n              - -m\n              - sglang.launch_server\n              - --model-path\n              - meta-llama/Meta-Llama-3.1-8B-Instruct\n              - --tp\n              - \"2\"\n              - --nnodes\n              - $(LWS_GROUP_SIZE)\n              - --port\n              - \"40000\"\n    workerTemplate:\n      spec:\n        containers:\n          - name: sglang-worker\n            image: lmsysorg/sglang:latest\n            command:\n              - python3\n              - -m\n              - sglang.launch_server\n              - --model-path\n              - meta-llama/Meta-Llama-3.1-8B-Instruct\n              - --tp\n              - \"2\"\n",
        @r#"
        launches: 2
        engine: sglang
        entry: python -m sglang.launch_server
        model: meta-llama/Meta-Llama-3.1-8B-Instruct
        interpreter: python3
        option model-path = "meta-llama/Meta-Llama-3.1-8B-Instruct" (--model-path meta-llama/Meta-Llama-3.1-8B-Instruct)
        option nnodes = "$(LWS_GROUP_SIZE)" (--nnodes $(LWS_GROUP_SIZE))
        option port = 40000 (--port 40000)
        option tp-size = 2 (--tp 2)
        fields: {"engine":"sglang","model":"meta-llama/Meta-Llama-3.1-8B-Instruct","tensor_parallel":2,"port":40000}
        ---
        engine: sglang
        entry: python -m sglang.launch_server
        model: meta-llama/Meta-Llama-3.1-8B-Instruct
        interpreter: python3
        option model-path = "meta-llama/Meta-Llama-3.1-8B-Instruct" (--model-path meta-llama/Meta-Llama-3.1-8B-Instruct)
        option tp-size = 2 (--tp 2)
        fields: {"engine":"sglang","model":"meta-llama/Meta-Llama-3.1-8B-Instruct","tensor_parallel":2}
    "#,
    );
}

#[test]
fn slurm_batch_scripts() {
    check!(
        Auto,
        "#!/bin/bash\n#SBATCH --job-name=vllm\n#SBATCH --gres=gpu:4\n#SBATCH --nodes=1\nmodule load cuda/12.4\nsource ~/venvs/vllm/bin/activate\nsrun --ntasks=1 --gpus-per-task=4 vllm serve meta-llama/Llama-3.1-70B-Instruct --tensor-parallel-size 4 --port 8000\n",
        @r#"
        launches: 1
        engine: vllm
        entry: vllm serve
        model: meta-llama/Llama-3.1-70B-Instruct
        venv: ~/venvs/vllm
        wrappers: srun > venv
        option port = 8000 (--port 8000)
        option tensor-parallel-size = 4 (--tensor-parallel-size 4)
        fields: {"engine":"vllm","model":"meta-llama/Llama-3.1-70B-Instruct","tensor_parallel":4,"port":8000,"wrapper":"srun"}
    "#,
    );
}

#[test]
fn supervisord_programs() {
    check!(
        Auto,
        "[supervisord]\nnodaemon=true\n\n[program:vllm]\ncommand=/opt/venv/bin/vllm serve Qwen/Qwen2.5-7B-Instruct --port 8000 --max-model-len 16384\ndirectory=/srv/llm\nenvironment=CUDA_VISIBLE_DEVICES=\"0,1\",HF_HOME=\"/data/hf\"\nautostart=true\nautorestart=true\nstdout_logfile=/var/log/vllm.out.log\n",
        @r#"
        launches: 1
        engine: vllm
        entry: vllm serve
        model: Qwen/Qwen2.5-7B-Instruct
        venv: /opt/venv
        wrappers: venv
        option max-model-len = 16384 (--max-model-len 16384)
        option port = 8000 (--port 8000)
        env: CUDA_VISIBLE_DEVICES=0,1 HF_HOME=/data/hf
        logs: /var/log/vllm.out.log
        cwd: /srv/llm
        fields: {"engine":"vllm","model":"Qwen/Qwen2.5-7B-Instruct","port":8000,"context_length":16384,"env":{"CUDA_VISIBLE_DEVICES":"0,1","HF_HOME":"/data/hf"},"wrapper":"venv"}
    "#,
    );
}

#[test]
fn pm2_ecosystem_files() {
    check!(
        Auto,
        "module.exports = {\n  apps: [\n    {\n      name: 'vllm',\n      script: 'vllm',\n      args: 'serve Qwen/Qwen2.5-7B-Instruct --port 8000 --gpu-memory-utilization 0.85',\n      interpreter: 'none',\n      env: {\n        CUDA_VISIBLE_DEVICES: '0',\n      },\n    },\n  ],\n};\n",
        @r#"
        launches: 1
        engine: vllm
        entry: vllm serve
        model: Qwen/Qwen2.5-7B-Instruct
        option gpu-memory-utilization = 0.85 (--gpu-memory-utilization 0.85)
        option port = 8000 (--port 8000)
        env: CUDA_VISIBLE_DEVICES=0
        fields: {"engine":"vllm","model":"Qwen/Qwen2.5-7B-Instruct","port":8000,"gpu_memory_fraction":0.85,"env":{"CUDA_VISIBLE_DEVICES":"0"}}
    "#,
    );
    check!(
        Auto,
        "pm2 start \"python -m sglang.launch_server --model-path Qwen/Qwen2.5-7B --port 30000\" --name sglang",
        @r#"
        launches: 1
        engine: sglang
        entry: python -m sglang.launch_server
        model: Qwen/Qwen2.5-7B
        interpreter: python
        option model-path = "Qwen/Qwen2.5-7B" (--model-path Qwen/Qwen2.5-7B)
        option port = 30000 (--port 30000)
        fields: {"engine":"sglang","model":"Qwen/Qwen2.5-7B","port":30000}
    "#,
    );
}

#[test]
fn podman_quadlets() {
    check!(
        Auto,
        "[Unit]\nDescription=vLLM\n\n[Container]\nImage=docker.io/vllm/vllm-openai:v0.8.5\nContainerName=vllm\nAddDevice=nvidia.com/gpu=all\nEnvironment=HF_HOME=/data/hf\nPublishPort=8000:8000\nExec=--model Qwen/Qwen2.5-7B-Instruct --max-model-len 8192\n\n[Install]\nWantedBy=default.target\n",
        @r#"
        launches: 1
        engine: vllm
        entry: vllm serve
        model: Qwen/Qwen2.5-7B-Instruct
        wrappers: podman
        option max-model-len = 8192 (--max-model-len 8192)
        option model = "Qwen/Qwen2.5-7B-Instruct" (--model Qwen/Qwen2.5-7B-Instruct)
        env: HF_HOME=/data/hf
        fields: {"engine":"vllm","model":"Qwen/Qwen2.5-7B-Instruct","context_length":8192,"env":{"HF_HOME":"/data/hf"},"wrapper":"docker"}
    "#,
    );
}

#[test]
fn systemd_templates_and_prefixes() {
    check!(
        Auto,
        "[Unit]\nDescription=vLLM on GPU %i\n[Service]\nEnvironment=CUDA_VISIBLE_DEVICES=%i\nExecStart=/opt/vllm/bin/vllm serve /models/qwen --port 800%i\n",
        @r#"
        launches: 1
        engine: vllm
        entry: vllm serve
        model: /models/qwen
        option port = "800%i" (--port 800%i)
        env: CUDA_VISIBLE_DEVICES=%i
        fields: {"engine":"vllm","model":"/models/qwen","port":"800%i","env":{"CUDA_VISIBLE_DEVICES":"%i"}}
        warning: specifier %i left unresolved
    "#,
    );
    check!(
        Auto,
        "[Service]\nExecStart=@/opt/vllm/bin/vllm vllm-gpu0 serve /models/qwen --port 8000\n",
        @r#"
        launches: 1
        engine: vllm
        entry: vllm serve
        model: /models/qwen
        option port = 8000 (--port 8000)
        fields: {"engine":"vllm","model":"/models/qwen","port":8000}
    "#,
    );
    check!(
        Auto,
        "[Service]\nExecStart=+!/usr/bin/python3 -m sglang.launch_server --model-path /m --port 30000\n",
        @r#"
        launches: 1
        engine: sglang
        entry: python -m sglang.launch_server
        model: /m
        interpreter: /usr/bin/python3
        option model-path = "/m" (--model-path /m)
        option port = 30000 (--port 30000)
        fields: {"engine":"sglang","model":"/m","port":30000}
    "#,
    );
}

#[test]
fn session_managers_in_history() {
    check!(
        Auto,
        "tmux new -d -s vllm 'vllm serve Qwen/Qwen2.5-7B --port 8000'",
        @r#"
        launches: 1
        engine: vllm
        entry: vllm serve
        model: Qwen/Qwen2.5-7B
        option port = 8000 (--port 8000)
        fields: {"engine":"vllm","model":"Qwen/Qwen2.5-7B","port":8000}
    "#,
    );
    check!(
        Auto,
        "tmux new-session -d -s sglang \"CUDA_VISIBLE_DEVICES=0,1 python -m sglang.launch_server --model-path Qwen/Qwen2.5-7B --tp 2\"",
        @r#"
        launches: 1
        engine: sglang
        entry: python -m sglang.launch_server
        model: Qwen/Qwen2.5-7B
        interpreter: python
        option model-path = "Qwen/Qwen2.5-7B" (--model-path Qwen/Qwen2.5-7B)
        option tp-size = 2 (--tp 2)
        env: CUDA_VISIBLE_DEVICES=0,1
        fields: {"engine":"sglang","model":"Qwen/Qwen2.5-7B","tensor_parallel":2,"env":{"CUDA_VISIBLE_DEVICES":"0,1"}}
    "#,
    );
    check!(
        Auto,
        "screen -dmS vllm vllm serve Qwen/Qwen2.5-7B --port 8000",
        @r#"
        launches: 1
        engine: vllm
        entry: vllm serve
        model: Qwen/Qwen2.5-7B
        option port = 8000 (--port 8000)
        fields: {"engine":"vllm","model":"Qwen/Qwen2.5-7B","port":8000}
    "#,
    );
    check!(
        Auto,
        "screen -dmS llm bash -c 'vllm serve m --port 8001; exec bash'",
        @r#"
        launches: 1
        engine: vllm
        entry: vllm serve
        model: m
        wrappers: bash -c
        option port = 8001 (--port 8001)
        fields: {"engine":"vllm","model":"m","port":8001,"wrapper":"bash -c"}
    "#,
    );
    check!(
        Auto,
        "docker exec -it vllm_container vllm serve /models/qwen --port 8000 --tensor-parallel-size 2",
        @r#"
        launches: 1
        engine: vllm
        entry: vllm serve
        model: /models/qwen
        wrappers: docker
        option port = 8000 (--port 8000)
        option tensor-parallel-size = 2 (--tensor-parallel-size 2)
        fields: {"engine":"vllm","model":"/models/qwen","tensor_parallel":2,"port":8000,"wrapper":"docker"}
    "#,
    );
    check!(
        Auto,
        "docker exec -d -e CUDA_VISIBLE_DEVICES=1 sglang bash -c \"python3 -m sglang.launch_server --model-path /m --port 30000\"",
        @r#"
        launches: 1
        engine: sglang
        entry: python -m sglang.launch_server
        model: /m
        interpreter: python3
        wrappers: docker > bash -c
        option model-path = "/m" (--model-path /m)
        option port = 30000 (--port 30000)
        env: CUDA_VISIBLE_DEVICES=1
        fields: {"engine":"sglang","model":"/m","port":30000,"env":{"CUDA_VISIBLE_DEVICES":"1"},"wrapper":"docker"}
    "#,
    );
}

#[test]
fn launcher_files_a_script_writes() {
    // A setup script that writes the unit and starts it with systemctl: the unit is the launch.
    check!(
        Auto,
        "MODEL=Qwen/Qwen2.5-7B-Instruct\nsudo tee /etc/systemd/system/vllm.service > /dev/null <<EOF\n[Unit]\nDescription=vLLM\n[Service]\nExecStart=/opt/venv/bin/vllm serve $MODEL --port 8000\nRestart=always\nEOF\nsudo systemctl daemon-reload\nsudo systemctl enable --now vllm\n",
        @r#"
        launches: 1
        engine: vllm
        entry: vllm serve
        model: Qwen/Qwen2.5-7B-Instruct
        venv: /opt/venv
        wrappers: venv
        option port = 8000 (--port 8000)
        fields: {"engine":"vllm","model":"Qwen/Qwen2.5-7B-Instruct","port":8000,"wrapper":"venv"}
        warning: read from /etc/systemd/system/vllm.service, which the text writes
    "#,
    );
    check!(
        Auto,
        "WORKSPACE=/workspace\ncat > /etc/supervisor/conf.d/vllm.conf <<'EOF'\n[program:vllm]\ncommand=${WORKSPACE}/venv/bin/vllm serve m --port 8000 --max-model-len 8192\nEOF\nsupervisorctl reread && supervisorctl update\n",
        @r#"
        launches: 1
        engine: vllm
        entry: vllm serve
        model: m
        venv: ${WORKSPACE}/venv
        wrappers: venv
        option max-model-len = 8192 (--max-model-len 8192)
        option port = 8000 (--port 8000)
        fields: {"engine":"vllm","model":"m","port":8000,"context_length":8192,"wrapper":"venv"}
        warning: read from /etc/supervisor/conf.d/vllm.conf, which the text writes
    "#,
    );
    // A script that runs the server itself is read as it runs, whatever else it writes.
    check!(
        Auto,
        "cat > cfg.yaml <<EOF\nservices:\n  x:\n    image: vllm/vllm-openai\n    command: --model other\nEOF\nvllm serve m --port 8001\n",
        @r#"
        launches: 1
        engine: vllm
        entry: vllm serve
        model: m
        option port = 8001 (--port 8001)
        fields: {"engine":"vllm","model":"m","port":8001}
    "#,
    );
}

#[test]
fn a_leaderworkerset_after_its_service() {
    check!(
        Auto,
        "apiVersion: v1\nkind: Service\nmetadata:\n  name: vllm-leader\nspec:\n  ports:\n    - name: http\n      port: 8080\n      targetPort: 8080\n  selector:\n    leaderworkerset.sigs.k8s.io/name: vllm\n    role: leader\n  type: ClusterIP\n---\napiVersion: leaderworkerset.x-k8s.io/v1\nkind: LeaderWorkerSet\nmetadata:\n  name: vllm\nspec:\n  replicas: 2\n  leaderWorkerTemplate:\n    size: 2\n    restartPolicy: RecreateGroupOnPodRestart\n    leaderTemplate:\n      metadata:\n        labels:\n          role: leader\n      spec:\n        containers:\n          - name: vllm-leader\n            image: docker.io/vllm/vllm-openai:latest\n            env:\n              - name: HUGGING_FACE_HUB_TOKEN\n                value: <your-hf-token>\n            command:\n              - sh\n              - -c\n              - \"bash /vllm-workspace/examples/online_serving/multi-node-serving.sh leader --ray_cluster_size=$(LWS_GROUP_SIZE);\n                 python3 -m vllm.entrypoints.openai.api_server --port 8080 --model meta-llama/Meta-Llama-3.1-405B-Instruct --tensor-parallel-size 8 --pipeline_parallel_size 2\"\n            resources:\n              limits:\n                nvidia.com/gpu: \"8\"\n            ports:\n              - containerPort: 8080\n    workerTemplate:\n      spec:\n        containers:\n          - name: vllm-worker\n            image: docker.io/vllm/vllm-openai:latest\n            command:\n              - sh\n              - -c\n              - \"bash /vllm-workspace/examples/online_serving/multi-node-serving.sh worker --ray_address=$(LWS_LEADER_ADDRESS)\"\n",
        @r#"
        launches: 1
        engine: vllm
        entry: python -m vllm.entrypoints.openai.api_server
        model: meta-llama/Meta-Llama-3.1-405B-Instruct
        interpreter: python3
        wrappers: sh -c
        option model = "meta-llama/Meta-Llama-3.1-405B-Instruct" (--model meta-llama/Meta-Llama-3.1-405B-Instruct)
        option pipeline-parallel-size = 2 (--pipeline_parallel_size 2)
        option port = 8080 (--port 8080)
        option tensor-parallel-size = 8 (--tensor-parallel-size 8)
        env: HUGGING_FACE_HUB_TOKEN=<your-hf-token>
        fields: {"engine":"vllm","model":"meta-llama/Meta-Llama-3.1-405B-Instruct","tensor_parallel":8,"pipeline_parallel":2,"port":8080,"env":{"HUGGING_FACE_HUB_TOKEN":"<your-hf-token>"},"wrapper":"sh -c"}
    "#,
    );
}

#[test]
fn a_pod_runs_a_script_in_one_list_string() {
    check!(
        Auto,
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: sglang\nspec:\n  template:\n    spec:\n      containers:\n      - name: sglang\n        image: lmsysorg/sglang:latest\n        command: [\"sh\", \"-c\", \"python3 -m sglang.launch_server --model-path Qwen/Qwen2.5-7B-Instruct --host 0.0.0.0 --port 30000 --tp 2\"]\n",
        @r#"
        launches: 1
        engine: sglang
        entry: python -m sglang.launch_server
        model: Qwen/Qwen2.5-7B-Instruct
        interpreter: python3
        wrappers: sh -c
        option host = "0.0.0.0" (--host 0.0.0.0)
        option model-path = "Qwen/Qwen2.5-7B-Instruct" (--model-path Qwen/Qwen2.5-7B-Instruct)
        option port = 30000 (--port 30000)
        option tp-size = 2 (--tp 2)
        fields: {"engine":"sglang","model":"Qwen/Qwen2.5-7B-Instruct","tensor_parallel":2,"host":"0.0.0.0","port":30000,"wrapper":"sh -c"}
    "#,
    );
}

#[test]
fn a_charts_values_name_the_argv_and_the_model() {
    check!(
        Auto,
        "replicaCount: 1\nimage:\n  repository: vllm/vllm-openai\n  tag: v0.6.3\n  command: [\"vllm\", \"serve\"]\nmodel: meta-llama/Llama-3.1-8B-Instruct\nextraArgs:\n  - --max-model-len\n  - \"8192\"\n  - --gpu-memory-utilization\n  - \"0.9\"\nservice:\n  port: 8000\n",
        @r#"
        launches: 1
        engine: vllm
        entry: vllm serve
        model: meta-llama/Llama-3.1-8B-Instruct
        option gpu-memory-utilization = 0.9 (--gpu-memory-utilization 0.9)
        option max-model-len = 8192 (--max-model-len 8192)
        fields: {"engine":"vllm","model":"meta-llama/Llama-3.1-8B-Instruct","context_length":8192,"gpu_memory_fraction":0.9}
        warning: model meta-llama/Llama-3.1-8B-Instruct from the values' own key: how the chart passes it is in its templates
    "#,
    );
    check!(
        Auto,
        "image:\n  repository: lmsysorg/sglang\n  tag: v0.4.6.post1-cu124\n  command: [\"python3\", \"-m\", \"sglang.launch_server\"]\nmodel:\n  name: Qwen/Qwen2.5-32B-Instruct\nargs:\n  - --tp\n  - \"2\"\n  - --mem-fraction-static\n  - \"0.85\"\nextraArgs:\n  - --context-length\n  - \"32768\"\nservice:\n  port: 30000\n",
        @r#"
        launches: 1
        engine: sglang
        entry: python -m sglang.launch_server
        model: Qwen/Qwen2.5-32B-Instruct
        interpreter: python3
        option context-length = 32768 (--context-length 32768)
        option mem-fraction-static = 0.85 (--mem-fraction-static 0.85)
        option tp-size = 2 (--tp 2)
        fields: {"engine":"sglang","model":"Qwen/Qwen2.5-32B-Instruct","tensor_parallel":2,"context_length":32768,"gpu_memory_fraction":0.85}
        warning: model Qwen/Qwen2.5-32B-Instruct from the values' own key: how the chart passes it is in its templates
    "#,
    );
}

#[test]
fn supervisord_reads_its_own_expansions_and_comments() {
    check!(
        Auto,
        "; vLLM under supervisord\n[supervisord]\nnodaemon=true\n\n[program:sglang]\ncommand=/opt/conda/bin/python -m sglang.launch_server --model-path %(ENV_MODEL_PATH)s --port 30000 --tp %(ENV_TP)s ; the server\ndirectory=%(here)s\nuser=llm\nenvironment=HF_HOME=\"/data/hf\",\n    CUDA_VISIBLE_DEVICES=\"0,1\"\nautorestart=true\nstdout_logfile=/var/log/%(program_name)s.log\nredirect_stderr=true\n\n[program:web]\ncommand=python app.py\n",
        @r#"
        launches: 1
        engine: sglang
        entry: python -m sglang.launch_server
        model: %(ENV_MODEL_PATH)s
        interpreter: /opt/conda/bin/python
        venv: /opt/conda
        wrappers: conda
        option model-path = "%(ENV_MODEL_PATH)s" (--model-path %(ENV_MODEL_PATH)s)
        option port = 30000 (--port 30000)
        option tp-size = "%(ENV_TP)s" (--tp %(ENV_TP)s)
        env: CUDA_VISIBLE_DEVICES=0,1 HF_HOME=/data/hf
        logs: /var/log/sglang.log
        cwd: %(here)s
        fields: {"engine":"sglang","model":"%(ENV_MODEL_PATH)s","tensor_parallel":"%(ENV_TP)s","port":30000,"env":{"CUDA_VISIBLE_DEVICES":"0,1","HF_HOME":"/data/hf"},"wrapper":"conda"}
    "#,
    );
    check!(
        Auto,
        "[program:vllm]\ncommand=vllm serve /models/qwen --port 80%(process_num)02d --served-model-name %(program_name)s ; one per GPU\nprocess_name=%(program_name)s_%(process_num)d\nnumprocs=2\nenvironment=CUDA_VISIBLE_DEVICES=\"%(process_num)d\"\n",
        @r#"
        launches: 2
        engine: vllm
        entry: vllm serve
        model: /models/qwen
        option port = 8000 (--port 8000)
        option served-model-name = ["vllm"] (--served-model-name vllm)
        env: CUDA_VISIBLE_DEVICES=0
        fields: {"engine":"vllm","model":"/models/qwen","port":8000,"served_model_name":"vllm","env":{"CUDA_VISIBLE_DEVICES":"0"}}
        ---
        engine: vllm
        entry: vllm serve
        model: /models/qwen
        option port = 8001 (--port 8001)
        option served-model-name = ["vllm"] (--served-model-name vllm)
        env: CUDA_VISIBLE_DEVICES=1
        fields: {"engine":"vllm","model":"/models/qwen","port":8001,"served_model_name":"vllm","env":{"CUDA_VISIBLE_DEVICES":"1"}}
    "#,
    );
}

#[test]
fn tritons_vllm_backend_model_json() {
    check!(
        Auto,
        "{\n    \"model\":\"meta-llama/Llama-2-7b-chat-hf\",\n    \"disable_log_requests\": true,\n    \"gpu_memory_utilization\": 0.5,\n    \"enforce_eager\": true,\n    \"tensor_parallel_size\": 2,\n    \"max_model_len\": 4096\n}\n",
        @r#"
        launches: 1
        engine: vllm
        entry: Triton vLLM backend (model.json)
        model: meta-llama/Llama-2-7b-chat-hf
        option enforce-eager = true (--enforce-eager)
        option gpu-memory-utilization = 0.5 (--gpu-memory-utilization 0.5)
        option max-model-len = 4096 (--max-model-len 4096)
        option tensor-parallel-size = 2 (--tensor-parallel-size 2)
        fields: {"engine":"vllm","model":"meta-llama/Llama-2-7b-chat-hf","tensor_parallel":2,"context_length":4096,"gpu_memory_fraction":0.5}
        warning: Triton's vLLM backend: the keys of model.json are vLLM engine arguments
    "#,
    );
}

#[test]
fn an_ollama_drop_in_sets_only_its_environment() {
    check!(
        Auto,
        "[Service]\nEnvironment=\"OLLAMA_HOST=0.0.0.0:11434\"\nEnvironment=\"OLLAMA_CONTEXT_LENGTH=16384\"\nEnvironment=\"OLLAMA_KV_CACHE_TYPE=q8_0\"\n",
        @r#"
        launches: 1
        engine: ollama
        option context-length = 16384 (OLLAMA_CONTEXT_LENGTH=16384)
        option host = "0.0.0.0" (OLLAMA_HOST=0.0.0.0:11434)
        option kv-cache-type = "q8_0" (OLLAMA_KV_CACHE_TYPE=q8_0)
        option port = 11434 (OLLAMA_HOST=0.0.0.0:11434)
        env: OLLAMA_CONTEXT_LENGTH=16384 OLLAMA_HOST=0.0.0.0:11434 OLLAMA_KV_CACHE_TYPE=q8_0
        fields: {"engine":"ollama","host":"0.0.0.0","port":11434,"context_length":16384,"kv_cache_dtype":"q8_0","env":{"OLLAMA_CONTEXT_LENGTH":"16384","OLLAMA_HOST":"0.0.0.0:11434","OLLAMA_KV_CACHE_TYPE":"q8_0"}}
        warning: no ExecStart= in this text (a drop-in): its OLLAMA_* variables configure Ollama's server, whose command is in the unit it extends
    "#,
    );
}

#[test]
fn a_skypilot_task_exports_its_envs_to_run() {
    check!(
        Auto,
        "envs:\n  MODEL_NAME: meta-llama/Meta-Llama-3-8B-Instruct\n  HF_TOKEN: # TODO: Fill with your own huggingface token, or use --env to pass.\n\nservice:\n  replicas: 2\n  readiness_probe:\n    path: /v1/chat/completions\n\nresources:\n  accelerators: {L4:1, A10g:1, A10:1, A100:1, A100-80GB:1}\n  ports: 8000\n\nsetup: |\n  conda activate vllm\n  if [ $? -ne 0 ]; then\n    conda create -n vllm python=3.10 -y\n    conda activate vllm\n  fi\n  pip install vllm==0.4.2\n\nrun: |\n  conda activate vllm\n  echo 'Starting vllm api server...'\n  python -u -m vllm.entrypoints.openai.api_server \\\n    --port 8000 \\\n    --model $MODEL_NAME \\\n    --trust-remote-code \\\n    --tensor-parallel-size $SKYPILOT_NUM_GPUS_PER_NODE \\\n    2>&1 | tee api_server.log\n",
        @r#"
        launches: 1
        engine: vllm
        entry: python -m vllm.entrypoints.openai.api_server
        model: meta-llama/Meta-Llama-3-8B-Instruct
        interpreter: python
        venv: vllm
        wrappers: conda > tee
        option model = "meta-llama/Meta-Llama-3-8B-Instruct" (--model meta-llama/Meta-Llama-3-8B-Instruct)
        option port = 8000 (--port 8000)
        option tensor-parallel-size = "$SKYPILOT_NUM_GPUS_PER_NODE" (--tensor-parallel-size $SKYPILOT_NUM_GPUS_PER_NODE)
        option trust-remote-code = true (--trust-remote-code)
        env: MODEL_NAME=meta-llama/Meta-Llama-3-8B-Instruct
        logs: api_server.log
        fields: {"engine":"vllm","model":"meta-llama/Meta-Llama-3-8B-Instruct","tensor_parallel":"$SKYPILOT_NUM_GPUS_PER_NODE","port":8000,"trust_remote_code":true,"env":{"MODEL_NAME":"meta-llama/Meta-Llama-3-8B-Instruct"},"wrapper":"conda"}
        warning: the run: script of a SkyPilot task, with its envs: exported
    "#,
    );
}
