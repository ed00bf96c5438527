#!/usr/bin/env python3
"""Regenerate configs/engines/{sglang,vllm}.toml.

Option lists come from the engines' real argument parsers, read out of the PyPI wheels by
scripts/catalog-from-wheel.py and committed as scripts/catalog-sources/<engine>-<version>.toml (one
file per release read; a release whose option list is identical to an earlier one holds only
`same_as = "<version>"`). Regeneration needs no network.

For every option the readings give:
* `since` / `until`: the first and last release read that accept the spelling (left out when the
  option is in the oldest / newest release read); a gap in between becomes an `absent` variant;
* the newest reading's kind, choices, default, deprecation and aliases/negations (the aliases of
  every release, as long as no other option claims them), and
* `by_version`: one variant per run of consecutive releases whose facts differ from those, with only
  the fields that differ (`default`, `no_default`, `kind`, `choices`, `aliases`, `negations`,
  `deprecated`, `absent`). crates/probe-launch/src/catalog/mod.rs applies the variant of the installed
  version.

Hand-curated knowledge (entry points, engine rules, cross-engine `common` keys, speculative keys,
categories, renames, spellings older than every release read) lives in
scripts/catalog-overlay/<engine>.toml and wins over the readings: a field an `[override.<name>]`
table sets holds for every version. A rename `{ old = "x" }` folds option `x` into the new one
(its readings fill the releases before the new name existed); `since` (first release with the new
name) and `dropped` (first release without the old one) are computed from the readings unless the
overlay gives them.

Usage: scripts/gen-catalog.py [--check]   (--check: fail if the generated files would change)
"""
import json
import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCES = ROOT / "scripts/catalog-sources"
ENGINES = ["sglang", "vllm"]

CATEGORY_RULES = [
    ("speculative_decoding", r"specul|spec-|draft|ngram|eagle"),
    ("parallelism", r"(^|-)(tp|pp|dp|ep|cp|dcp)(-|$)|parallel|nnodes|node-rank|dist-init|world|expert|eplb|shard"),
    ("quantization_dtypes", r"quant|dtype|fp8|fp4|int8|w8a8"),
    ("memory_kv_cache", r"mem|cach|kv|page-size|block-size|swap|offload|hicache|radix|mamba"),
    ("batching_scheduling", r"sched|batch|chunk|max-running|max-num|prefill|queue|max-total|priority|stream-interval|max-model-len|context-length"),
    ("kernels_backends", r"backend|kernel|cuda-graph|cudagraph|compil|attention|eager|triton|flashinfer|allreduce|overlap|torch"),
    ("model", r"model|tokenizer|revision|load-format|served|trust|chat-template|reasoning|tool"),
]

# Per-version facts of an option, in the order they are written in a variant.
FACTS = ["kind", "choices", "default", "deprecated", "aliases", "negations"]
MISSING = object()


def category(name):
    for cat, rx in CATEGORY_RULES:
        if re.search(rx, name):
            return cat
    return "other"


def vkey(v):
    return tuple(int(x) for x in re.findall(r"\d+", v.split("+")[0])[:4])


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
        return "{ " + ", ".join(f"{toml_key(k)} = {toml_value(x)}" for k, x in v.items()) + " }"
    raise TypeError(v)


def toml_key(k):
    return k if re.fullmatch(r"[A-Za-z0-9_-]+", k) else json.dumps(k)


def load_readings(engine):
    """[(version, {name: option})] oldest first, `same_as` stubs resolved."""
    raw = {}
    for f in SOURCES.glob(f"{engine}-*.toml"):
        version = f.name[len(engine) + 1:-len(".toml")]
        raw[version] = tomllib.loads(f.read_text())
    readings, by_version = [], {}
    for version in sorted(raw, key=vkey):
        doc = raw[version]
        if "same_as" in doc:
            opts = by_version[doc["same_as"]]
        else:
            opts = {o["name"]: o for o in doc.get("option", [])}
        by_version[version] = opts
        readings.append((version, opts))
    if not readings:
        raise SystemExit(f"{engine}: no readings under {SOURCES}")
    return readings


def clean_default(d):
    """The static reader renders `StrEnum.MEMBER.value` (vLLM 0.9-0.10 `ModelImpl.AUTO.value`) as its
    unevaluated attribute marker `["method", "auto", "value"]`: take the value."""
    if isinstance(d, list) and len(d) == 3 and d[0] == "method":
        return d[1] if d[2] == "value" and isinstance(d[1], str) else MISSING
    return d


