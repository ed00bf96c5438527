#!/usr/bin/env python3
"""Splits the samples of `perf script --no-inline -F comm,tid,time,ip,sym` (stdin) of a
probe run by phase: each sample goes to the first phase below whose code is on its stack.
Used for docs/BENCHMARKS.md (issue 35, the client split; the peers bench's PROBE_BENCH_PERF)."""

import collections
import sys

order = [
 ("redaction", ["probe_collect::redact"]),
 ("store writes (probe-store: JSON, zstd, SQLite)", ["probe_store::"]),
 ("analysis + drift/verdict (probe-diff, probe-launch)", ["probe_diff::", "probe_launch::", "record_for"]),
 ("parsing the collection (probe-collect)", ["probe_collect::"]),
 ("transport (russh, crypto, probe-transport)", ["russh", "probe_transport::", "curve25519", "chacha", "aes", "sha2", "ssh_key", "ssh_encoding", "poly1305", "ed25519"]),
 ("CLI (inventory, settings, rendering)", ["probe_cli::"]),
]
counts = collections.Counter(); total = 0
frames = []
def flush():
    global total
    if not frames: return
    total += 1
    text = "\n".join(frames)
    for name, keys in order:
        if any(k in text for k in keys):
            counts[name] += 1; break
    else:
        counts["other (runtime, allocator, process start, kernel)"] += 1
for line in sys.stdin:
    if not line.strip():
        flush(); frames.clear(); continue
    if line.startswith("probe ") or line[0] not in " \t":
        flush(); frames.clear(); continue
    frames.append(line)
flush()
for k, v in counts.most_common():
    print(f"{v*100/total:5.1f}%  {v:4d}  {k}")
print("samples", total)
