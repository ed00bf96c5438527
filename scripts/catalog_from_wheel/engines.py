"""Engine-specific reading of SGLang and vLLM argument parsers, and the mapping of argparse
actions to catalog options."""
from __future__ import annotations

import ast
import re

from .static import (PARSER, ClassRef, FuncRef, Interp, ModRef, Project, Sym, Unknown, is_unknown)

# ------------------------------------------------------------------ type hints
SIMPLE = {"int": "int", "str": "str", "float": "float", "bool": "bool", "bytes": "str", "object": "any",
          "Any": "any", "None": "none", "NoneType": "none", "Path": "class"}
GENERIC = {"list": "list", "List": "list", "Sequence": "list", "MutableSequence": "list", "Iterable": "list",
           "set": "set", "Set": "set", "frozenset": "set", "FrozenSet": "set", "AbstractSet": "set",
           "tuple": "tuple", "Tuple": "tuple", "dict": "dict", "Dict": "dict", "Mapping": "dict",
           "MutableMapping": "dict", "OrderedDict": "dict", "defaultdict": "dict"}


def _last(node):
    return ast.unparse(node).rsplit(".", 1)[-1]


class Types:
    def __init__(self, it: Interp):
        self.it = it
        self.unresolved: list[str] = []

    def is_dataclass(self, cref: ClassRef):
        for d in cref.node.decorator_list:
            t = ast.unparse(d)
            if "dataclass" in t or t == "config" or t.endswith(".config") or t.startswith("config("):
                return True
        return False

    def class_type(self, cref: ClassRef):
        if self.is_dataclass(cref):
            return ("dataclass", cref)
        for b in cref.node.bases:
            bl = _last(b.value if isinstance(b, ast.Subscript) else b)
            if bl in ("dict", "Dict", "TypedDict", "OrderedDict"):
                return ("dict",)
        for c in self.it.class_mro(cref)[1:]:
            if self.is_dataclass(c):
                return ("dataclass", cref)
        return ("class", cref.name)

    def of(self, node, mod, depth=0):
        if depth > 25:
            return ("class", "deep")
        if node is None:
            return ("none",)
        if isinstance(node, ast.Constant):
            if node.value is None:
                return ("none",)
            if node.value is Ellipsis:
                return ("ellipsis",)
            if isinstance(node.value, str):
                try:
                    return self.of(ast.parse(node.value, mode="eval").body, mod, depth + 1)
                except SyntaxError:
                    return ("class", node.value)
            return ("class", repr(node.value))
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
            return ("union", [self.of(node.left, mod, depth + 1), self.of(node.right, mod, depth + 1)])
        if isinstance(node, (ast.Name, ast.Attribute)):
            return self.named(node, mod, depth)
        if isinstance(node, ast.Subscript):
            head = _last(node.value)
            if isinstance(node.value, ast.Name):
                r = self.it.lookup_node(mod, node.value.id)
                if r and r[0] != "sym" and r[1][0] == "value":
                    head = _last(r[1][1]) if isinstance(r[1][1], (ast.Name, ast.Attribute)) else head
            elts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
            if head == "Optional":
                return ("union", [self.of(elts[0], mod, depth + 1), ("none",)])
            if head == "Union":
                return ("union", [self.of(e, mod, depth + 1) for e in elts])
            if head in ("Annotated", "SkipValidation", "Required", "NotRequired", "Final", "ReadOnly", "InitVar"):
                return self.of(elts[0], mod, depth + 1)
            if head == "Literal":
                vals = []
                for e in elts:
                    if isinstance(e, ast.Constant):
                        vals.append(e.value)
                    else:
                        t = self.of(e, mod, depth + 1)
                        if t[0] == "literal":
                            vals.extend(t[1])
                        else:
                            self.unresolved.append(f"Literal member {ast.unparse(e)}")
                return ("literal", vals)
            if head in GENERIC:
                g = GENERIC[head]
                if g == "dict":
                    return ("dict",)
                if g == "tuple":
                    inner = [self.of(e, mod, depth + 1) for e in elts]
                    return ("tuple", [t for t in inner if t[0] != "ellipsis"], any(t[0] == "ellipsis" for t in inner))
                return (g, self.of(elts[0], mod, depth + 1))
            if head in ("type", "Type", "Callable", "ClassVar"):
                return ("class", head)
            base = self.named(node.value, mod, depth)
            return base if base[0] in ("dataclass", "dict") else ("class", head)
        return ("class", ast.unparse(node)[:40])

    def named(self, node, mod, depth):
        text = ast.unparse(node)
        last = text.rsplit(".", 1)[-1]
        if isinstance(node, ast.Name):
            r = self.it.lookup_node(mod, node.id)
            if r is None:
                if last in SIMPLE:
                    return (SIMPLE[last],)
                if last in GENERIC:
                    return (GENERIC[last], ("any",)) if GENERIC[last] != "dict" else ("dict",)
                self.unresolved.append(f"type name {text} in {mod.name}")
                return ("class", text)
            if r[0] == "sym":
                sl = r[1].rsplit(".", 1)[-1]
                if sl in SIMPLE:
                    return (SIMPLE[sl],)
                if sl in GENERIC:
                    return (GENERIC[sl], ("any",)) if GENERIC[sl] != "dict" else ("dict",)
                return ("class", sl)
            m2, entry = r
            if entry[0] == "value":
                return self.of(entry[1], m2, depth + 1)
            if entry[0] == "class":
                return self.class_type(ClassRef(m2, entry[1]))
            return ("class", text)
        # Attribute: module.Name or typing.X
        v = self.it.ev(node, mod, {})
        if isinstance(v, ClassRef):
            return self.class_type(v)
        if last in SIMPLE:
            return (SIMPLE[last],)
        if last in GENERIC:
            return (GENERIC[last], ("any",)) if GENERIC[last] != "dict" else ("dict",)
        return ("class", text)


