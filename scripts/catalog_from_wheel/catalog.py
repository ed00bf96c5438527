"""TOML output in the shape of configs/engines/<engine>.toml, and comparison with a catalog."""
from __future__ import annotations

import ast
import json
import re
import tomllib
from pathlib import Path

KEYS = ["name", "aliases", "negations", "kind", "choices", "default", "category", "deprecated"]


def load_category_rules(gen_catalog: Path):
    """CATEGORY_RULES from scripts/gen-catalog.py (read with ast, not imported: it runs on import)."""
    try:
        tree = ast.parse(gen_catalog.read_text())
        for s in tree.body:
            if isinstance(s, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "CATEGORY_RULES" for t in s.targets):
                return ast.literal_eval(s.value)
    except (OSError, SyntaxError, ValueError):
        pass
    return []


def categorizer(rules):
    compiled = [(c, re.compile(rx)) for c, rx in rules]

    def category(name):
        for c, rx in compiled:
            if rx.search(name):
                return c
        return "other"
    return category


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
        return "{ " + ", ".join(f"{json.dumps(str(k))} = {toml_value(x)}" for k, x in v.items()) + " }"
    raise TypeError(type(v))


def render(engine, version, wheel_name, sha256, info, options, notes):
    out = [
        f"# {engine} {version}: options read from the wheel's real argument parser by scripts/catalog-from-wheel.py",
        f"# wheel: {wheel_name}",
        f"# sha256: {sha256}",
        f"# parser entry: {info.get('entry')}",
    ]
    if info.get("bool_style"):
        out.append(f"# boolean spelling: {info['bool_style']}")
    if info.get("human_readable_ints"):
        out.append("# human-readable int fields: " + ", ".join(info["human_readable_ints"]))
    out.append(f"# options: {len(options)}; positional arguments skipped: {info.get('positionals', 0)}; "
               f"unresolved notes: {len(notes)} (listed at the end)")
    out.append("# Options only: entry points, `common`, `speculative`, renames and version bounds are curated in")
    out.append("# scripts/catalog-overlay/<engine>.toml and merged by scripts/gen-catalog.py.")
    out.append("")
    for o in options:
        out.append("[[option]]")
        for k in KEYS:
            if k in o and o[k] not in ([], None, False) or (k == "default" and o.get(k) is False):
                out.append(f"{k} = {toml_value(o[k])}")
        out.append("")
    if notes:
        out.append("# ---- not resolved statically (kept out of the fields above)")
        for n in notes:
            out.append("# " + n.replace("\n", " ")[:300])
    return "\n".join(out) + "\n"


def vkey(v):
    nums = []
    for p in re.split(r"[.+-]", v.strip().lstrip("vV")):
        m = re.match(r"\d+", p)
        if not m:
            break
        nums.append(int(m.group()))
    return tuple(nums)


def arity(kind):
    return {"bool": "none", "list": "one-or-more", "opt": "optional", "bool_opt": "optional"}.get(kind, "one")


def same_default(a, b):
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b or a == b and type(a) is type(b)
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return float(a) == float(b)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same_default(x, y) for x, y in zip(a, b))
    return a == b


