//! Bad input never panics: random bytes, random argv built from real flag spellings, random unit
//! files and shell-ish text.

use std::collections::BTreeMap;

use probe_launch::common::common_fields;
use probe_launch::{ParseHints, TextKind, from_argv, reconstruct, reconstruct_measured};
use proptest::prelude::*;

const KINDS: [TextKind; 14] = [
    TextKind::Auto,
    TextKind::Argv,
    TextKind::SystemdUnit,
    TextKind::Shell,
    TextKind::DockerRun,
    TextKind::Compose,
    TextKind::Kubernetes,
    TextKind::SglangServerArgs,
    TextKind::VllmNonDefaultArgs,
    TextKind::Quadlet,
    TextKind::Supervisor,
    TextKind::Dockerfile,
    TextKind::Modelfile,
    TextKind::Pm2,
];

fn word() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("vllm".to_string()),
        Just("serve".to_string()),
        Just("python3".to_string()),
        Just("-m".to_string()),
        Just("sglang.launch_server".to_string()),
        Just("docker".to_string()),
        Just("run".to_string()),
        Just("bash".to_string()),
        Just("-c".to_string()),
        Just("nohup".to_string()),
        Just("--tp".to_string()),
        Just("--speculative-config.method".to_string()),
        Just("--speculative-config".to_string()),
        Just("--max-model-len".to_string()),
        Just("--context-length".to_string()),
        Just("-tp".to_string()),
        Just("--speculative-draft".to_string()),
        Just("16K".to_string()),
        Just("1Mi".to_string()),
        Just("{\"method\":".to_string()),
        Just("$X".to_string()),
        Just("${Y:-3}".to_string()),
        Just("$(echo".to_string()),
        Just("'".to_string()),
        Just("\"".to_string()),
        Just("\\".to_string()),
        Just("=".to_string()),
        Just("--=".to_string()),
        Just("-".to_string()),
        Just("--".to_string()),
        "[a-zA-Z0-9_./:=${}()'\"-]{0,12}",
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, .. ProptestConfig::default() })]

    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..600), k in 0usize..9) {
        let text = String::from_utf8_lossy(&bytes);
        let hints = ParseHints { kind: KINDS[k % KINDS.len()], ..ParseHints::default() };
        for l in reconstruct(&text, &hints) {
            let _ = common_fields(&l);
        }
    }

    #[test]
    fn random_argv_never_panics(argv in proptest::collection::vec(word(), 0..24)) {
        let hints = ParseHints::default();
        if let Some(l) = from_argv(&argv, &BTreeMap::new(), &hints) {
            let _ = common_fields(&l);
        }
        let joined = argv.join(" ");
        for l in reconstruct(&joined, &hints) {
            let _ = common_fields(&l);
        }
        let nul = argv.join("\0");
        let _ = reconstruct(&nul, &ParseHints { kind: TextKind::Argv, ..ParseHints::default() });
    }

    #[test]
    fn random_units_never_panic(
        lines in proptest::collection::vec(
            prop_oneof![
                Just("[Service]".to_string()),
                Just("[Unit]".to_string()),
                Just("ExecStart=".to_string()),
                Just("Environment=\"A=1 2\" B".to_string()),
                Just("EnvironmentFile=-/etc/x".to_string()),
                Just("# comment \\".to_string()),
                Just("  \\".to_string()),
                Just("WorkingDirectory=-%h/x".to_string()),
                (proptest::collection::vec(word(), 0..10)).prop_map(|w| format!("ExecStart=-@{}", w.join(" "))),
                (proptest::collection::vec(word(), 0..10)).prop_map(|w| format!("  {} \\", w.join(" "))),
                "[ -~]{0,40}",
            ],
            0..20,
        )
    ) {
        let text = lines.join("\n");
        let hints = ParseHints { kind: TextKind::SystemdUnit, ..ParseHints::default() };
        for l in reconstruct(&text, &hints) {
            let _ = common_fields(&l);
        }
        let _ = reconstruct(&text, &ParseHints::default());
    }
}

