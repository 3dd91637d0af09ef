#!/usr/bin/env bash
# A cluster across a real network boundary (DESIGN.md section 9): the coordinator and two nodes
# each in a Linux network namespace of their own, joined by veth pairs to a bridge in a fourth
# namespace, on 10.77.0.0/24:
#
#   fkit<pid>-c   coordinator  10.77.0.1   (submit 7400, publish 7401, sync 7402)
#   fkit<pid>-n1  node 1       10.77.0.11  (client 7410)
#   fkit<pid>-n2  node 2       10.77.0.12  (client 7410)
#   fkit<pid>-br  the bridge br0 joining them
#
# Clients emit through each node from the other node's namespace (across the bridge), then every
# node must hold the same state and `flowkit status` must report the cluster healthy. With tc's
# netem available, a second round runs with delay and loss on node 2's link.
#
# Usage: scripts/netns-cluster.sh [path/to/flowkit]      (root, iproute2)
# Exit:  0 converged; 1 a check failed; 77 network namespaces cannot be used here (skip).
#
# Cleanup: an EXIT trap stops the processes it started (by pid) and deletes its namespaces, which
# takes their veths and the bridge with them. Every process runs under `setpriv --pdeathsig KILL`,
# so it dies with this script even on kill -9; namespaces left by a run killed that way (their
# name carries its pid) are deleted by the next run once that pid is gone.
set -euo pipefail

FLOWKIT=${1:-"$(cd "$(dirname "$0")/.." && pwd)/.build/debug/flowkit"}
TAG="fkit$$"
WORK=$(mktemp -d "${TMPDIR:-/tmp}/flowkit-netns-XXXXXX")
PIDS=()
NAMESPACES=()
LINKS=()

say() { printf 'netns: %s\n' "$*"; }

cleanup() {
    local status=$?
    set +e
    for pid in "${PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null; done
    for _ in $(seq 50); do
        local running=0
        for pid in "${PIDS[@]}"; do kill -0 "$pid" 2>/dev/null && running=1; done
        [ "$running" = 0 ] && break
        sleep 0.1
    done
    for pid in "${PIDS[@]}"; do kill -KILL "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; done
    for ns in "${NAMESPACES[@]}"; do ip netns del "$ns" 2>/dev/null; done
    # A veth not yet moved into a namespace would be left in this one.
    for link in "${LINKS[@]}"; do ip link del "$link" 2>/dev/null; done
    local left
    left=$(ip netns list | grep -c "^$TAG-" || true)
    if [ "$left" != 0 ]; then say "cleanup: $left namespaces of $TAG could not be deleted"; status=1; fi
    if [ "$status" = 0 ]; then
        rm -rf "$WORK"
    elif [ "$status" != 77 ]; then
        for log in "$WORK"/*.err; do [ -f "$log" ] && { echo "----- $(basename "$log")"; tail -n 15 "$log"; }; done
        say "logs kept in $WORK"
    fi
    say "cleaned up (namespaces of $TAG deleted, processes stopped)"
    exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

fail() { say "FAIL: $*"; exit 1; }
skip() { say "SKIP: $*"; exit 77; }

# ----- Can this machine do it?
[ "$(id -u)" = 0 ] || skip "network namespaces need root (uid $(id -u))"
command -v ip >/dev/null || skip "no 'ip' command (install iproute2)"
command -v setpriv >/dev/null || skip "no 'setpriv' (util-linux)"
[ -x "$FLOWKIT" ] || fail "no flowkit binary at $FLOWKIT"

# Namespaces of earlier runs that were killed before they could clean up.
for ns in $(ip netns list | awk '{print $1}' | grep -E '^fkit[0-9]+-(c|n1|n2|br)$' || true); do
    owner=${ns#fkit}; owner=${owner%%-*}
    if ! kill -0 "$owner" 2>/dev/null; then ip netns del "$ns" 2>/dev/null && say "deleted $ns, left by run $owner"; fi
done

ip netns add "$TAG-br" 2>"$WORK/probe.err" || skip "'ip netns add' is not permitted here: $(cat "$WORK/probe.err")"
NAMESPACES+=("$TAG-br")
ip -n "$TAG-br" link add br0 type bridge || skip "no bridge support in this kernel"
ip -n "$TAG-br" link set br0 up

# A namespace for `role` with address `address`, its veth's other end on the bridge.
add_host() {
    local role=$1 address=$2 ns="$TAG-$1" link="$TAG$1"
    ip netns add "$ns"
    NAMESPACES+=("$ns")
    LINKS+=("$link" "${link}b")
    ip link add "$link" type veth peer name "${link}b"
    ip link set "$link" netns "$ns"
    ip link set "${link}b" netns "$TAG-br"
    ip -n "$ns" link set "$link" name eth0
    ip -n "$TAG-br" link set "${link}b" master br0 up
    ip -n "$ns" addr add "$address/24" dev eth0
    ip -n "$ns" link set eth0 up
    ip -n "$ns" link set lo up
}
add_host c 10.77.0.1
add_host n1 10.77.0.11
add_host n2 10.77.0.12
say "namespaces $TAG-{c,n1,n2} on bridge $TAG-br: coordinator 10.77.0.1, nodes 10.77.0.11 and 10.77.0.12"

# `flowkit <arguments>` in namespace `ns`, in the background, dying with this script.
start() {
    local ns=$1 name=$2
    shift 2
    ip netns exec "$ns" setpriv --pdeathsig KILL -- "$FLOWKIT" "$@" >"$WORK/$name.out" 2>"$WORK/$name.err" &
    PIDS+=($!)
    local pid=$!
    for _ in $(seq 200); do
        grep -q '^READY ' "$WORK/$name.out" 2>/dev/null && return 0
        kill -0 "$pid" 2>/dev/null || fail "$name exited before it was ready"
        sleep 0.1
    done
    fail "$name printed no READY line within 20 s"
}
# `flowkit <arguments>` in namespace `ns`, to completion.
run() {
    local ns=$1
    shift
    ip netns exec "$ns" setpriv --pdeathsig KILL -- "$FLOWKIT" "$@"
}

COORDINATOR=tcp://10.77.0.1:7400
start "$TAG-c" coordinator coordinator --submit "$COORDINATOR" --publish tcp://10.77.0.1:7401 --sync tcp://10.77.0.1:7402 \
    --data-dir "$WORK/coordinator-data" --log-level info
start "$TAG-n1" node-1 node --id 1 --coordinator "$COORDINATOR" --client tcp://10.77.0.11:7410 --log-level info
start "$TAG-n2" node-2 node --id 2 --coordinator "$COORDINATOR" --client tcp://10.77.0.12:7410 --log-level info
say "coordinator and nodes ready"

NODE1=tcp://10.77.0.11:7410
NODE2=tcp://10.77.0.12:7410
EXPECTED=0

# `rounds` increments through each node, each sent from the other node's namespace; prints the
# last seq.
emit_round() {
    local rounds=$1 out seq=0
    for _ in $(seq "$rounds"); do
        out=$(run "$TAG-n2" emit counter/net '{"increment":{}}' --node "$NODE1" --json --timeout 20) || fail "emit through node 1: $out"
        out=$(run "$TAG-n1" emit counter/net '{"increment":{}}' --node "$NODE2" --wait applied --json --timeout 20) || fail "emit through node 2: $out"
        seq=$(sed -E 's/.*"seq":([0-9]+).*/\1/' <<<"$out")
    done
    EXPECTED=$((EXPECTED + 2 * rounds))
    LAST_SEQ=$seq
}

