#!/usr/bin/env python3
"""Read an engine's real argument parser out of its PyPI wheel, without importing it.

Usage:
  scripts/catalog-from-wheel.py ENGINE VERSION [--out FILE] [--compare CATALOG.toml] [--wheel FILE.whl]

ENGINE is `sglang` or `vllm`. The wheel is fetched with
`pip download --no-deps --only-binary=:all: ENGINE==VERSION` into a temporary directory (or taken
from --wheel), its Python sources are parsed with `ast` and the code that builds the parser is
interpreted statically (SGLang: `ServerArgs.add_cli_args` in sglang/srt/server_args.py, with the
declarative `A[T, Arg(...)]` fields of sglang/srt/arg_groups in newer versions; vLLM:
`make_arg_parser` as imported by vllm/entrypoints/cli/serve.py, i.e. FrontendArgs and
EngineArgs.add_cli_args with `get_kwargs(XConfig)` resolved from the config dataclasses).

Output: `[[option]]` tables in the shape of configs/engines/<engine>.toml (options only), with a
header naming the engine, version, wheel file and its sha256, and the list of what could not be
resolved statically. --compare prints what differs from an existing catalog.

Only the Python 3.11 standard library and pip are needed.
"""
from __future__ import annotations

import argparse
import hashlib
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from catalog_from_wheel import catalog, engines  # noqa: E402
from catalog_from_wheel.static import Project  # noqa: E402

ENGINES = {"sglang": engines.read_sglang, "vllm": engines.read_vllm}


def download(engine, version, dest):
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--quiet",
           "--disable-pip-version-check", "-d", str(dest), f"{engine}=={version}"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"pip download {engine}=={version} failed:\n{r.stderr.strip()[-2000:]}")
    wheels = sorted(Path(dest).glob("*.whl"))
    if not wheels:
        raise SystemExit(f"pip download {engine}=={version} produced no wheel")
    return wheels[0]


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("engine", choices=sorted(ENGINES))
    ap.add_argument("version")
    ap.add_argument("--out", help="write the TOML here (default: stdout unless --compare is given)")
    ap.add_argument("--compare", metavar="CATALOG", help="compare with this catalog, e.g. configs/engines/vllm.toml")
    ap.add_argument("--wheel", help="use this wheel file instead of downloading one")
    args = ap.parse_args(argv)

    rules = catalog.load_category_rules(HERE / "gen-catalog.py")
    categorize = catalog.categorizer(rules)
    with tempfile.TemporaryDirectory(prefix="catalog-from-wheel-") as tmp:
        wheel = Path(args.wheel) if args.wheel else download(args.engine, args.version, tmp)
        digest = sha256(wheel)
        project = Project(str(wheel))
        options, notes, info = ENGINES[args.engine](project, categorize)
    text = catalog.render(args.engine, args.version, wheel.name, digest, info, options, notes)
    if args.out:
        Path(args.out).write_text(text)
        print(f"{args.engine} {args.version}: {len(options)} options, {len(notes)} unresolved notes -> {args.out}",
              file=sys.stderr)
    elif not args.compare:
        sys.stdout.write(text)
    if args.compare:
        r = catalog.compare(options, Path(args.compare), args.version)
        catalog.print_compare(r, args.engine, args.version, args.compare, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