/// One line of the launchers' own formats: INI sections of supervisord and quadlets, Dockerfile
/// and Modelfile instructions, pm2 object literals, serving YAML.
fn format_line() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("[program:vllm]".to_string()),
        Just("[Container]".to_string()),
        Just("Image=vllm/vllm-openai".to_string()),
        Just("environment=A=\"1,2\",B='x".to_string()),
        Just("FROM vllm/vllm-openai:latest".to_string()),
        Just("ENTRYPOINT [\"vllm\", \"serve\"".to_string()),
        Just("PARAMETER num_ctx".to_string()),
        Just("TEMPLATE \"\"\"".to_string()),
        Just("module.exports = { apps: [{ script: 'vllm', args: `serve".to_string()),
        Just("/* { // ' \" ` ,] }".to_string()),
        Just(
            "servingEngineSpec:\n  modelSpec:\n  - modelURL: m\n    vllmConfig: {maxModelLen: ["
                .to_string()
        ),
        Just(
            "  serveConfigV2: |\n    llm_configs: [{model_loading_config: {model_id: 1}}]"
                .to_string()
        ),
        (proptest::collection::vec(word(), 0..10)).prop_map(|w| format!("command={}", w.join(" "))),
        (proptest::collection::vec(word(), 0..10)).prop_map(|w| format!("CMD {} \\", w.join(" "))),
        (proptest::collection::vec(word(), 0..10)).prop_map(|w| format!("Exec={}", w.join(" "))),
        "[ -~]{0,40}",
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, .. ProptestConfig::default() })]

    #[test]
    fn launcher_formats_never_panic(
        lines in proptest::collection::vec(format_line(), 0..16),
        k in 0usize..14,
    ) {
        let text = lines.join("\n");
        for kind in [TextKind::Auto, KINDS[k % KINDS.len()]] {
            for l in reconstruct(&text, &ParseHints { kind, ..ParseHints::default() }) {
                let _ = common_fields(&l);
            }
        }
    }
}

#[test]
fn hostile_shapes_terminate() {
    let deep = format!("{}x{}", "$(".repeat(5000), ")".repeat(5000));
    let _ = reconstruct(&deep, &ParseHints::default());
    let braces = format!(
        "vllm serve m --speculative-config '{}'",
        "{\"a\":".repeat(5000)
    );
    let _ = reconstruct(&braces, &ParseHints::default());
    let many = "export A=1\n".repeat(20_000) + "vllm serve m\n";
    let v = reconstruct(&many, &ParseHints::default());
    assert_eq!(v.len(), 1);
    let repr = format!("server_args=ServerArgs({})", "x=[".repeat(3000));
    let _ = reconstruct(&repr, &ParseHints::default());
    let yaml = format!("a: &a [{}]\nb: [{}]", "x,".repeat(10), "*a,".repeat(100));
    let _ = reconstruct(
        &yaml,
        &ParseHints {
            kind: TextKind::Compose,
            ..ParseHints::default()
        },
    );
}

