#!/usr/bin/env bash
# FlowKit against Redis on this machine, in one run: the closest common twin of FlowKit's design
# (one sequencer that fsyncs before it replies, with group commit, and replicates asynchronously).
#
#   Benchmarks/peers/redis-compare.sh [--duration S] [--flowkit PATH] [--out DIR] [--rates R,R] [--runs N]
#
# Redis 7 from Debian: a primary and 3 replicas on loopback, appendonly yes, appendfsync always,
# each on a port of its own in a temporary directory. Then, one after another on the same two
# cores:
#   1. redis-benchmark, 16 clients, XADD of 100 bytes: Redis's maximum with 16 clients, closed
#      loop (each client waits for its reply: it understates the latency a user would see under
#      coordinated omission, since a stalled reply also delays the next request);
#   2. redis-openloop (Benchmarks/peers/redis-openloop.c, 16 connections): Redis driven open loop
#      at that rate and at 10,000/s, timed from each request's intended send time;
#   3. flowkit bench (a coordinator with a synced log and 3 nodes, open loop, 8 connections) at the
#      same rates.
# CPU per event counts the servers only (the 4 Redis processes; the coordinator and the 3 nodes),
# from /proc; the load generators' own CPU (redis-openloop's rusage, the bench's /proc) is a row of
# its own, since they share the two cores. Prints a table of FlowKit ÷ Redis and writes every run's
# JSON to --out.
#
# With --runs N (N > 1), runs all of that N times, each into DIR/run-1 … run-N, and then prints
# the medians of the runs with each run's FlowKit ÷ Redis (Benchmarks/peers/redis-medians.py):
# a single run on two cores says little about a p99.
#
# Installs redis-server and redis-tools when missing (apt-get; root), without starting Debian's
# default instance, and stops every process it started, on every path.
set -euo pipefail
script=$(realpath "$0")
cd "$(dirname "$0")/../.."

duration=10
flowkit=.build-release/release/flowkit
out=""
rates=""
runs=1
while (($#)); do
    case $1 in
        --duration) duration=$2; shift 2 ;;
        --flowkit) flowkit=$2; shift 2 ;;
        --out) out=$2; shift 2 ;;
        --rates) rates=$2; shift 2 ;;
        --runs) runs=$2; shift 2 ;;
        -h|--help) sed -n '2,27p' "$script"; exit 0 ;;
        *) echo "unknown argument $1 (see --help)" >&2; exit 64 ;;
    esac
done

say() { echo "redis-compare: $*" >&2; }

[[ $runs =~ ^[1-9][0-9]*$ ]] || { echo "--runs takes a whole number of runs, at least 1 (got $runs)" >&2; exit 64; }
if ((runs > 1)); then
    [ -n "$out" ] || out=$(mktemp -d "${TMPDIR:-/tmp}/flowkit-redis-runs-XXXXXX")
    directories=()
    for run in $(seq "$runs"); do
        say "run $run of $runs"
        arguments=(--duration "$duration" --flowkit "$flowkit" --out "$out/run-$run")
        [ -z "$rates" ] || arguments+=(--rates "$rates")
        "$script" "${arguments[@]}" >&2
        directories+=("$out/run-$run")
    done
    exec python3 Benchmarks/peers/redis-medians.py "${directories[@]}"
fi

install_redis() {
    command -v redis-server >/dev/null && command -v redis-benchmark >/dev/null && return
    say "installing redis-server and redis-tools"
    local sudo="" guard=/usr/sbin/policy-rc.d had_guard=0
    [ "$(id -u)" -eq 0 ] || sudo=sudo
    [ -e "$guard" ] && had_guard=1
    # Debian starts a default instance on install unless policy-rc.d says no (exit 101).
    [ $had_guard = 1 ] || { printf '#!/bin/sh\nexit 101\n' | $sudo tee "$guard" >/dev/null; $sudo chmod +x "$guard"; }
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq redis-server redis-tools >/dev/null
    [ $had_guard = 1 ] || $sudo rm -f "$guard"
}