def leaves(t, out=None):
    out = [] if out is None else out
    if t[0] == "union":
        for x in t[1]:
            leaves(x, out)
    else:
        out.append(t)
    return out


def has(ls, kind):
    return any(x[0] == kind for x in ls)


def get(ls, kind):
    return next((x for x in ls if x[0] == kind), None)


# ------------------------------------------------------------------ vLLM get_kwargs
class VllmKwargs:
    """Static port of vLLM's `_compute_kwargs`, with version differences read from the wheel."""

    def __init__(self, it: Interp, types: Types, arg_utils: ModRef | None):
        self.it, self.types = it, types
        src = ""
        self.hr = {"max_model_len", "max_num_batched_tokens", "kv_cache_memory_bytes"}
        if arg_utils is not None:
            fn = arg_utils.mod.symbols.get("_compute_kwargs")
            if fn and fn[0] == "func":
                src = ast.unparse(fn[1])
                hr = set()
                for n in ast.walk(fn[1]):
                    if isinstance(n, ast.Set) and all(isinstance(e, ast.Constant) and isinstance(e.value, str) for e in n.elts):
                        hr.update(e.value for e in n.elts)
                    if (isinstance(n, ast.Compare) and ast.unparse(n.left) == "name"
                            and isinstance(n.comparators[0], ast.Constant)):
                        hr.add(n.comparators[0].value)
                if hr:
                    self.hr = hr
        self.optional_bool_str = "{bool, str, type(None)}" in src
        self.set_collections = "contains_type(type_hints, set)" in src
        self.feature_src = src
        self.cache: dict = {}

    def compute(self, cref: ClassRef):
        key = id(cref.node)
        if key in self.cache:
            return {k: dict(v) for k, v in self.cache[key].items()}
        out = {}
        for name, ann, value, mod in self.it.dataclass_fields(cref):
            t = self.types.of(ann, mod)
            ls = leaves(t)
            if value is None:
                default = Unknown(f"{cref.name}.{name} has no default")
            else:
                default = self.it.field_default(value, mod)
            kw = {"default": default, "help": ""}
            dc = get(ls, "dataclass")
            if dc is not None:
                kw["type"] = Sym("json")
            elif self.optional_bool_str and {x[0] for x in ls} == {"bool", "str", "none"}:
                kw["type"] = Sym("str")
                kw["nargs"] = "?"
                kw["const"] = True
            elif has(ls, "bool"):
                kw["action"] = Sym("argparse.BooleanOptionalAction")
            elif has(ls, "literal"):
                opts = get(ls, "literal")[1]
                kw["type"] = Sym(type(opts[0]).__name__ if opts else "str")
                if has(ls, "str"):
                    kw["metavar"] = opts
                else:
                    try:
                        kw["choices"] = sorted(opts)
                    except TypeError:
                        kw["choices"] = list(opts)
            elif has(ls, "tuple"):
                tt = get(ls, "tuple")
                kw["type"] = Sym(tt[1][0][0] if tt[1] else "str")
                kw["nargs"] = "+" if tt[2] else len(tt[1])
            elif has(ls, "list") or (self.set_collections and has(ls, "set")):
                lt = get(ls, "list") or get(ls, "set")
                elem = lt[1]
                el = leaves(elem)
                if elem[0] == "literal":
                    kw["type"] = Sym(type(elem[1][0]).__name__ if elem[1] else "str")
                    if elem[1] and all(isinstance(v, str) for v in elem[1]):
                        kw["choices"] = sorted(elem[1])
                else:
                    kw["type"] = Sym(el[0][0] if len(el) == 1 else "str")
                kw["nargs"] = "+"
            elif has(ls, "int"):
                if name in self.hr:
                    kw["type"] = Sym("human_readable_int")
                else:
                    kw["type"] = Sym("int")
            elif has(ls, "float"):
                kw["type"] = Sym("float")
            elif has(ls, "dict"):
                kw["type"] = Sym("json")
            elif has(ls, "str") or has(ls, "class") or has(ls, "any"):
                kw["type"] = Sym("str")
            else:
                kw["type"] = Sym("str")
                self.it.unresolved.append(f"{cref.name}.{name}: unsupported type {ast.unparse(ann)[:60]}")
            out[name] = kw
        self.cache[key] = out
        return {k: dict(v) for k, v in out.items()}