/// Pieces of the texts people paste: Markdown fences and prompts, commands kept in variables and
/// run with `eval`, here-documents, prose.
fn pasted_piece() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("```bash".to_string()),
        Just("```".to_string()),
        Just("~~~".to_string()),
        Just("$ ".to_string()),
        Just("# ".to_string()),
        Just("> ".to_string()),
        Just("`".to_string()),
        Just("``".to_string()),
        Just("user@h:~$ ".to_string()),
        Just("CMD=\"".to_string()),
        Just("CMD=$(cat <<EOF".to_string()),
        Just("read -r -d '' CMD <<'EOF'".to_string()),
        Just("EOF".to_string()),
        Just(")".to_string()),
        Just("eval \"$CMD\"".to_string()),
        Just("eval $CMD $CMD".to_string()),
        Just("CMD='eval $CMD $CMD'".to_string()),
        Just("CMD=$CMD$CMD".to_string()),
        Just("$CMD".to_string()),
        Just("nohup sh -c \"$CMD\" > log 2>&1 &".to_string()),
        Just("It's slow. Run:".to_string()),
        Just("vllm serve m --tp 2 \\".to_string()),
        Just("python -m sglang.launch_server --model-path m".to_string()),
        Just("if [ \"$1\" = -d ]; then".to_string()),
        Just("elif [ -n \"$X\" ]; then".to_string()),
        Just("else".to_string()),
        Just("fi".to_string()),
        Just("case $1 in".to_string()),
        Just("-d|--daemon)".to_string()),
        Just(";;".to_string()),
        Just("esac".to_string()),
        Just("for i in 0 1; do".to_string()),
        Just("for i in $(seq 1 3) {0..2}; do".to_string()),
        Just("while getopts m: o; do".to_string()),
        Just("done".to_string()),
        Just("f() {".to_string()),
        Just("function g {".to_string()),
        Just("}".to_string()),
        Just("f a b; g; f".to_string()),
        Just("set -- x y; shift".to_string()),
        Just("[ -n \"$X\" ] && CMD=\"nohup $CMD &\" ||".to_string()),
        Just("(( N > 0 ))".to_string()),
        Just("cat > e.sh <<EOF".to_string()),
        Just("source e.sh".to_string()),
        Just("\u{2014}tp \u{201C}\u{00A0}\r".to_string()),
        "[ -~]{0,30}",
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, .. ProptestConfig::default() })]

    #[test]
    fn pasted_texts_never_panic(lines in proptest::collection::vec(
        proptest::collection::vec(pasted_piece(), 1..4).prop_map(|p| p.concat()),
        0..24,
    )) {
        let text = lines.join("\n");
        for l in reconstruct(&text, &ParseHints::default()) {
            let _ = common_fields(&l);
        }
    }

    /// A launch reads the same bare, in a fenced block with prose around it, after a `$ `
    /// prompt, in inline backticks, and kept in a variable run with `eval`.
    #[test]
    fn a_launch_reads_the_same_however_it_is_pasted(
        tp in 1u32..9,
        port in 1024u32..65535,
        prose in "[A-Za-z ,.]{0,40}",
    ) {
        let bare = format!("vllm serve org/model --tensor-parallel-size {tp} --port {port}");
        let want = reconstruct(&bare, &ParseHints::default()).first().map(common_fields);
        prop_assert!(want.is_some());
        let pasted = [
            format!("{prose}\n\n```bash\n$ {bare}\nINFO started\n```\n{prose}\n"),
            format!("{prose}\n\n~~~\n{bare}\n~~~\n"),
            format!("{prose} `{bare}` {prose}"),
            format!("CMD=\"{bare}\"\neval \"$CMD\"\n"),
            format!("read -r -d '' CMD <<'EOF'\n{bare}\nEOF\n$CMD\n"),
        ];
        for text in pasted {
            let got = reconstruct(&text, &ParseHints::default()).first().map(common_fields);
            let strip = |v: Option<serde_json::Value>| v.map(|mut v| {
                if let Some(m) = v.as_object_mut() { m.remove("wrapper"); }
                v
            });
            prop_assert_eq!(strip(got), strip(want.clone()), "{}", text);
        }
    }
}

