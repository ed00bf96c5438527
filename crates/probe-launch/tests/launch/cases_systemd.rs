//! Data-driven cases, rust-analyzer style. The systemd unit reader (`launch/systemd.rs`):
//! `ExecStart=` split the way systemd does, with `Environment=`, specifiers and prefixes. Each case
//! is `(input, expected)`; the expectation is an inline insta snapshot (`cargo insta test --accept`
//! rewrites them after a deliberate change; review the diff).

#[test]
fn environment_expands_in_exec_start() {
    check!(
        SystemdUnit,
        "[Unit]\nDescription=vLLM\n[Service]\nEnvironment=PORT=8000 MODEL=/models/q\nWorkingDirectory=/srv\nExecStart=/opt/venv/bin/vllm serve ${MODEL} --port $PORT\n",
        @r#"
        launches: 1
        engine: vllm
        entry: vllm serve
        model: /models/q
        venv: /opt/venv
        wrappers: venv
        option port = 8000 (--port 8000)
        env: MODEL=/models/q PORT=8000
        cwd: /srv
        fields: {"engine":"vllm","model":"/models/q","port":8000,"env":{"MODEL":"/models/q","PORT":"8000"},"wrapper":"venv"}
    "#
    );
}

#[test]
fn prefixes_and_unresolved_specifier() {
    check!(
        SystemdUnit,
        "[Service]\nExecStart=-/usr/bin/env VAR=1 vllm serve %i\n",
        @r#"
        launches: 1
        engine: vllm
        entry: vllm serve
        model: %i
        env: VAR=1
        fields: {"engine":"vllm","model":"%i","env":{"VAR":"1"}}
        warning: specifier %i left unresolved
    "#
    );
}

#[test]
fn opaque_script_engine_guessed_from_its_name() {
    check!(
        SystemdUnit,
        "[Service]\nExecStart=/usr/local/bin/run-sglang.sh\n",
        @r#"
        launches: 1
        engine: sglang
        entry: /usr/local/bin/run-sglang.sh
        fields: {"engine":"sglang"}
        warning: ExecStart runs /usr/local/bin/run-sglang.sh, a script whose contents are not in the text; engine guessed from its name
    "#
    );
}

#[test]
fn environment_file_not_in_the_text() {
    check!(
        SystemdUnit,
        "[Service]\nEnvironmentFile=/etc/default/vllm\nExecStart=/usr/bin/vllm serve m --port ${PORT}\n",
        @r#"
        launches: 1
        engine: vllm
        entry: vllm serve
        model: m
        option port = "${PORT}" (--port ${PORT})
        fields: {"engine":"vllm","model":"m","port":"${PORT}"}
        warning: unresolved variable ${PORT} (not set in the unit)
        warning: variables from EnvironmentFile=/etc/default/vllm are not in the text
    "#
    );
}

#[test]
fn quotes_and_escapes() {
    check!(
        SystemdUnit,
        "[Service]\nExecStart=/usr/bin/vllm serve \"my model\" --served-model-name a\\ b\n",
        @r#"
        launches: 1
        engine: vllm
        entry: vllm serve
        model: my model
        option served-model-name = ["a b"] (--served-model-name a b)
        fields: {"engine":"vllm","model":"my model","served_model_name":"a b"}
    "#
    );
}

#[test]
fn shell_placeholder_is_no_launch_whatever_the_description() {
    check!(
        SystemdUnit,
        "[Unit]\nDescription=vLLM server for %i\n[Service]\nExecStart=/usr/bin/bash -lc 'echo \"Configure vLLM ExecStart for model %i\"; sleep infinity'\n",
        @"no launch"
    );
}

#[test]
fn command_substitution_is_no_model() {
    // systemd runs no shell: `$(cat ...)` is not substituted, and the arguments it stands for
    // are not in the text. No model is made of it.
    check!(
        SystemdUnit,
        "[Service]\nExecStart=/opt/vllm/bin/vllm serve $(cat /etc/vllm/%i.args)\n",
        @r#"
        launches: 1
        engine: vllm
        entry: vllm serve
        fields: {"engine":"vllm"}
        warning: specifier %i left unresolved
        warning: arguments come from $(cat /etc/vllm/%i.args), which systemd does not substitute (it runs no shell): an unknown number of words, not in the text
    "#
    );
}