def vllm_hooks(it: Interp, types: Types, arg_utils):
    vk = VllmKwargs(it, types, arg_utils)

    def get_kwargs(it, node, mod, env):
        if not node.args:
            return NotImplemented
        c = it.ev(node.args[0], mod, env)
        if isinstance(c, ClassRef):
            return vk.compute(c)
        it.unresolved.append(f"get_kwargs({ast.unparse(node.args[0])}) not resolved")
        return Unknown("get_kwargs")

    def passthrough(it, node, mod, env):
        if node.args:
            return it.ev(node.args[0], mod, env)
        return NotImplemented

    def literal_args(it, node, mod, env):
        if len(node.args) == 1:
            t = types.of(node.args[0], mod)
            if t[0] == "literal":
                return list(t[1])
        return NotImplemented

    return {"get_kwargs": get_kwargs, "optional_type": passthrough, "parse_type": passthrough,
            "get_args": literal_args}, vk


# ------------------------------------------------------------------ SGLang declarative fields
def sglang_hooks(it: Interp, types: Types):
    """`add_cli_args_from_dataclass` and `_declared_default` of SGLang's arg_groups (0.5.2x)."""
    state = {"fields": None}

    def namespaces(cref: ClassRef):
        classes = [cref]
        ns = cref.mod.symbols.get("_INPUT_NAMESPACES")
        if ns:
            v = it.ev(ns[1], cref.mod, {})
            if isinstance(v, list):
                classes += [c for c in v if isinstance(c, ClassRef)]
        return classes

    def all_fields(cref: ClassRef):
        if state["fields"] is None:
            out = {}
            for c in namespaces(cref):
                for name, ann, value, mod in it.dataclass_fields(c):
                    out.setdefault(name, (ann, value, mod))
            state["fields"] = out
        return state["fields"]

    def declared_default(it, node, mod, env):
        if not node.args or state["fields"] is None:
            return NotImplemented
        name = it.ev(node.args[0], mod, env)
        f = state["fields"].get(name)
        if f is None or f[1] is None:
            return Unknown(f"declared default {name}")
        return it.field_default(f[1], f[2])

    def from_dataclass(it, node, mod, env):
        if len(node.args) < 2:
            return NotImplemented
        cref = it.ev(node.args[1], mod, env)
        if not isinstance(cref, ClassRef):
            it.unresolved.append("add_cli_args_from_dataclass: class not resolved")
            return PARSER
        for name, (ann, value, fmod) in all_fields(cref).items():
            add_sglang_field(it, types, name, ann, value, fmod)
        return PARSER

    return {"add_cli_args_from_dataclass": from_dataclass, "_declared_default": declared_default}


