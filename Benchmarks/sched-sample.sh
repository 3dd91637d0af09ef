#!/bin/bash
# Where threads wait for a core: each thread's time on a CPU, time runnable but waiting on a run
# queue, slices run, and voluntary/involuntary switches, over a window, for every process whose
# command line matches a pattern (from /proc/<pid>/task/<tid>/schedstat and status).
#
#   Benchmarks/sched-sample.sh 4 'flowkit (bench|node|coord)'    # during a `flowkit bench` run
#   Benchmarks/sched-sample.sh 4 cluster-shape                    # during Benchmarks/peers/cluster-shape.c
#
# Columns: run% and wait% of one core; slices/s; µs waited per slice (the mean delay between
# becoming runnable and running); switches/s. Threads under 1 % of a core are left out.
set -euo pipefail
if [ $# -lt 2 ]; then echo "usage: $0 SECONDS PATTERN..." >&2; exit 64; fi
seconds=$1; shift
threads=()
for pattern in "$@"; do
    for pid in $(pgrep -f "$pattern" || true); do
        [ "$pid" = "$$" ] && continue
        for task in /proc/"$pid"/task/*; do threads+=("$task"); done
    done
done
if [ ${#threads[@]} -eq 0 ]; then echo "$0: no process matches $*" >&2; exit 1; fi
snapshot() {
    for task in "${threads[@]}"; do
        [ -r "$task/schedstat" ] || continue
        echo "$task $(cat "$task/comm" | tr ' ' '_') $(cat "$task/schedstat") $(awk '/^(non)?voluntary_ctxt_switches/ {printf "%s ", $2}' "$task/status")"
    done 2>/dev/null
}
before=$(snapshot); sleep "$seconds"; after=$(snapshot)
python3 - "$seconds" <(echo "$before") <(echo "$after") <<'PY'
import sys
seconds = float(sys.argv[1])
def load(path):
    rows = {}
    for line in open(path):
        p = line.split()
        if len(p) >= 7: rows[p[0]] = (p[1], *map(int, p[2:7]))
    return rows
before, after = load(sys.argv[2]), load(sys.argv[3])
print(f"{'thread':22} {'run%':>6} {'wait%':>6} {'slices/s':>9} {'µs/slice':>9} {'vol/s':>7} {'invol/s':>7}")
for task, b in after.items():
    a = before.get(task)
    if not a: continue
    run, wait = (b[1] - a[1]) / 1e6, (b[2] - a[2]) / 1e6   # ms
    slices, voluntary, involuntary = b[3] - a[3], b[4] - a[4], b[5] - a[5]
    if run < seconds * 10: continue
    print(f"{b[0]:22} {run / seconds / 10:6.1f} {wait / seconds / 10:6.1f} {slices / seconds:9.0f} "
          f"{wait * 1000 / max(slices, 1):9.0f} {voluntary / seconds:7.0f} {involuntary / seconds:7.0f}")
PY
