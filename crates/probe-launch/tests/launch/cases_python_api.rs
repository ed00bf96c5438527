//! Python scripts that start an engine through its API (issue 34 item 2, the engine config
//! declared in Python): LMDeploy's `serve(...)` (lmdeploy/serve/openai/api_server.py, v0.16.0)
//! and `pipeline(...)` (lmdeploy/api.py) with `backend_config=TurbomindEngineConfig(...)` /
//! `PytorchEngineConfig(...)` (lmdeploy/messages.py). The config object's keywords are read
//! through the LMDeploy catalog into the CLI's option names; a value the script does not fix
//! (an argument, an environment variable, an expression) is unknown with the reason, never a
//! guess. A table of `(script, expected)`, and a property: what the reader takes from any bytes
//! it is given never panics and stays bounded.

use probe_launch::{ParseHints, reconstruct};
use probe_model::Engine;
use proptest::prelude::*;
use serde_json::{Value, json};

struct Case {
    name: &'static str,
    script: &'static str,
    /// `None`: no launch at all.
    expected: Option<Expected>,
}

struct Expected {
    launches: usize,
    entry: &'static str,
    model: Option<&'static str>,
    options: Vec<(&'static str, Value)>,
    /// Options that must not be set (their value is unknown).
    unset: &'static [&'static str],
    unknown: &'static [&'static str],
    /// Substrings each of which some warning holds.
    warnings: &'static [&'static str],
}

fn cases() -> Vec<Case> {
    vec![
        Case {
            name: "serve with an inline TurbomindEngineConfig",
            script: "from lmdeploy import TurbomindEngineConfig\nfrom lmdeploy.serve.openai.api_server import serve\n\nserve('internlm/internlm2_5-7b-chat',\n      backend='turbomind',\n      backend_config=TurbomindEngineConfig(tp=2, cache_max_entry_count=0.5,\n                                           session_len=32768,  # long chats\n                                           quant_policy=8),\n      server_name='0.0.0.0', server_port=23334)\n",
            expected: Some(Expected {
                launches: 1,
                entry: "serve()",
                model: Some("internlm/internlm2_5-7b-chat"),
                options: vec![
                    ("tp", json!(2)),
                    ("cache-max-entry-count", json!(0.5)),
                    ("session-len", json!(32768)),
                    ("quant-policy", json!(8)),
                    ("backend", json!("turbomind")),
                    ("server-port", json!(23334)),
                    ("server-name", json!("0.0.0.0")),
                ],
                unset: &[],
                unknown: &[],
                warnings: &[],
            }),
        },
        Case {
            name: "pipeline with a config assigned first, its values partly from outside",
            script: "import os\nimport lmdeploy\nfrom lmdeploy import pipeline, PytorchEngineConfig\n\nMODEL = \"/models/Qwen2.5-7B-Instruct\"\nTP = 1\nbackend_config = PytorchEngineConfig(\n    tp=TP,\n    max_batch_size=int(os.environ.get('BATCH', '64')),\n    cache_max_entry_count=0.6,\n    block_size=64,\n)\npipe = lmdeploy.pipeline(MODEL, backend_config=backend_config, log_level='INFO')\nprint(pipe(['hi']))\n",
            expected: Some(Expected {
                launches: 1,
                entry: "lmdeploy.pipeline()",
                model: Some("/models/Qwen2.5-7B-Instruct"),
                options: vec![
                    ("tp", json!(1)),
                    ("cache-max-entry-count", json!(0.6)),
                    ("log-level", json!("INFO")),
                ],
                unset: &["max-batch-size"],
                unknown: &["block_size=64"],
                warnings: &[
                    "max-batch-size is unknown: max_batch_size=int(os.environ.get('BATCH', '64')) in PytorchEngineConfig(...) is a value the text does not fix",
                ],
            }),
        },
        Case {
            name: "a model and a ratio from the script's arguments",
            script: "import argparse\nfrom lmdeploy import serve, TurbomindEngineConfig\n\np = argparse.ArgumentParser()\np.add_argument('--model')\np.add_argument('--ratio', type=float, default=0.8)\nargs = p.parse_args()\nserve(args.model, backend_config=TurbomindEngineConfig(tp=4, cache_max_entry_count=args.ratio))\n",
            expected: Some(Expected {
                launches: 1,
                entry: "serve()",
                model: None,
                options: vec![("tp", json!(4))],
                unset: &["cache-max-entry-count"],
                unknown: &[],
                warnings: &[
                    "the model is unknown: `args.model` is a value the text does not fix",
                    "cache-max-entry-count is unknown: cache_max_entry_count=args.ratio",
                ],
            }),
        },
        Case {
            name: "the config object itself comes from elsewhere",
            script: "from lmdeploy import pipeline\nfrom myconf import make_config\npipe = pipeline('internlm/internlm2-chat-7b', backend_config=make_config())\n",
            expected: Some(Expected {
                launches: 1,
                entry: "pipeline()",
                model: Some("internlm/internlm2-chat-7b"),
                options: vec![],
                unset: &["tp", "cache-max-entry-count"],
                unknown: &[],
                warnings: &["the engine config is unknown: backend_config=make_config()"],
            }),
        },
        Case {
            // The shape of a public evaluation script: the name is assigned again after the
            // call (a reranker), the call reads the value it had then; the GPU count is the
            // machine's.
            name: "a name reassigned after the call, a tensor-parallel size from the machine",
            script: "from lmdeploy import pipeline, TurbomindEngineConfig, GenerationConfig\nfrom FlagEmbedding import FlagReranker\nimport torch\n\nmodel = \"/share/models/Llama-3.1-70B-Instruct\"\npipe = pipeline(model, backend_config=TurbomindEngineConfig(tp=4, session_len=4096))\nsmall = pipeline('/share/models/Qwen2.5-7B-Instruct',\n                 backend_config=TurbomindEngineConfig(tp=torch.cuda.device_count(), cache_max_entry_count=0.2))\nmodel = FlagReranker(config[\"rerank_model\"], devices=\"cuda:4\")\n",
            expected: Some(Expected {
                launches: 2,
                entry: "pipeline()",
                model: Some("/share/models/Llama-3.1-70B-Instruct"),
                options: vec![("tp", json!(4)), ("session-len", json!(4096))],
                unset: &[],
                unknown: &[],
                warnings: &[],
            }),
        },
        Case {
            name: "a client script holds no launch",
            script: "from lmdeploy.serve.openai.api_client import APIClient\nclient = APIClient('http://0.0.0.0:23333')\nfor item in client.chat_completions_v1(model='internlm2', messages=[{'role': 'user', 'content': 'hi'}]):\n    print(item)\n",
            expected: None,
        },
        Case {
            name: "calls named like the API in a script that does not import the engine",
            script: "from flask import Flask\napp = Flask(__name__)\ndef serve(m, backend_config=None):\n    pass\nserve('x', backend_config=TurbomindEngineConfig(tp=2))\n",
            expected: None,
        },
    ]
}