def add_sglang_field(it: Interp, types: Types, name, ann, value, mod):
    """Port of sglang.srt.arg_groups.arg_utils.add_cli_args_from_dataclass for one field."""
    if not (isinstance(ann, ast.Subscript) and _last(ann.value) in ("A", "Annotated")):
        return
    elts = ann.slice.elts if isinstance(ann.slice, ast.Tuple) else [ann.slice]
    raw_type, meta = elts[0], None
    for m in elts[1:]:
        if isinstance(m, ast.Constant) and isinstance(m.value, str):
            meta = {"help": m.value}
            break
        if isinstance(m, ast.Call) and _last(m.func) == "Arg":
            meta = {k.arg: it.ev(k.value, mod, {}) for k in m.keywords if k.arg}
            break
    if meta is None or meta.get("no_cli") is True:
        return
    cli = meta.get("cli_name") if isinstance(meta.get("cli_name"), str) else "--" + name.replace("_", "-")
    names = [cli] + [a for a in (meta.get("aliases") or []) if isinstance(a, str)]
    default = it.field_default(value, mod) if value is not None else None
    kw = {"help": meta.get("help", "")}
    if value is not None:
        kw["default"] = default
    where = f"{mod.name}:{ann.lineno}"
    from .static import Action
    if meta.get("action") is not None:
        kw["action"] = meta["action"]
        if isinstance(meta.get("action_kwargs"), dict):
            kw.update(meta["action_kwargs"])
        it.actions.append(Action(names, kw, where))
        return
    t = types.of(raw_type, mod)
    ls = leaves(t)
    non_none = [x for x in ls if x[0] != "none"]
    inner = non_none[0] if len(non_none) == 1 else t
    tp = meta.get("type_parser")
    if inner[0] == "literal":
        kw["type"] = tp if tp is not None else Sym(type(inner[1][0]).__name__ if inner[1] else "str")
        kw["choices"] = meta.get("choices") or inner[1]
    elif inner[0] == "list" and tp is None:
        kw["type"] = Sym(inner[1][0] if inner[1][0] in ("int", "float", "str") else "str")
        kw["nargs"] = meta.get("nargs") or "+"
        if meta.get("choices"):
            kw["choices"] = meta["choices"]
    elif inner[0] == "bool":
        kw["action"] = "store_true"
    else:
        kw["type"] = tp if tp is not None else Sym(inner[0] if inner[0] in ("int", "float", "str") else "str")
        if meta.get("choices"):
            kw["choices"] = meta["choices"]
        if meta.get("nargs"):
            kw["nargs"] = meta["nargs"]
    if meta.get("const") is not None:
        kw["const"] = meta["const"]
    it.actions.append(Action(names, kw, where))


# ------------------------------------------------------------------ actions -> options
def _json_value(v):
    if isinstance(v, bool) or v is None or isinstance(v, (int, float, str)):
        return v
    if isinstance(v, (list, tuple)):
        out = [_json_value(x) for x in v]
        return None if any(x is None and y is not None for x, y in zip(out, v)) else out
    if isinstance(v, dict):
        out = {}
        for k, x in v.items():
            jx = _json_value(x)
            if jx is None and x is not None:
                return None
            out[str(k)] = jx
        return out
    return None


def callable_name(v):
    if isinstance(v, Sym):
        return v.last
    if isinstance(v, (FuncRef, ClassRef)):
        return v.name
    if isinstance(v, str):
        return v
    return None


_ABSENT = object()


