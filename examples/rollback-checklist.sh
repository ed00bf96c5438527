#!/bin/sh
# Rollback checklist: before rolling a model server back (or forward) to match a known-good host,
# compare the two and stop when a high-impact difference remains.
#
#   examples/rollback-checklist.sh GOOD_HOST SUSPECT_HOST
#
# GOOD_HOST and SUSPECT_HOST may be live targets or stored references (gpu7@2026-11-20,
# gpu7@~1). Needs `probe` and `python3` (to read probe's JSON). Exit status: 0 nothing high
# impact differs, 1 high-impact differences (listed), 2 probe failed.
set -eu

if [ $# -ne 2 ]; then
    echo "usage: $0 GOOD_HOST SUSPECT_HOST" >&2
    exit 2
fi
good=$1
suspect=$2
probe=${PROBE:-probe}
report=$(mktemp)
trap 'rm -f "$report"' EXIT

# probe diff: 0 same, 1 different, 2 error (like diff(1)).
status=0
"$probe" diff "$good" "$suspect" --format json > "$report" || status=$?
if [ "$status" -ge 2 ]; then
    echo "rollback-checklist: probe diff failed (exit $status)" >&2
    exit 2
fi
if [ "$status" -eq 0 ]; then
    echo "ok: $suspect matches $good; nothing meaningful differs"
    exit 0
fi

# Changes are ranked by likely impact; stop on any "high".
python3 - "$report" "$good" "$suspect" <<'PY'
import json, sys
diff = json.load(open(sys.argv[1]))
good, suspect = sys.argv[2], sys.argv[3]
high = [c for c in diff.get("changes", []) if c.get("impact") == "high"]
other = [c for c in diff.get("changes", []) if c.get("impact") in ("medium", "low")]
def show(c):
    before = c.get("before_written") or c.get("before")
    after = c.get("after_written") or c.get("after")
    return f"  [{c['impact']}] {c['category']}: {c['key']}: {before} -> {after}  ({c.get('explanation', '')})"
for c in other:
    print("note:" + show(c)[1:])
if high:
    print(f"STOP: {len(high)} high-impact difference(s) between {good} and {suspect}:")
    for c in high:
        print(show(c))
    print("Resolve these (or confirm them as intended) before the rollback.")
    sys.exit(1)
print(f"ok: only low/medium-impact differences between {good} and {suspect}")
PY