# Every node holds counter/net = EXPECTED with the same digest, and status reports the cluster
# healthy (it may take a report interval or two).
check_converged() {
    local label=$1 digests=() out
    for pair in "n1 $NODE1" "n2 $NODE2"; do
        set -- $pair
        out=$(run "$TAG-$1" state counter/net --node "$2" --min-seq "$LAST_SEQ" --json --timeout 20) || fail "$label: state at $2: $out"
        grep -q "\"state\":{\"count\":$EXPECTED}" <<<"$out" || fail "$label: $2 holds $out, expected count $EXPECTED"
        digests+=("$(sed -E 's/.*"digest":"([0-9a-f]+)".*/\1/' <<<"$out")")
    done
    [ "${digests[0]}" = "${digests[1]}" ] || fail "$label: digests differ: ${digests[*]}"
    for _ in $(seq 20); do
        # Healthy (exit 0): both nodes alive, at the head, with one digest of the head.
        if out=$(run "$TAG-c" status --coordinator "$COORDINATOR" --expect-nodes 2 2>&1); then
            say "$label: converged at count $EXPECTED, digest ${digests[0]}"
            printf '%s\n' "$out" | sed 's/^/netns:   /'
            return 0
        fi
        sleep 0.5
    done
    fail "$label: flowkit status never reported the cluster healthy: $out"
}

emit_round 5
check_converged "across the bridge"

if ip netns exec "$TAG-n2" tc qdisc add dev eth0 root netem delay 20ms 5ms loss 5% 2>"$WORK/netem.err"; then
    say "netem on node 2's link: 20 ms ± 5 ms delay, 5% loss"
    emit_round 5
    check_converged "with delay and loss"
else
    say "tc netem not available here ($(head -c 200 "$WORK/netem.err")); the delay/loss round is skipped"
fi
say "PASS"