def facts_of(o):
    return {
        "kind": o.get("kind", "str"),
        "choices": list(o.get("choices", [])),
        "default": clean_default(o.get("default", MISSING)),
        "deprecated": bool(o.get("deprecated", False)),
        "aliases": list(o.get("aliases", [])),
        "negations": list(o.get("negations", [])),
    }


def same(a, b):
    if a is MISSING or b is MISSING:
        return a is b
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return float(a) == float(b) and type(a) is type(b)
    return a == b


def gen(engine, check):
    overlay_path = ROOT / f"scripts/catalog-overlay/{engine}.toml"
    overlay_text = overlay_path.read_text()
    overlay = tomllib.loads(overlay_text)
    header = overlay_text.split("# ---- option overrides")[0]
    overrides = overlay.get("override", {})
    extras = overlay.get("extra", [])
    readings = load_readings(engine)
    renamed_spellings = []
    versions = [v for v, _ in readings]
    oldest, newest = versions[0], versions[-1]

    # name -> {version: facts}; order: newest reading first, then older-only options (newest first).
    # An option keeps the name of the newest release that has it: an older release that spells it
    # differently first (SGLang <= 0.5.13 `--data-parallel-size` with alias `--dp-size`, 0.5.14+
    # `--dp-size` with alias `--data-parallel-size`) gets that name, its own as an alias.
    per, owner = {}, {}
    for version, opts in reversed(readings):
        taken = set()
        for name, o in opts.items():
            spellings = ["--" + name] + list(o.get("aliases", []))
            cands = [owner[s] for s in spellings if s in owner]
            canonical = next((c for c in cands if c not in taken and c not in opts or c == name), name)
            taken.add(canonical)
            f = facts_of(o)
            if canonical != name:
                f["aliases"] = [s for s in spellings if s != "--" + canonical]
                renamed_spellings.append(f"{engine} {version}: --{name} is --{canonical}")
            for s in spellings:
                owner.setdefault(s, canonical)
            per.setdefault(canonical, {})[version] = f

    # Renames: the old option's readings fill the releases before the new name existed.
    notes = []
    extra_names = {e["name"] for e in extras}
    for new, ov in overrides.items():
        for r in ov.get("renamed_from", []):
            old = r["old"]
            if old in extra_names or old not in per:
                continue
            if new not in per:
                raise SystemExit(f"{engine}: rename to unknown option {new}")
            new_versions = [v for v in versions if v in per[new]]
            old_versions = [v for v in versions if v in per[old]]
            since = new_versions[0] if new_versions and new_versions[0] != oldest else None
            after_old = [v for v in versions if vkey(v) > vkey(old_versions[-1])]
            dropped = after_old[0] if after_old else None
            for key, value in (("since", since), ("dropped", dropped)):
                if key in r and value is not None and r[key] != value:
                    notes.append(f"{engine}: rename {old} -> {new}: overlay {key} {r[key]}, readings {value}")
                elif key not in r and value is not None:
                    r[key] = value
            for v, f in per.pop(old).items():
                per[new].setdefault(v, f)

    # Spellings the engine's own argv preprocessing turns into an option (vLLM 0.12+ rewrites `-O3` to
    # `--optimization-level 3`): aliases in every release that has the option.
    for name, ov in overrides.items():
        for s in ov.pop("argv_aliases", []):
            for f in per.get(name, {}).values():
                if s not in f["aliases"]:
                    f["aliases"].append(s)

    spelling_owner = {}  # spelling -> name, from the newest facts of each option
    for name, vf in per.items():
        last = vf[max(vf, key=vkey)]
        for s in ["--" + name] + last["aliases"] + last["negations"]:
            spelling_owner.setdefault(s, name)

    options = []
    for name, vf in per.items():
        present = [v for v in versions if v in vf]
        base = dict(vf[present[-1]])
        # Aliases and negations of every release, unless another option owns the spelling.
        for key in ("aliases", "negations"):
            for v in reversed(present):
                for s in vf[v][key]:
                    if s not in base[key] and spelling_owner.get(s, name) == name:
                        base[key].append(s)
        o = {"name": name}
        for key in FACTS:
            if base[key] is not MISSING and base[key] != [] and not (key == "deprecated" and not base[key]):
                o[key] = base[key]
        o["category"] = category(name)
        if present[0] != oldest:
            o["since"] = present[0]
        if present[-1] != newest:
            o["until"] = present[-1]
        # Variants: runs of consecutive releases (from `since` to `until`) with the same facts.
        runs = []  # [first, last, facts or None (absent)]
        for v in versions[versions.index(present[0]):versions.index(present[-1]) + 1]:
            f = vf.get(v)
            diff = None if f is None else {k: f[k] for k in FACTS if not same(f[k], base[k])}
            if runs and runs[-1][2] == diff:
                runs[-1][1] = v
            else:
                runs.append([v, v, diff])
        variants = []
        for first, last, diff in runs:
            if diff == {}:
                continue
            var = {}
            if first != oldest:
                var["since"] = first
            var["until"] = last
            if diff is None:
                var["absent"] = True
            else:
                for k, x in diff.items():
                    if k == "default" and x is MISSING:
                        var["no_default"] = True
                    else:
                        var[k] = x
            variants.append(var)
        if variants:
            o["by_version"] = variants
            if base["default"] is MISSING and any("default" in v for v in variants):
                o["no_default"] = True
        options.append(o)

    by_name = {o["name"]: o for o in options}
    for name, ov in overrides.items():
        if name not in by_name:
            raise SystemExit(f"{engine}: override for unknown option {name}")
        o = by_name[name]
        for key, value in ov.items():
            if key in FACTS and value != o.get(key):
                notes.append(f"{engine}: overlay sets {name}.{key} = {value!r} (readings: {o.get(key)!r})")
            o[key] = value
            for var in o.get("by_version", []):
                var.pop(key, None)
                if key == "default":
                    var.pop("no_default", None)
                    o.pop("no_default", None)
        if "by_version" in o:
            o["by_version"] = [v for v in o["by_version"] if set(v) - {"since", "until"}]
            if not o["by_version"]:
                del o["by_version"]
    for e in extras:
        if e["name"] in by_name:
            raise SystemExit(f"{engine}: extra option {e['name']} is in the readings: drop it from the overlay")
        e.setdefault("category", category(e["name"]))
        options.append(e)

    header = re.sub(r"(?m)^versions = .*$", "versions = " + toml_value(versions), header.rstrip())
    out = [header + "\n"]
    out.append(
        f"# Generated by scripts/gen-catalog.py from scripts/catalog-sources/{engine}-*.toml (the wheels' parsers,\n"
        f"# {len(versions)} releases {oldest}..{newest}) and scripts/catalog-overlay/{engine}.toml.\n"
        "# Do not edit by hand: edit the overlay and regenerate.\n")
    keys = ["name", "aliases", "negations", "kind", "choices", "default", "no_default", "common", "category", "speculative",
            "startup_limit", "env", "value_map", "since", "until", "deprecated", "renamed_from"]
    var_keys = ["since", "until", "absent", "kind", "choices", "default", "no_default", "deprecated", "aliases",
                "negations"]
    for o in options:
        out.append("[[option]]")
        for k in keys:
            if k in o and o[k] not in ([], None):
                if k == "deprecated" and o[k] is False:
                    continue
                out.append(f"{k} = {toml_value(o[k])}")
        if o.get("by_version"):
            out.append("by_version = [")
            for var in o["by_version"]:
                fields = {k: var[k] for k in var_keys if k in var}
                out.append(f"  {toml_value(fields)},")
            out.append("]")
        out.append("")
    text = "\n".join(out)
    path = ROOT / f"configs/engines/{engine}.toml"
    bounded = sum(1 for o in options if "since" in o or "until" in o)
    varied = sum(1 for o in options if o.get("by_version"))
    summary = (f"{engine}: {len(options)} options from {len(versions)} releases; {bounded} with since/until, "
               f"{varied} with per-version variants")
    if check:
        if path.read_text() != text:
            raise SystemExit(f"{path} is not up to date: run scripts/gen-catalog.py")
    else:
        path.write_text(text)
    for n in notes:
        print("note: " + n, file=sys.stderr)
    print(summary)


check = "--check" in sys.argv[1:]
for e in ENGINES:
    gen(e, check)