#[test]
fn python_api_scripts_table() {
    for case in cases() {
        let launches = reconstruct(case.script, &ParseHints::default());
        let Some(expected) = case.expected else {
            assert!(launches.is_empty(), "{}: {launches:#?}", case.name);
            continue;
        };
        assert_eq!(
            launches.len(),
            expected.launches,
            "{}: {launches:#?}",
            case.name
        );
        let l = &launches[0];
        if case.name.starts_with("a name reassigned") {
            let second = &launches[1];
            assert_eq!(
                second.model.as_deref(),
                Some("/share/models/Qwen2.5-7B-Instruct")
            );
            assert!(!second.options.contains_key("tp"), "{second:#?}");
            assert_eq!(
                second
                    .options
                    .get("cache-max-entry-count")
                    .map(|o| &o.value),
                Some(&json!(0.2))
            );
            assert!(
                second.warnings.iter().any(|w| w
                    == "tp is unknown: tp=torch.cuda.device_count() in TurbomindEngineConfig(...) is a value the text does not fix"),
                "{:?}",
                second.warnings
            );
        }
        assert_eq!(l.engine, Engine::Lmdeploy, "{}", case.name);
        assert_eq!(
            l.entrypoint.as_deref(),
            Some(expected.entry),
            "{}",
            case.name
        );
        assert_eq!(l.model.as_deref(), expected.model, "{}: {l:#?}", case.name);
        for (name, value) in &expected.options {
            assert_eq!(
                l.options.get(*name).map(|o| &o.value),
                Some(value),
                "{}: {name} in {:#?}",
                case.name,
                l.options
            );
        }
        assert_eq!(
            l.options.len(),
            expected.options.len(),
            "{}: {:#?}",
            case.name,
            l.options
        );
        for name in expected.unset {
            assert!(!l.options.contains_key(*name), "{}: {name}", case.name);
        }
        assert_eq!(l.unknown, expected.unknown, "{}", case.name);
        for w in expected.warnings {
            assert!(
                l.warnings.iter().any(|x| x.contains(w)),
                "{}: {w} in {:#?}",
                case.name,
                l.warnings
            );
        }
        assert_eq!(
            l.warnings.len(),
            expected.warnings.len(),
            "{}: {:#?}",
            case.name,
            l.warnings
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// Any text after the import that marks a script as LMDeploy's: read without a panic, each
    /// launch's options from the catalog, at most 16 launches.
    #[test]
    fn python_api_reader_takes_any_bytes(
        body in proptest::collection::vec(
            prop_oneof![
                Just("serve(".to_string()),
                Just("pipeline(".to_string()),
                Just("TurbomindEngineConfig(".to_string()),
                Just("backend_config=".to_string()),
                Just("tp=".to_string()),
                Just(")".to_string()),
                Just(",".to_string()),
                Just("'".to_string()),
                Just("\"\"\"".to_string()),
                Just("\n".to_string()),
                Just("#".to_string()),
                Just("x = ".to_string()),
                "[ -~]{0,12}",
            ],
            0..64,
        )
    ) {
        let text = format!("from lmdeploy import serve\n{}", body.concat());
        let launches = reconstruct(&text, &ParseHints::default());
        prop_assert!(launches.len() <= 16);
        for l in &launches {
            if l.engine == Engine::Lmdeploy {
                let cat = probe_launch::catalog::catalog(Engine::Lmdeploy, None);
                for name in l.options.keys() {
                    prop_assert!(cat.get(name).is_some(), "{name}");
                }
            }
        }
    }
}