def compare(options, catalog_path: Path, version: str):
    cat = tomllib.loads(catalog_path.read_text())
    copts = cat.get("option", [])
    by_spelling = {}
    for c in copts:
        for s in ["--" + c["name"]] + c.get("aliases", []) + c.get("negations", []):
            by_spelling.setdefault(s, c)
        for r in c.get("renamed_from", []):
            by_spelling.setdefault("--" + r.get("old", ""), c)
    wheel_spellings = set()
    missing, arity_mm, kind_mm, default_mm, choice_mm, neg_missing, matched = [], [], [], [], [], [], set()
    for o in options:
        spellings = ["--" + o["name"]] + o.get("aliases", []) + o.get("negations", [])
        wheel_spellings.update(spellings)
        c = by_spelling.get("--" + o["name"]) or next((by_spelling[s] for s in spellings if s in by_spelling), None)
        if c is None:
            missing.append(o)
            continue
        matched.add(id(c))
        for s in spellings:
            if s not in by_spelling:
                neg_missing.append((o["name"], s))
        if arity(o["kind"]) != arity(c.get("kind", "str")):
            arity_mm.append((o["name"], o["kind"], c.get("kind")))
        elif o["kind"] != c.get("kind", "str"):
            kind_mm.append((o["name"], o["kind"], c.get("kind")))
        if "default" in o and "default" in c and not same_default(o["default"], c["default"]):
            default_mm.append((o["name"], o["default"], c["default"]))
        if o.get("choices") and c.get("choices") and set(o["choices"]) != set(c["choices"]):
            choice_mm.append((o["name"], sorted(set(o["choices"]) - set(c["choices"])),
                              sorted(set(c["choices"]) - set(o["choices"]))))
    extra = []
    v = vkey(version)
    for c in copts:
        if id(c) in matched:
            continue
        if c.get("since") and vkey(c["since"]) > v:
            continue
        if c.get("until") and vkey(c["until"]) < v:
            continue
        spellings = ["--" + c["name"]] + c.get("aliases", [])
        if any(s in wheel_spellings for s in spellings):
            continue
        extra.append(c)
    return {"catalog_options": len(copts), "wheel_options": len(options), "missing": missing, "extra": extra,
            "arity": arity_mm, "kind": kind_mm, "default": default_mm, "choices": choice_mm,
            "spellings_missing": neg_missing}


def print_compare(r, engine, version, catalog_path, out):
    def line(s=""):
        out.write(s + "\n")

    line(f"== {engine} {version} wheel vs {catalog_path}")
    line(f"wheel options: {r['wheel_options']}; catalog options: {r['catalog_options']}")
    line(f"missing from catalog: {len(r['missing'])}; in catalog (for this version) but not in wheel: {len(r['extra'])}; "
         f"arity mismatches: {len(r['arity'])}; value-kind mismatches: {len(r['kind'])}; "
         f"default mismatches: {len(r['default'])}; choice-set differences: {len(r['choices'])}; "
         f"spellings (aliases/negations) missing: {len(r['spellings_missing'])}")
    line()
    line(f"-- in wheel, missing from catalog ({len(r['missing'])})")
    for o in r["missing"]:
        extra = f" default={json.dumps(o['default'])}" if "default" in o else ""
        line(f"  --{o['name']} [{o['kind']}]{extra}")
    line(f"-- in catalog (version range includes {version}), not in wheel ({len(r['extra'])})")
    for c in r["extra"]:
        rng = f" since={c.get('since')}" if c.get("since") else ""
        rng += f" until={c.get('until')}" if c.get("until") else ""
        line(f"  --{c['name']} [{c.get('kind')}]{rng}")
    line(f"-- arity mismatches: wheel vs catalog ({len(r['arity'])})")
    for n, a, b in r["arity"]:
        line(f"  --{n}: wheel {a} ({arity(a)}), catalog {b} ({arity(b or 'str')})")
    line(f"-- value-kind mismatches, same arity ({len(r['kind'])})")
    for n, a, b in r["kind"]:
        line(f"  --{n}: wheel {a}, catalog {b}")
    line(f"-- default mismatches ({len(r['default'])})")
    for n, a, b in r["default"]:
        line(f"  --{n}: wheel {json.dumps(a)}, catalog {json.dumps(b)}")
    line(f"-- choice-set differences ({len(r['choices'])})")
    for n, a, b in r["choices"]:
        line(f"  --{n}: only in wheel {a}; only in catalog {b}")
    line(f"-- spellings the wheel accepts that the catalog does not list ({len(r['spellings_missing'])})")
    for n, s in r["spellings_missing"]:
        line(f"  --{n}: {s}")