install_redis
if [ ! -x "$flowkit" ]; then
    say "building flowkit (release)"
    scripts/build-release --product flowkit >&2
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/flowkit-redis-XXXXXX")
[ -n "$out" ] || out=$work/results
mkdir -p "$out"
pids=()
cleanup() {
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    for pid in "${pids[@]}"; do
        for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
        kill -9 "$pid" 2>/dev/null || true
    done
    rm -rf "$work/redis-"*
    rmdir "$work" 2>/dev/null || true  # empty when the results went to --out
}
trap cleanup EXIT

cc -O2 -o "$work/redis-openloop" Benchmarks/peers/redis-openloop.c

free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
primary=$(free_port)
start_redis() {  # port [primary port]
    local dir="$work/redis-$1"
    mkdir -p "$dir"
    local arguments=(--port "$1" --bind 127.0.0.1 --dir "$dir" --appendonly yes --appendfsync always --save "" --logfile "$dir/log")
    [ $# -gt 1 ] && arguments+=(--replicaof 127.0.0.1 "$2")
    redis-server "${arguments[@]}" &
    pids+=($!)
}
start_redis "$primary"
for _ in 1 2 3; do start_redis "$(free_port)" "$primary"; done
for _ in $(seq 100); do
    redis-cli -p "$primary" ping >/dev/null 2>&1 && [ "$(redis-cli -p "$primary" info replication | tr -d '\r' | sed -n 's/^connected_slaves://p')" = 3 ] && break
    sleep 0.1
done
[ "$(redis-cli -p "$primary" info replication | tr -d '\r' | sed -n 's/^connected_slaves://p')" = 3 ] || { say "the replicas did not connect"; exit 1; }
say "Redis: primary on $primary with 3 replicas (appendonly yes, appendfsync always)"

cpu_of() {  # the CPU seconds of the given pids, from /proc/<pid>/stat
    local ticks=0 pid
    for pid in "$@"; do ticks=$((ticks + $(awk '{print $14 + $15}' "/proc/$pid/stat"))); done
    awk -v ticks="$ticks" -v hz="$(getconf CLK_TCK)" 'BEGIN { printf "%.3f", ticks / hz }'
}
minus() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", a - b }'; }

value=$(printf 'x%.0s' $(seq 100))
requests=$((duration * 15000))
say "redis-benchmark: 16 clients, $requests XADDs of 100 bytes"
before=$(cpu_of "${pids[@]}")
redis-benchmark -p "$primary" -c 16 -n "$requests" --csv XADD closed '*' f "$value" 2>/dev/null | tail -1 >"$out/redis-benchmark.csv"
after=$(cpu_of "${pids[@]}")
echo "{\"cpuSeconds\": $(minus "$after" "$before"), \"requests\": $requests}" >"$out/redis-benchmark-cpu.json"
max_rate=$(python3 -c "import csv; row = next(csv.reader(open('$out/redis-benchmark.csv'))); print(int(float(row[1]) // 100 * 100))")
[ -n "$rates" ] || rates="$max_rate,10000"
say "Redis's maximum with 16 clients: $max_rate/s; comparing at ${rates//,/, }/s"

IFS=, read -r -a rate_list <<<"$rates"
for rate in "${rate_list[@]}"; do
    say "Redis open loop at $rate/s for $duration s"
    before=$(cpu_of "${pids[@]}")
    # The client's own CPU too, from its rusage: it shares the two cores with the servers.
    client_cpu=$(python3 -c 'import resource, subprocess, sys
with open(sys.argv[1], "w") as out: subprocess.run(sys.argv[2:], stdout=out, check=True)
usage = resource.getrusage(resource.RUSAGE_CHILDREN); print(usage.ru_utime + usage.ru_stime)' \
        "$out/redis-openloop-$rate.json" "$work/redis-openloop" "$primary" "$rate" "$duration" 16 100 "open-$rate")
    after=$(cpu_of "${pids[@]}")
    python3 - "$out/redis-openloop-$rate.json" "$(minus "$after" "$before")" "$client_cpu" <<'EOF'
import json, sys
path, cpu, client = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
run = json.load(open(path)); run["cpuSeconds"] = cpu; run["clientCpuSeconds"] = client
json.dump(run, open(path, "w"))
EOF
done
cleanup
pids=()

for rate in "${rate_list[@]}"; do
    say "flowkit bench at $rate/s for $duration s"
    "$flowkit" bench --rate "$rate" --duration "$duration" --event-size 100 --json >"$out/flowkit-$rate.json" 2>"$out/flowkit-$rate.log" || true
done

python3 - "$out" "$max_rate" "$rates" <<'EOF'
import csv, json, sys
out, max_rate, rates = sys.argv[1], int(sys.argv[2]), [int(r) for r in sys.argv[3].split(",")]
closed = next(csv.reader(open(f"{out}/redis-benchmark.csv")))
closed_cpu = json.load(open(f"{out}/redis-benchmark-cpu.json"))
def ms(us): return f"{us / 1000:.2f} ms"
def flowkit(rate):
    run = json.load(open(f"{out}/flowkit-{rate}.json"))
    run = run[-1] if isinstance(run, list) else run
    servers = [v for k, v in run["resources"].items() if k != "bench"]
    events = run["throughput"]["ordered"] * run["config"]["duration"]
    return run, sum(s["cpuSeconds"] for s in servers) / max(events, 1) * 1e6
def ratio(a, b): return f"{a / b:.2f}×" if b else "—"
rows = [("", "Redis, 4 servers", "FlowKit, coordinator + 3 nodes, synced", "FlowKit ÷ Redis")]
rows.append(("redis-benchmark, 16 clients (closed loop)", f"{float(closed[1]):,.0f}/s, p50 {closed[4]} ms, p99 {closed[6]} ms, "
             f"{closed_cpu['cpuSeconds'] / closed_cpu['requests'] * 1e6:.0f} µs CPU/event", "", ""))
summary = {"redisClosedLoop": {"rps": float(closed[1]), "p50ms": float(closed[4]), "p99ms": float(closed[6]),
                               "cpuMicrosPerEvent": closed_cpu["cpuSeconds"] / closed_cpu["requests"] * 1e6}, "rates": []}
for rate in rates:
    redis = json.load(open(f"{out}/redis-openloop-{rate}.json"))
    run, fk_cpu = flowkit(rate)
    ordered, applied = run["latency"]["ordered"], run["latency"]["applied"]
    redis_cpu = redis["cpuSeconds"] / max(redis["answered"], 1) * 1e6
    label = f"at {rate:,}/s" + (" (Redis's maximum)" if rate == max_rate else "")
    rows.append((f"{label}: p50 to the durable acknowledgement", ms(redis["p50"]), ms(ordered["p50"]), ratio(ordered["p50"], redis["p50"])))
    rows.append((f"{label}: p99", ms(redis["p99"]), f"{ms(ordered['p99'])} ordered, {ms(applied['p99'])} applied on all nodes", ratio(ordered["p99"], redis["p99"])))
    rows.append((f"{label}: CPU per event, servers only", f"{redis_cpu:.0f} µs", f"{fk_cpu:.0f} µs", ratio(fk_cpu, redis_cpu)))
    if "clientCpuSeconds" in redis:
        client = redis["clientCpuSeconds"] / redis["seconds"] * 100
        bench = run["resources"]["bench"]["cpuSeconds"] / run["config"]["duration"] * 100
        rows.append((f"{label}: the load generator's CPU, % of a core", f"{client:.0f} % (redis-openloop)", f"{bench:.0f} % (flowkit bench)", ratio(bench, client)))
    rows.append((f"{label}: throughput", f"{redis['achievedPerSecond']:,.0f}/s", f"{run['throughput']['ordered']:,.0f}/s ordered, end check {'passed' if run['passed'] else 'FAILED'}", ""))
    summary["rates"].append({"rate": rate, "redis": redis, "redisCpuMicrosPerEvent": redis_cpu, "flowkitOrdered": ordered,
                             "flowkitApplied": applied, "flowkitCpuMicrosPerEvent": fk_cpu, "flowkitPassed": run["passed"]})
summary["maximum"] = max_rate
json.dump(summary, open(f"{out}/summary.json", "w"), indent=1)
widths = [max(len(r[i]) for r in rows) for i in range(4)]
for index, row in enumerate(rows):
    print("| " + " | ".join(cell.ljust(widths[i]) for i, cell in enumerate(row)) + " |")
    if index == 0: print("| " + " | ".join("-" * widths[i] for i in range(4)) + " |")
print(f"\nRedis open loop: Benchmarks/peers/redis-openloop.c, 16 connections; FlowKit: flowkit bench, 8 connections, 100 B events over 1,000 instances."
      f"\nJSON of every run in {out}")
EOF
