"""Static reading of Python sources inside a wheel: modules, symbols, a small expression
evaluator and an interpreter for the straight-line code that builds an argparse parser.

Nothing from the wheel is imported or executed. Values that cannot be worked out statically
become `Unknown` (with the reason), names of things outside the wheel become `Sym` (`int`,
`json.loads`, `argparse.BooleanOptionalAction`).
"""
from __future__ import annotations

import ast
import zipfile
from dataclasses import dataclass, field


class Unknown:
    def __init__(self, why: str):
        self.why = why

    def __repr__(self):
        return f"<unknown: {self.why}>"


@dataclass(frozen=True)
class Sym:
    """A name that lives outside the wheel (builtin, stdlib, third-party)."""
    name: str

    @property
    def last(self):
        return self.name.rsplit(".", 1)[-1]


@dataclass(frozen=True, eq=False)
class ModRef:
    mod: "Module"


@dataclass(frozen=True, eq=False)
class ClassRef:
    mod: "Module"
    node: ast.ClassDef

    @property
    def name(self):
        return self.node.name


@dataclass(frozen=True, eq=False)
class FuncRef:
    mod: "Module"
    node: ast.FunctionDef
    owner: ClassRef | None = None
    defined_in: ClassRef | None = None

    @property
    def name(self):
        return self.node.name


class ParserTok:
    """Stands for an argparse parser (or argument group) inside interpreted code."""

    def __repr__(self):
        return "<parser>"


PARSER = ParserTok()

BUILTIN_NAMES = {"int", "float", "str", "bool", "list", "dict", "tuple", "set", "frozenset", "bytes",
                 "object", "type", "len", "sorted", "print", "getattr", "isinstance", "any", "all"}


def is_unknown(v):
    return isinstance(v, Unknown)


class Module:
    def __init__(self, name: str, tree: ast.Module, is_pkg: bool, source: str):
        self.name = name
        self.tree = tree
        self.is_pkg = is_pkg
        self.source = source
        self.symbols: dict[str, tuple] = {}
        self.classes: dict[str, ast.ClassDef] = {}
        self.star_imports: list[str] = []
        self._build(tree.body, primary=True)

    def _put(self, name, entry, primary):
        if primary or name not in self.symbols:
            self.symbols[name] = entry

    def _build(self, stmts, primary):
        for s in stmts:
            if isinstance(s, ast.Assign):
                for t in s.targets:
                    if isinstance(t, ast.Name):
                        self._put(t.id, ("value", s.value), primary)
            elif isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name) and s.value is not None:
                self._put(s.target.id, ("value", s.value), primary)
            elif isinstance(s, ast.ClassDef):
                self._put(s.name, ("class", s), primary)
                self.classes.setdefault(s.name, s)
            elif isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self._put(s.name, ("func", s), primary)
            elif isinstance(s, ast.Import):
                for a in s.names:
                    if a.asname:
                        self._put(a.asname, ("module", a.name), primary)
                    else:
                        top = a.name.split(".")[0]
                        self._put(top, ("module", top), primary)
            elif isinstance(s, ast.ImportFrom):
                base = self._abs_module(s.module, s.level)
                for a in s.names:
                    if a.name == "*":
                        self.star_imports.append(base)
                        continue
                    self._put(a.asname or a.name, ("from", base, a.name), primary)
            elif isinstance(s, ast.If):
                test = ast.unparse(s.test)
                if "TYPE_CHECKING" in test:
                    # Runtime takes the else branch; the TYPE_CHECKING body only fills gaps.
                    self._build(s.orelse, primary)
                    self._build(s.body, False)
                else:
                    self._build(s.body, primary)
                    self._build(s.orelse, False)
            elif isinstance(s, ast.Try):
                self._build(s.body, primary)
                for h in s.handlers:
                    self._build(h.body, False)

    def _abs_module(self, module, level):
        if not level:
            return module or ""
        parts = self.name.split(".")
        if not self.is_pkg:
            parts = parts[:-1]
        if level > 1:
            parts = parts[: len(parts) - (level - 1)]
        base = ".".join(parts)
        return f"{base}.{module}" if module else base


