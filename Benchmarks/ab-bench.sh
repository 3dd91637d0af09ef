#!/usr/bin/env bash
# Two flowkit builds, interleaved, under the same bench: the way to tell a change from this
# machine's noise (single runs of the same build differ by 30 % and more).
#
#   Benchmarks/ab-bench.sh A-binary B-binary [runs] [-- flowkit bench arguments]
#   Benchmarks/ab-bench.sh /tmp/flowkit-before .build-release/release/flowkit 5 -- --rate 10000 --duration 10
#
# Runs A, B, A, B, … `runs` times each and prints, per build, the median over its runs of the
# ordered and applied p50 and p99 and of the cluster's CPU per ordered event (coordinator and
# nodes), and B ÷ A.
set -euo pipefail
a=$1 b=$2 runs=${3:-5}
shift $(( $# >= 3 ? 3 : $# ))
[ "${1:-}" = "--" ] && shift
arguments=("$@")
[ ${#arguments[@]} -gt 0 ] || arguments=(--rate 10000 --duration 10)
out=$(mktemp -d "${TMPDIR:-/tmp}/flowkit-ab-XXXXXX")
for run in $(seq "$runs"); do
    for side in a b; do
        binary=$a; [ $side = b ] && binary=$b
        "$binary" bench "${arguments[@]}" --no-baseline --quiet --json >"$out/$side-$run.json" 2>/dev/null || true
        echo "ab-bench: run $run of $side done" >&2
    done
done
python3 - "$out" "$runs" <<'PY'
import json, statistics, sys
out, runs = sys.argv[1], int(sys.argv[2])
def figures(side):
    rows = []
    for run in range(1, runs + 1):
        try:
            result = json.load(open(f"{out}/{side}-{run}.json"))
        except Exception:
            continue
        result = result[-1] if isinstance(result, list) else result
        servers = [v["cpuSeconds"] for k, v in result["resources"].items() if k != "bench"]
        events = result["throughput"]["ordered"] * result["config"]["duration"]
        rows.append({
            "ordered p50": result["latency"]["ordered"]["p50"], "ordered p99": result["latency"]["ordered"]["p99"],
            "applied p50": result["latency"]["applied"]["p50"], "applied p99": result["latency"]["applied"]["p99"],
            "cpu µs/event": sum(servers) / max(events, 1) * 1e6,
        })
    return {key: statistics.median(row[key] for row in rows) for key in rows[0]} if rows else {}
a, b = figures("a"), figures("b")
print(f"{'median of ' + str(runs) + ' runs':24}{'A':>12}{'B':>12}{'B ÷ A':>10}")
for key in a:
    print(f"{key:24}{a[key]:12.0f}{b[key]:12.0f}{b[key] / a[key] if a[key] else 0:10.2f}")
print(f"(latencies in µs; JSON in {out})")
PY
