#!/usr/bin/env python3
"""Regenerate configs/engines/{sglang,vllm}.toml.

Option lists come from Appendix A/B of the serving-knowledge notes (dumps of the engines' real
argparse parsers: SGLang 0.5.9/0.5.16/0.5.23, vLLM 0.8.5/0.11.0/0.33.0). Hand-curated knowledge
(entry points, cross-engine `common` keys, speculative keys, renames, spellings removed before the
dumped versions) lives in scripts/catalog-overlay/<engine>.toml and wins over the dump.

Usage: scripts/gen-catalog.py [path/to/serving-knowledge.md]
"""
import json
import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
KNOW = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT.parent / "shared/knowledge/serving-knowledge.md"

ENGINES = {
    "sglang": {"table": "### B.1 SGLang", "arity": "SGLang", "versions": ["0.5.9", "0.5.16", "0.5.23"]},
    "vllm": {"table": "### B.2 vLLM", "arity": "vLLM", "versions": ["0.8.5", "0.11.0", "0.33.0"]},
}

CATEGORY_RULES = [
    ("speculative_decoding", r"specul|spec-|draft|ngram|eagle"),
    ("parallelism", r"(^|-)(tp|pp|dp|ep|cp|dcp)(-|$)|parallel|nnodes|node-rank|dist-init|world|expert|eplb|shard"),
    ("quantization_dtypes", r"quant|dtype|fp8|fp4|int8|w8a8"),
    ("memory_kv_cache", r"mem|cach|kv|page-size|block-size|swap|offload|hicache|radix|mamba"),
    ("batching_scheduling", r"sched|batch|chunk|max-running|max-num|prefill|queue|max-total|priority|stream-interval|max-model-len|context-length"),
    ("kernels_backends", r"backend|kernel|cuda-graph|cudagraph|compil|attention|eager|triton|flashinfer|allreduce|overlap|torch"),
    ("model", r"model|tokenizer|revision|load-format|served|trust|chat-template|reasoning|tool"),
]


def category(name):
    for cat, rx in CATEGORY_RULES:
        if re.search(rx, name):
            return cat
    return "other"


def section(text, start, stop_prefix="### "):
    i = text.index(start)
    j = text.find("\n" + stop_prefix, i + len(start))
    k = text.find("\n## ", i + len(start))
    ends = [x for x in (j, k) if x != -1]
    return text[i: min(ends) if ends else len(text)]


def parse_default(d):
    d = d.strip()
    if d in ("", "None") or d.startswith("'==SUPPRESS"):
        return None
    if d in ("True", "False"):
        return d == "True"
    if re.fullmatch(r"-?\d+", d):
        return int(d)
    if re.fullmatch(r"-?\d+\.\d*(e-?\d+)?", d):
        return float(d)
    if len(d) >= 2 and d[0] == d[-1] == "'":
        return d[1:-1]
    if d in ("{}", "[]"):
        return json.loads(d)
    return None  # dataclass reprs and truncated values are not useful defaults


def kind_of(k, engine):
    k = k.strip()
    if k.startswith("bool"):
        return "bool"
    if k.startswith("int(k"):
        return "int_hr"
    if k == "int":
        return "int"
    if k == "float":
        return "float"
    if k.startswith("json"):
        return "json"
    if k.startswith("list"):
        return "list"
    if k.endswith("?"):
        return "opt"
    return "str"


def arity_lists(text, engine_label):
    """Appendix A: spelling -> (kind, versions or None)."""
    out = {}
    for title, kind in (("take NO value", "bool"), ("take ONE OR MORE", "list"), ("take an OPTIONAL value", "opt")):
        sec = section(text, f"### {engine_label}: flags that {title}")
        for m in re.finditer(r"`(-[^`]+)`(?: \[([^\]]+)\])?", sec):
            flag, vers = m.group(1), m.group(2)
            out[flag] = (kind, [v.strip() for v in vers.split(",")] if vers else None)
    return out


def toml_value(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v, ensure_ascii=False)
    if isinstance(v, list):
        return "[" + ", ".join(toml_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{json.dumps(k)} = {toml_value(x)}" for k, x in v.items()) + " }"
    raise TypeError(v)