def action_arity(it: Interp, act, nargs_given):
    """('bool'|'value'|'list'|'skip', boolean-optional?) for an argparse action."""
    if act is None:
        return "value", False
    if isinstance(act, str):
        if act in ("store_true", "store_false", "store_const", "append_const", "count"):
            return "bool", False
        if act in ("help", "version"):
            return "skip", False
        if act == "extend":
            return "list", False
        return "value", False
    if isinstance(act, Sym):
        if act.last == "BooleanOptionalAction":
            return "bool", True
        return "value", False
    if isinstance(act, ClassRef):
        if nargs_given is not _ABSENT:
            return "value", False  # explicit nargs decides (see to_options)
        mro = it.class_mro(act)
        names = [c.name for c in mro]
        base_syms = [ast.unparse(b) for c in mro for b in c.node.bases]
        if any("BooleanOptionalAction" in n for n in names + base_syms):
            return "bool", True
        if any(re.search(r"StoreTrue|StoreFalse|StoreConst|_StoreTrueAction", n) for n in names + base_syms):
            return "bool", False
        for c in mro:
            for s in c.node.body:
                if isinstance(s, ast.FunctionDef) and s.name == "__init__":
                    a = s.args
                    params = a.args[len(a.args) - len(a.defaults):]
                    for p, d in zip(params, a.defaults):
                        if p.arg == "nargs" and isinstance(d, ast.Constant):
                            if d.value == 0:
                                return "bool", False
                            if d.value in ("+", "*"):
                                return "list", False
                            if d.value == "?":
                                return "opt", False
                    for n in ast.walk(s):
                        if isinstance(n, ast.Call) and ast.unparse(n.func).endswith("__init__"):
                            for k in n.keywords:
                                if k.arg == "nargs" and isinstance(k.value, ast.Constant) and k.value.value == 0:
                                    return "bool", False
        return "value", False
    return "value", False


def kind_from_type(tname):
    if tname is None:
        return "str"
    t = tname.lower()
    if "human_readable" in t or t in ("human_int", "parse_human_int", "int_with_suffix") or "human" in t:
        return "int_hr"
    if t == "int":
        return "int"
    if t == "float":
        return "float"
    if "json" in t or t in ("loads", "union_dict_and_str", "parse_dataclass"):
        return "json"
    return "str"


def to_options(it: Interp, enable_disable: bool, categorize):
    options, seen, notes, positionals = [], {}, [], 0
    for a in it.actions:
        strings = [s for s in a.args if isinstance(s, str)]
        flags = [s for s in strings if s.startswith("-")]
        if not flags:
            positionals += 1
            continue
        kw = a.kwargs
        nargs = kw.get("nargs")
        arity, boolopt = action_arity(it, kw.get("action"), kw.get("nargs", _ABSENT))
        if arity == "skip":
            continue
        longs = [s for s in flags if s.startswith("--")]
        name = (longs[0] if longs else flags[0]).lstrip("-")
        negations = []
        if boolopt:
            for s in longs:
                negations.append("--no-" + s[2:])
            if enable_disable:
                for s in longs:
                    for pre, inv in (("--enable-", "--disable-"), ("--disable-", "--enable-")):
                        if s.startswith(pre):
                            negations.append(inv + s[len(pre):])
        if arity == "value" and isinstance(nargs, str) and nargs in ("+", "*"):
            arity = "list"
        elif arity == "value" and isinstance(nargs, int) and nargs > 1:
            arity = "list"
        elif arity == "value" and nargs == "?":
            arity = "opt"
        elif arity == "value" and nargs == 0:
            arity = "bool"
        if is_unknown(nargs):
            a.unresolved.append("nargs")
        tname = callable_name(kw.get("type"))
        if is_unknown(kw.get("type")):
            a.unresolved.append(f"type ({kw['type'].why})")
        o = {"name": name, "aliases": [s for s in flags if s.lstrip("-") != name]}
        o["negations"] = [n for n in dict.fromkeys(negations) if n not in flags]
        if arity == "bool":
            o["kind"] = "bool"
        elif arity == "list":
            o["kind"] = "list"
        elif arity == "opt":
            o["kind"] = "opt"
        else:
            o["kind"] = kind_from_type(tname)
        choices = kw.get("choices")
        if isinstance(choices, (set, frozenset)):
            choices = sorted(choices, key=str)
        if is_unknown(choices):
            a.unresolved.append(f"choices ({choices.why})")
        elif isinstance(choices, (list, tuple)):
            cs = [c for c in choices if c is not None and c != "None"]
            if cs and all(isinstance(c, str) for c in cs) and o["kind"] == "str":
                o["kind"] = "choice"
                o["choices"] = cs
        act = kw.get("action")
        if "default" in kw:
            d = kw["default"]
            if is_unknown(d):
                a.unresolved.append(f"default ({d.why})")
            elif isinstance(d, Sym) and d.last == "SUPPRESS":
                pass
            else:
                jd = _json_value(d)
                if jd is not None:
                    o["default"] = jd
        elif act == "store_true":
            o["default"] = False
        elif act == "store_false":
            o["default"] = True
        o["category"] = categorize(name)
        helptext = kw.get("help")
        dep = kw.get("deprecated") is True
        if isinstance(act, ClassRef) and "Deprecat" in act.name:
            dep = True
        if isinstance(helptext, str) and re.match(r"\s*[\[(]?deprecated", helptext, re.I):
            dep = True
        if dep:
            o["deprecated"] = True
        o["_where"] = a.where
        o["_type"] = tname
        if a.unresolved:
            notes.append(f"--{name} ({a.where}): " + "; ".join(a.unresolved))
        key = name
        if key in seen:
            notes.append(f"--{name} ({a.where}): registered twice (first kept; branches of an `if` both read)")
            continue
        seen[key] = o
        options.append(o)
    return options, notes, positionals