/// Texts that grow without end if expanded naively (nested evals, self-doubling variables,
/// hundreds of nested heredocs, endless fences and backticks) are read within the work their
/// size allows: the reading stops at the limit, says so on what it found, and invents nothing.
#[test]
fn nested_evals_and_doubling_values_stay_within_their_budget() {
    let cases = [
        (
            "nested evals",
            "CMD='eval $CMD $CMD'\neval $CMD\n".repeat(50),
        ),
        ("doubling", "X=$X$X$X$X\n".repeat(200) + "eval $X\n"),
        (
            "heredocs",
            "CMD=$(cat <<EOF\n".repeat(300) + &"EOF\n)\n".repeat(300) + "eval \"$CMD\"\n",
        ),
        ("fences", "```\n$ x \\\n".repeat(5000)),
        ("backticks", "`".repeat(20_000)),
    ];
    for (name, text) in cases {
        let (launches, work) = reconstruct_measured(&text, &ParseHints::default());
        assert!(
            work.spent <= work.limit,
            "{name}: spent {} of {}",
            work.spent,
            work.limit
        );
        // None of these texts names an engine: nothing may come out of them.
        assert!(launches.is_empty(), "{name}: {launches:#?}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, .. ProptestConfig::default() })]

    /// A launch reads the same bare, inside an `if` both branches of which are equal, in a
    /// `case` arm, after a test and `&&`, in a function called later, in a one-iteration loop,
    /// and pasted with a documentation site's dashes and quotes or in backticks over lines.
    #[test]
    fn a_launch_reads_the_same_whatever_control_flow_is_around_it(
        tp in 1u32..9,
        port in 1024u32..65535,
        name in "[a-z]{1,8}",
    ) {
        let bare = format!("vllm serve org/model --tensor-parallel-size {tp} --port {port} --served-model-name \"{name}\"");
        let want = reconstruct(&bare, &ParseHints::default()).first().map(common_fields);
        prop_assert!(want.is_some());
        let dashed = bare.replace(" --", " \u{2014}").replace('"', "\u{201C}");
        let split = bare.replace(" --port", " \\\n  --port");
        let wrapped = [
            format!("if [ \"$1\" = -d ]; then\n  {bare}\nelse\n  {bare}\nfi\n"),
            format!("case \"$MODE\" in\n  big) {bare} ;;\n  *) {bare} ;;\nesac\n"),
            format!("[ -n \"$X\" ] && {bare}\n"),
            format!("start() {{\n  {bare}\n}}\nstart\n"),
            format!("function start {{\n  {bare} \"$@\"\n}}\nstart\n"),
            format!("for i in 0; do\n  {bare}\ndone\n"),
            format!("for i in 1; do {bare}; done"),
            dashed,
            format!("We run `{split}` there."),
        ];
        for text in wrapped {
            let got = reconstruct(&text, &ParseHints::default());
            prop_assert!(!got.is_empty(), "{}", text);
            for l in &got {
                prop_assert_eq!(Some(common_fields(l)), want.clone(), "{}", text);
            }
        }
    }
}

/// Options of vLLM with values of their kind, as people accumulate them.
fn vllm_option() -> impl Strategy<Value = (String, String)> {
    prop_oneof![
        (1u32..9).prop_map(|v| ("--tensor-parallel-size".to_string(), v.to_string())),
        (1u32..5).prop_map(|v| ("--pipeline-parallel-size".to_string(), v.to_string())),
        (1024u32..65535).prop_map(|v| ("--port".to_string(), v.to_string())),
        (1u32..64).prop_map(|v| ("--max-model-len".to_string(), (v * 1024).to_string())),
        (50u32..99).prop_map(|v| ("--gpu-memory-utilization".to_string(), format!("0.{v}"))),
        (1u32..512).prop_map(|v| ("--max-num-seqs".to_string(), v.to_string())),
        "[a-z]{1,8}".prop_map(|v| ("--served-model-name".to_string(), v)),
        Just(("--trust-remote-code".to_string(), String::new())),
        Just(("--kv-cache-dtype".to_string(), "fp8".to_string())),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, .. ProptestConfig::default() })]

    /// An argv built in a string (`ARGS="$ARGS --flag v"` over lines, `+=`, inside branches the
    /// text decides or whose arms all add the same, a `case` on a fixed value, the command in
    /// a variable too) reads as the same argv written out.
    #[test]
    fn an_argv_built_in_a_string_reads_as_written_out(
        opts in proptest::collection::vec(vllm_option(), 1..8),
        form in 0usize..5,
    ) {
        let flag = |(f, v): &(String, String)| if v.is_empty() { f.clone() } else { format!("{f} {v}") };
        let written: Vec<String> = opts.iter().map(flag).collect();
        let bare = format!("vllm serve org/model {}", written.join(" "));
        let want = reconstruct(&bare, &ParseHints::default()).first().map(common_fields);
        prop_assert!(want.is_some());
        let mut text = String::from("MODEL=org/model\nCMD=\"vllm serve\"\nMODE=full\nARGS=\"\"\n");
        for (i, w) in written.iter().enumerate() {
            let line = match (form + i) % 5 {
                0 => format!("ARGS=\"$ARGS {w}\"\n"),
                1 => format!("ARGS+=\" {w}\"\n"),
                2 => format!("if [ \"$MODE\" = full ]; then\n  ARGS=\"$ARGS {w}\"\nfi\n"),
                3 => format!("if [ -n \"$X\" ]; then\n  ARGS=\"$ARGS {w}\"\nelse\n  ARGS=\"${{ARGS}} {w}\"\nfi\n"),
                _ => format!("case \"$MODE\" in\n  full) ARGS=\"$ARGS {w}\" ;;\n  *) ;;\nesac\n"),
            };
            text.push_str(&line);
        }
        text.push_str(if form % 2 == 0 { "$CMD $MODEL $ARGS\n" } else { "vllm serve \"$MODEL\" $ARGS\n" });
        let got = reconstruct(&text, &ParseHints::default());
        prop_assert_eq!(got.len(), 1, "{}", text);
        prop_assert_eq!(got.first().map(common_fields), want, "{}", text);
    }
}