def gen(engine):
    cfg = ENGINES[engine]
    text = KNOW.read_text()
    overlay = tomllib.loads((ROOT / f"scripts/catalog-overlay/{engine}.toml").read_text())
    header = (ROOT / f"scripts/catalog-overlay/{engine}.toml").read_text().split("# ---- option overrides")[0]
    overrides = overlay.get("override", {})
    extras = overlay.get("extra", [])
    versions = cfg["versions"]
    newest = versions[-1]

    options = []  # dicts
    seen_spellings = set()
    table = section(text, cfg["table"])
    for line in table.splitlines():
        m = re.match(r"\| `([^`]+)` \| ([^|]*) \| ([^|]*) \| ([^|]*) \|", line)
        if not m or m.group(1).startswith("(positional)"):
            continue
        spellings = m.group(1).split()
        kind = kind_of(m.group(2), engine)
        choices = [c for c in m.group(4).strip().split(",") if c and not c.endswith("...") and c != "None"]
        name = spellings[0].lstrip("-")
        aliases, negations = [], []
        for s in spellings[1:]:
            if kind == "bool" and (s.startswith("--no-") or (s.startswith("--disable-") and spellings[0].startswith("--enable-"))):
                negations.append(s)
            else:
                aliases.append(s)
        if kind == "bool" and engine == "vllm" and "pair" in m.group(2):
            for extra in (f"--no-{name}",):
                if extra not in negations and extra not in aliases:
                    negations.append(extra)
        o = {"name": name, "aliases": aliases, "negations": negations, "kind": kind}
        if choices and kind == "str" and not m.group(4).strip().endswith("..."):
            o["kind"] = "choice"
            o["choices"] = choices
        d = parse_default(m.group(3))
        if d is not None:
            o["default"] = d
        o["category"] = category(name)
        options.append(o)
        seen_spellings.update(spellings)

    # Spellings of older versions (Appendix A) that the newest dump lacks.
    for flag, (kind, vers) in arity_lists(text, cfg["arity"]).items():
        if flag in seen_spellings or not flag.startswith("--"):
            continue
        o = {"name": flag.lstrip("-"), "kind": kind, "category": category(flag.lstrip("-"))}
        if vers:
            o["since"], o["until"] = vers[0], vers[-1]
            if vers[0] == versions[0]:
                del o["since"]
            if vers[-1] == newest:
                del o["until"]
        options.append(o)
        seen_spellings.add(flag)

    # Version bounds of spellings in the newest dump that Appendix A marks.
    arity = arity_lists(text, cfg["arity"])
    for o in options:
        a = arity.get("--" + o["name"])
        if a and a[1] and "since" not in o and a[1][0] != versions[0]:
            o["since"] = a[1][0]

    by_name = {o["name"]: o for o in options}
    for name, ov in overrides.items():
        if name not in by_name:
            raise SystemExit(f"{engine}: override for unknown option {name}")
        by_name[name].update(ov)
    for e in extras:
        if e["name"] in by_name:
            raise SystemExit(f"{engine}: extra option {e['name']} already present")
        e.setdefault("category", category(e["name"]))
        options.append(e)

    out = [header.rstrip() + "\n"]
    out.append(f"# Generated by scripts/gen-catalog.py from serving-knowledge.md Appendix A/B and scripts/catalog-overlay/{engine}.toml.\n# Do not edit by hand: edit the overlay and regenerate.\n")
    keys = ["name", "aliases", "negations", "kind", "choices", "default", "common", "category", "speculative",
            "env", "value_map", "since", "until", "deprecated", "renamed_from"]
    for o in options:
        out.append("[[option]]")
        for k in keys:
            if k in o and o[k] not in ([], None):
                out.append(f"{k} = {toml_value(o[k])}")
        out.append("")
    (ROOT / f"configs/engines/{engine}.toml").write_text("\n".join(out))
    print(f"{engine}: {len(options)} options")


for e in ENGINES:
    gen(e)