# ------------------------------------------------------------------ entry points
def read_sglang(project: Project, categorize):
    it = Interp(project)
    types = Types(it)
    it.hooks.update(sglang_hooks(it, types))
    mod = project.module("sglang.srt.server_args")
    if mod is None:
        raise SystemExit("sglang/srt/server_args.py not in the wheel")
    if "ServerArgs" not in mod.classes:
        raise SystemExit("ServerArgs class not found")
    cref = ClassRef(mod, mod.classes["ServerArgs"])
    fn = it.class_member(cref, "add_cli_args")
    if not isinstance(fn, FuncRef):
        raise SystemExit("ServerArgs.add_cli_args not found")
    it.run_function(fn, [PARSER], {})
    options, notes, pos = to_options(it, False, categorize)
    notes = it.unresolved + types.unresolved + notes
    return options, notes, {"entry": "sglang.srt.server_args.ServerArgs.add_cli_args", "positionals": pos}


def read_vllm(project: Project, categorize):
    it = Interp(project)
    types = Types(it)
    arg_utils = project.module("vllm.engine.arg_utils")
    hooks, vk = vllm_hooks(it, types, ModRef(arg_utils) if arg_utils else None)
    it.hooks.update(hooks)
    # `vllm serve` builds its parser with make_arg_parser; find where serve.py imports it from.
    entry = None
    serve = project.module("vllm.entrypoints.cli.serve")
    if serve is not None:
        v = it.lookup(serve, "make_arg_parser")
        if isinstance(v, FuncRef):
            entry = v
    if entry is None:
        for m in ("vllm.entrypoints.openai.cli_args", "vllm.entrypoints.common.cli_args"):
            mm = project.module(m)
            if mm and "make_arg_parser" in mm.symbols:
                v = it.lookup(mm, "make_arg_parser")
                if isinstance(v, FuncRef):
                    entry = v
                    break
    if entry is None:
        raise SystemExit("make_arg_parser not found in the vLLM wheel")
    it.run_function(entry, [PARSER], {})
    # BooleanOptionalAction -> EnableDisableAction when FlexibleArgumentParser registers it.
    enable_disable = False
    for cand in ("vllm.utils.argparse_utils", "vllm.utils"):
        project.module(cand)
    for name, m in list(project.modules.items()):
        if m is not None and re.search(r"register\(\s*[\"']action[\"']\s*,\s*(argparse\.)?BooleanOptionalAction\s*,\s*EnableDisableAction",
                                       m.source):
            enable_disable = True
    options, notes, pos = to_options(it, enable_disable, categorize)
    notes = it.unresolved + types.unresolved + notes
    info = {"entry": f"{entry.mod.name}.make_arg_parser", "positionals": pos,
            "bool_style": "--enable-x/--disable-x (EnableDisableAction) plus --no-x" if enable_disable
            else "--x/--no-x (BooleanOptionalAction)",
            "human_readable_ints": sorted(vk.hr)}
    return options, notes, info