class Project:
    """The Python sources of one wheel."""

    def __init__(self, wheel_path: str):
        self.zip = zipfile.ZipFile(wheel_path)
        self.names = set(self.zip.namelist())
        self.modules: dict[str, Module | None] = {}

    def module(self, name: str) -> Module | None:
        if name in self.modules:
            return self.modules[name]
        path = name.replace(".", "/")
        mod = None
        for cand, is_pkg in ((path + ".py", False), (path + "/__init__.py", True)):
            if cand in self.names:
                src = self.zip.read(cand).decode("utf-8", "replace")
                try:
                    mod = Module(name, ast.parse(src), is_pkg, src)
                except SyntaxError:
                    mod = None
                break
        self.modules[name] = mod
        return mod

    def has_module(self, name):
        path = name.replace(".", "/")
        return path + ".py" in self.names or path + "/__init__.py" in self.names


@dataclass
class Action:
    """One `add_argument` call as the interpreter saw it."""
    args: list
    kwargs: dict
    where: str
    unresolved: list = field(default_factory=list)


class Interp:
    """Evaluates expressions and interprets parser-building functions."""

    def __init__(self, project: Project, hooks: dict | None = None, max_depth: int = 12):
        self.p = project
        self.hooks = hooks or {}
        self.actions: list[Action] = []
        self.unresolved: list[str] = []
        self.depth = 0
        self.max_depth = max_depth
        self._value_cache: dict = {}
        self._evaluating: set = set()

    # ---------------------------------------------------------------- name resolution
    def lookup(self, mod: Module, name: str, seen=None):
        seen = seen or set()
        key = (mod.name, name)
        if key in seen:
            return Unknown(f"import cycle {mod.name}.{name}")
        seen.add(key)
        entry = mod.symbols.get(name)
        if entry is None:
            for base in mod.star_imports:
                m = self.p.module(base)
                if m is not None and (name in m.symbols or m.star_imports):
                    v = self.lookup(m, name, seen)
                    if not is_unknown(v):
                        return v
            if mod.is_pkg and self.p.has_module(f"{mod.name}.{name}"):
                return ModRef(self.p.module(f"{mod.name}.{name}"))
            if name in BUILTIN_NAMES:
                return Sym(name)
            return Unknown(f"name {name} not found in {mod.name}")
        kind = entry[0]
        if kind == "value":
            ck = (mod.name, name)
            if ck in self._value_cache:
                return self._value_cache[ck]
            if ck in self._evaluating:
                return Unknown(f"recursive value {mod.name}.{name}")
            self._evaluating.add(ck)
            try:
                v = self.ev(entry[1], mod, {})
            finally:
                self._evaluating.discard(ck)
            if is_unknown(v) and name in mod.classes:
                # `X = decorate(X)` / `X = msgspec.defstruct(...)`: read the class statement.
                v = ClassRef(mod, mod.classes[name])
            self._value_cache[ck] = v
            return v
        if kind == "class":
            return ClassRef(mod, entry[1])
        if kind == "func":
            return FuncRef(mod, entry[1])
        if kind == "module":
            m = self.p.module(entry[1])
            return ModRef(m) if m else Sym(entry[1])
        if kind == "from":
            base, attr = entry[1], entry[2]
            m = self.p.module(base)
            if m is None:
                return Sym(f"{base}.{attr}" if base else attr)
            if self.p.has_module(f"{base}.{attr}") and attr not in m.symbols:
                return ModRef(self.p.module(f"{base}.{attr}"))
            return self.lookup(m, attr, seen)
        return Unknown(f"odd symbol {name}")

    def lookup_node(self, mod: Module, name: str):
        """Like lookup but returns (module, raw symbol entry) for type-alias reading."""
        for _ in range(20):
            entry = mod.symbols.get(name)
            if entry is None:
                star = [self.p.module(b) for b in mod.star_imports]
                star = [m for m in star if m is not None and name in m.symbols]
                if not star:
                    return None
                mod = star[0]
                continue
            if entry[0] == "from":
                m = self.p.module(entry[1])
                if m is None:
                    return ("sym", f"{entry[1]}.{entry[2]}")
                mod, name = m, entry[2]
                continue
            return (mod, entry)
        return None

    # ---------------------------------------------------------------- classes
    def class_bases(self, cref: ClassRef):
        out = []
        for b in cref.node.bases:
            v = self.ev(b, cref.mod, {})
            out.append(v)
        return out

    def class_mro(self, cref: ClassRef, seen=None):
        seen = seen if seen is not None else set()
        if id(cref.node) in seen:
            return []
        seen.add(id(cref.node))
        out = [cref]
        for b in self.class_bases(cref):
            if isinstance(b, ClassRef):
                out.extend(self.class_mro(b, seen))
        return out

    def class_member(self, cref: ClassRef, attr: str):
        for c in self.class_mro(cref):
            scope: dict = {}
            for s in c.node.body:
                if isinstance(s, ast.Assign) and len(s.targets) == 1 and isinstance(s.targets[0], ast.Name):
                    # Class-body names are visible to later class-body statements.
                    if s.targets[0].id == attr:
                        return self.ev(s.value, c.mod, scope)
                    if isinstance(s.value, (ast.Constant, ast.Tuple, ast.List, ast.Name, ast.Attribute)):
                        scope[s.targets[0].id] = self.ev(s.value, c.mod, scope)
                    continue
                if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name) and s.target.id == attr:
                    if s.value is None:
                        return Unknown(f"{c.name}.{attr} has no default")
                    return self.field_default(s.value, c.mod)
                if isinstance(s, ast.Assign) and any(isinstance(t, ast.Name) and t.id == attr for t in s.targets):
                    return self.ev(s.value, c.mod, {})
                if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)) and s.name == attr:
                    return FuncRef(c.mod, s, cref, c)  # owner: the class it was looked up on (cls)
                if isinstance(s, ast.ClassDef) and s.name == attr:
                    return ClassRef(c.mod, s)
        return Unknown(f"{cref.name}.{attr} not found")

    def field_default(self, node, mod):
        """Default of a dataclass / msgspec / pydantic field from its assigned value."""
        if isinstance(node, ast.Call):
            fname = ast.unparse(node.func).rsplit(".", 1)[-1]
            if fname in ("field", "Field"):
                kw = {k.arg: k.value for k in node.keywords if k.arg}
                if "default" in kw:
                    return self.ev(kw["default"], mod, {})
                if fname == "Field" and node.args:
                    return self.ev(node.args[0], mod, {})
                if "default_factory" in kw:
                    if isinstance(kw["default_factory"], ast.Lambda) and not kw["default_factory"].args.args:
                        return self.ev(kw["default_factory"].body, mod, {})
                    f = self.ev(kw["default_factory"], mod, {})
                    if isinstance(f, Sym) and f.name in ("list", "dict", "set", "tuple"):
                        return {"list": [], "dict": {}, "set": [], "tuple": []}[f.name]
                    return Unknown(f"default_factory {ast.unparse(kw['default_factory'])}")
                return Unknown("field() without default")
        return self.ev(node, mod, {})

    def dataclass_fields(self, cref: ClassRef):
        """[(name, annotation node, value node or None, module)] in dataclass order (bases first)."""
        out: dict[str, tuple] = {}
        for c in reversed(self.class_mro(cref)):
            for s in c.node.body:
                if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name):
                    ann = ast.unparse(s.annotation)
                    if ann.startswith(("ClassVar", "typing.ClassVar", "InitVar")):
                        continue
                    out[s.target.id] = (s.target.id, s.annotation, s.value, c.mod)
        return list(out.values())

    # ---------------------------------------------------------------- expressions
    def ev(self, node, mod: Module, env: dict):
        try:
            return self._ev(node, mod, env)
        except RecursionError:
            return Unknown("recursion")

    def _ev(self, node, mod, env):
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
            out = []
            for e in node.elts:
                if isinstance(e, ast.Starred):
                    v = self.ev(e.value, mod, env)
                    if isinstance(v, (list, tuple)):
                        out.extend(v)
                        continue
                    return Unknown(f"starred {ast.unparse(e)}")
                v = self.ev(e, mod, env)
                if is_unknown(v):
                    return v
                out.append(v)
            return tuple(out) if isinstance(node, ast.Tuple) else out
        if isinstance(node, ast.Dict):
            out = {}
            for k, v in zip(node.keys, node.values):
                if k is None:
                    d = self.ev(v, mod, env)
                    if isinstance(d, dict):
                        out.update(d)
                        continue
                    return Unknown(f"dict splat {ast.unparse(v)}")
                kv = self.ev(k, mod, env)
                if is_unknown(kv) or not isinstance(kv, (str, int, float, bool, type(None))):
                    return Unknown(f"dict key {ast.unparse(k)}")
                out[kv] = self.ev(v, mod, env)
            return out
        if isinstance(node, ast.Name):
            if node.id in env:
                return env[node.id]
            return self.lookup(mod, node.id)
        if isinstance(node, ast.Attribute):
            base = self.ev(node.value, mod, env)
            return self.attr(base, node.attr)
        if isinstance(node, ast.BinOp):
            a, b = self.ev(node.left, mod, env), self.ev(node.right, mod, env)
            if is_unknown(a):
                return a
            if is_unknown(b):
                return b
            try:
                if isinstance(node.op, ast.Add) and type(a) is type(b) and isinstance(a, (list, str, tuple, int, float)):
                    return a + b
                if isinstance(node.op, ast.Add) and isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
                    return list(a) + list(b)
                if isinstance(node.op, (ast.Mult, ast.Sub, ast.Div, ast.Pow, ast.FloorDiv)) and all(
                        isinstance(x, (int, float)) and not isinstance(x, bool) for x in (a, b)):
                    return {ast.Mult: lambda: a * b, ast.Sub: lambda: a - b, ast.Div: lambda: a / b,
                            ast.Pow: lambda: a ** b, ast.FloorDiv: lambda: a // b}[type(node.op)]()
                if isinstance(node.op, ast.BitOr) and isinstance(a, (set, dict)) and type(a) is type(b):
                    return a | b
                if isinstance(node.op, ast.Mod) and isinstance(a, str):
                    return Unknown("%-format")
            except Exception as e:  # noqa: BLE001 - static arithmetic on odd values
                return Unknown(f"binop {e}")
            return Unknown(f"binop {ast.unparse(node)[:60]}")
        if isinstance(node, ast.UnaryOp):
            v = self.ev(node.operand, mod, env)
            if is_unknown(v):
                return v
            if isinstance(node.op, ast.Not):
                return not v if isinstance(v, (bool, int, str, list, type(None))) else Unknown("not")
            if isinstance(node.op, ast.USub) and isinstance(v, (int, float)):
                return -v
            return Unknown("unary")
        if isinstance(node, ast.JoinedStr):
            parts = []
            for v in node.values:
                if isinstance(v, ast.Constant):
                    parts.append(str(v.value))
                elif isinstance(v, ast.FormattedValue):
                    x = self.ev(v.value, mod, env)
                    if is_unknown(x) or not isinstance(x, (str, int, float)):
                        return Unknown(f"f-string part {ast.unparse(v.value)[:40]}")
                    parts.append(str(x))
            return "".join(parts)
        if isinstance(node, ast.Subscript):
            base = self.ev(node.value, mod, env)
            idx = self.ev(node.slice, mod, env)
            if isinstance(base, (dict, list, tuple, str)) and not is_unknown(idx):
                try:
                    return base[idx]
                except (KeyError, IndexError, TypeError):
                    return Unknown(f"subscript {ast.unparse(node)[:60]}")
            return Unknown(f"subscript {ast.unparse(node)[:60]}")
        if isinstance(node, ast.Call):
            return self.call(node, mod, env)
        if isinstance(node, ast.IfExp):
            t = self.ev(node.test, mod, env)
            if is_unknown(t) or not isinstance(t, (bool, int, str, list, type(None))):
                return Unknown(f"condition {ast.unparse(node.test)[:60]}")
            return self.ev(node.body if t else node.orelse, mod, env)
        if isinstance(node, ast.BoolOp):
            vals = [self.ev(v, mod, env) for v in node.values]
            if any(is_unknown(v) for v in vals):
                return Unknown("boolop")
            if isinstance(node.op, ast.And):
                for v in vals:
                    if not v:
                        return v
                return vals[-1]
            for v in vals:
                if v:
                    return v
            return vals[-1]
        if isinstance(node, ast.Compare) and len(node.ops) == 1:
            a, b = self.ev(node.left, mod, env), self.ev(node.comparators[0], mod, env)
            if is_unknown(a) or is_unknown(b):
                return Unknown("compare")
            op = node.ops[0]
            try:
                if isinstance(op, ast.Eq):
                    return a == b
                if isinstance(op, ast.NotEq):
                    return a != b
                if isinstance(op, ast.In):
                    return a in b
                if isinstance(op, ast.NotIn):
                    return a not in b
                if isinstance(op, ast.Is):
                    return a is b
                if isinstance(op, ast.IsNot):
                    return a is not b
            except TypeError:
                return Unknown("compare")
            return Unknown("compare")
        if isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp)) and len(node.generators) == 1:
            g = node.generators[0]
            it = self.ev(g.iter, mod, env)
            if isinstance(it, dict):
                it = list(it)
            if not isinstance(it, (list, tuple)) or not isinstance(g.target, ast.Name):
                return Unknown(f"comprehension {ast.unparse(node)[:60]}")
            out = []
            for x in it:
                e2 = dict(env)
                e2[g.target.id] = x
                ok = True
                for cond in g.ifs:
                    c = self.ev(cond, mod, e2)
                    if is_unknown(c):
                        return Unknown("comprehension condition")
                    ok = ok and bool(c)
                if ok:
                    v = self.ev(node.elt, mod, e2)
                    if is_unknown(v):
                        return v
                    out.append(v)
            return out
        if isinstance(node, ast.Lambda):
            return Unknown("lambda")
        return Unknown(f"{type(node).__name__} {ast.unparse(node)[:60]}")

    def attr(self, base, name):
        if is_unknown(base):
            return base
        if isinstance(base, ModRef):
            return self.lookup(base.mod, name)
        if isinstance(base, ClassRef):
            return self.class_member(base, name)
        if isinstance(base, Sym):
            return Sym(f"{base.name}.{name}")
        if isinstance(base, (str, dict, list)):
            return ("method", base, name)
        return Unknown(f"attribute .{name} of {type(base).__name__}")

    def call(self, node: ast.Call, mod, env):
        if (isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Call)
                and isinstance(node.func.value.func, ast.Name) and node.func.value.func.id == "super"
                and "__owner__" in env):
            func = self.super_member(env["__owner__"], env.get("__defined__"), node.func.attr)
        else:
            func = self.ev(node.func, mod, env)
        fname = ast.unparse(node.func)
        last = fname.rsplit(".", 1)[-1]
        # parser-building calls
        if isinstance(node.func, ast.Attribute) and last in ("add_argument", "add_argument_group",
                                                               "add_mutually_exclusive_group", "add_parser",
                                                               "set_defaults"):
            base = self.ev(node.func.value, mod, env)
            if base is PARSER:
                if last == "add_argument":
                    self.record_action(node, mod, env)
                return PARSER
        if last in self.hooks:
            r = self.hooks[last](self, node, mod, env)
            if r is not NotImplemented:
                return r
        args = [self.ev(a.value if isinstance(a, ast.Starred) else a, mod, env) for a in node.args]
        kwargs = {k.arg: self.ev(k.value, mod, env) for k in node.keywords if k.arg}
        if isinstance(func, FuncRef) and any(a is PARSER or isinstance(a, dict) for a in list(args) + list(kwargs.values())):
            # Code that registers options on a parser or edits a kwargs dict: run it.
            r = self.run_function(func, args, kwargs)
            if (r is None or is_unknown(r)) and any(a is PARSER for a in list(args) + list(kwargs.values())):
                return PARSER
            return r
        if isinstance(func, tuple) and func and func[0] == "method":
            _, obj, meth = func
            try:
                if isinstance(obj, str) and meth in ("replace", "lower", "upper", "strip", "lstrip", "rstrip",
                                                     "removeprefix", "removesuffix", "format", "join", "split"):
                    if all(not is_unknown(a) for a in args):
                        return getattr(obj, meth)(*args)
                if isinstance(obj, dict) and meth in ("pop", "setdefault") and args and not is_unknown(args[0]):
                    return getattr(obj, meth)(*args)
                if isinstance(obj, dict) and meth in ("keys", "values", "items", "get"):
                    if meth == "items":
                        return list(obj.items())
                    if meth == "get":
                        return obj.get(*args)
                    return list(getattr(obj, meth)())
            except Exception as e:  # noqa: BLE001
                return Unknown(f"method {meth}: {e}")
            return Unknown(f"method {meth}")
        if isinstance(func, Sym):
            if func.name in ("list", "tuple", "sorted", "set", "frozenset") and len(args) == 1:
                a = args[0]
                if isinstance(a, dict):
                    a = list(a)
                if isinstance(a, (list, tuple)):
                    try:
                        return sorted(a) if func.name == "sorted" else list(a)
                    except TypeError:
                        return list(a)
            if func.name in ("str", "int", "float", "bool") and len(args) == 1 and not is_unknown(args[0]):
                try:
                    return {"str": str, "int": int, "float": float, "bool": bool}[func.name](args[0])
                except (TypeError, ValueError):
                    pass
            if func.name in ("dict",) and not args:
                return dict(kwargs)
            return Unknown(f"call {fname[:60]}")
        if isinstance(func, FuncRef):
            # A tiny function that just returns an expression of its parameters.
            body = [s for s in func.node.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
            if len(body) == 1 and isinstance(body[0], ast.Return) and body[0].value is not None:
                e2 = self.bind(func, args, kwargs)
                return self.ev(body[0].value, func.mod, e2)
        return Unknown(f"call {fname[:60]}")

    def super_member(self, owner, defined, attr):
        if not isinstance(owner, ClassRef):
            return Unknown("super() outside a class")
        mro = self.class_mro(owner)
        idx = next((i for i, c in enumerate(mro) if defined is not None and c.node is defined.node), 0)
        for c in mro[idx + 1:]:
            for s in c.node.body:
                if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)) and s.name == attr:
                    return FuncRef(c.mod, s, owner, c)
        return Unknown(f"super().{attr}")

    def bind(self, func: FuncRef, args, kwargs):
        a = func.node.args
        params = [p.arg for p in a.posonlyargs + a.args]
        decos = {ast.unparse(d) for d in func.node.decorator_list}
        if func.owner is not None and "staticmethod" not in decos and params:
            params = params[1:]  # self / cls
        env = {}
        defaults = a.defaults
        for p, d in zip(params[len(params) - len(defaults):], defaults):
            env[p] = self.ev(d, func.mod, {})
        for p, d in zip(a.kwonlyargs, a.kw_defaults):
            if d is not None:
                env[p.arg] = self.ev(d, func.mod, {})
        if func.owner is not None and "staticmethod" not in decos and a.args:
            env[a.args[0].arg] = func.owner
        if func.owner is not None:
            env["__owner__"] = func.owner
            env["__defined__"] = func.defined_in
        for p, v in zip(params, args):
            env[p] = v
        for k, v in kwargs.items():
            env[k] = v
        return env

    def run_function(self, func: FuncRef, args, kwargs):
        if self.depth >= self.max_depth:
            self.unresolved.append(f"call depth exceeded at {func.name}")
            return None
        self.depth += 1
        try:
            env = self.bind(func, args, kwargs)
            r = self.exec_block(func.node.body, func.mod, env, f"{func.mod.name}.{func.name}")
        finally:
            self.depth -= 1
        return r[1] if isinstance(r, tuple) else None

    # ---------------------------------------------------------------- statements
    def exec_block(self, stmts, mod, env, where):
        for s in stmts:
            if isinstance(s, ast.Return):
                return ("return", self.ev(s.value, mod, env) if s.value is not None else None)
            r = self.exec_stmt(s, mod, env, where)
            if isinstance(r, tuple):
                return r
        return None

    def assign(self, target, value, mod, env):
        if isinstance(target, ast.Name):
            env[target.id] = value
        elif isinstance(target, (ast.Tuple, ast.List)):
            if isinstance(value, (list, tuple)) and len(value) == len(target.elts):
                for t, v in zip(target.elts, value):
                    self.assign(t, v, mod, env)
            else:
                for t in target.elts:
                    self.assign(t, Unknown("unpack"), mod, env)
        elif isinstance(target, ast.Subscript):
            base = self.ev(target.value, mod, env)
            key = self.ev(target.slice, mod, env)
            if isinstance(base, dict) and not is_unknown(key):
                base[key] = value

    def exec_stmt(self, s, mod, env, where):
        if isinstance(s, ast.Expr):
            if isinstance(s.value, ast.Call):
                self.ev(s.value, mod, env)
        elif isinstance(s, ast.Assign):
            v = self.ev(s.value, mod, env)
            for t in s.targets:
                self.assign(t, v, mod, env)
        elif isinstance(s, ast.AnnAssign) and s.value is not None:
            self.assign(s.target, self.ev(s.value, mod, env), mod, env)
        elif isinstance(s, ast.ImportFrom):
            tmp = Module.__new__(Module)
            tmp.name, tmp.is_pkg = mod.name, mod.is_pkg
            base = tmp._abs_module(s.module, s.level)
            m = self.p.module(base)
            for a in s.names:
                if m is not None and a.name != "*":
                    env[a.asname or a.name] = self.lookup(m, a.name)
        elif isinstance(s, ast.Delete):
            for t in s.targets:
                if isinstance(t, ast.Subscript):
                    base = self.ev(t.value, mod, env)
                    key = self.ev(t.slice, mod, env)
                    if isinstance(base, dict) and not is_unknown(key):
                        base.pop(key, None)
        elif isinstance(s, ast.For):
            it = self.ev(s.iter, mod, env)
            if isinstance(it, dict):
                it = list(it)
            if isinstance(it, (list, tuple)):
                for x in it:
                    self.assign(s.target, x, mod, env)
                    r = self.exec_block(s.body, mod, env, where)
                    if isinstance(r, tuple):
                        return r
            else:
                self.unresolved.append(f"{where}: loop over {ast.unparse(s.iter)[:80]} not expanded")
        elif isinstance(s, ast.If):
            t = self.ev(s.test, mod, env)
            if is_unknown(t) or not isinstance(t, (bool, int, str, list, dict, type(None))):
                # Both branches may register options: take both (argparse itself would take one).
                self.exec_block(s.body, mod, env, where)
                self.exec_block(s.orelse, mod, env, where)
            elif t:
                return self.exec_block(s.body, mod, env, where)
            else:
                return self.exec_block(s.orelse, mod, env, where)
        elif isinstance(s, (ast.With, ast.AsyncWith)):
            return self.exec_block(s.body, mod, env, where)
        elif isinstance(s, ast.Try):
            return self.exec_block(s.body, mod, env, where)
        return None

    def record_action(self, node: ast.Call, mod, env):
        args, kwargs, unresolved = [], {}, []
        for a in node.args:
            if isinstance(a, ast.Starred):
                v = self.ev(a.value, mod, env)
                if isinstance(v, (list, tuple)) and all(isinstance(x, str) for x in v):
                    args.extend(v)
                else:
                    unresolved.append(f"option strings *{ast.unparse(a.value)[:60]}")
                continue
            v = self.ev(a, mod, env)
            if isinstance(v, str):
                args.append(v)
            else:
                unresolved.append(f"option string {ast.unparse(a)[:60]}")
        for k in node.keywords:
            v = self.ev(k.value, mod, env)
            if k.arg is None:
                if isinstance(v, dict):
                    kwargs.update(v)
                else:
                    unresolved.append(f"**{ast.unparse(k.value)[:60]}")
            else:
                kwargs[k.arg] = v
        where = f"{mod.name}:{node.lineno}"
        self.actions.append(Action(args, kwargs, where, unresolved))
