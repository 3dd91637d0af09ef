#!/usr/bin/env bash
# Compares the Swift ZeroMQ module with raw libzmq, measured the same way in the same run.
#
# Builds zmq-c-baseline (C) and zmq-perf (Swift) in release, then runs every measurement
# REPS times, interleaved (C, then each Swift variant, then C again, ...), so machine
# noise hits all variants alike, and prints the medians with Swift/C ratios.
#
# Swift variants are MODE:PEER, the measuring side (subscriber / requester) and the child
# (publisher / echo server): sync = Socket on one thread; async = IOLoop + AsyncSocket with
# the application task on the cooperative pool (batches via `incoming`); loop = the same
# with the task on the loop thread (withTaskExecutorPreference).
#
#   Benchmarks/zmq-compare.sh                 # defaults below
#   REPS=7 COUNT=1000000 Benchmarks/zmq-compare.sh
#
# Throughput: 64-byte pub/sub over tcp://127.0.0.1, subscriber in this process, XPUB
# publisher in a child process, COUNT messages, timed first-to-last at the subscriber.
# Latency: REQ/REP round trips over tcp://127.0.0.1 with an echo child, 1000 warm-up then
# ROUNDTRIPS timed one by one; median and p99.
set -euo pipefail

cd "$(dirname "$0")"
REPS=${REPS:-5}
COUNT=${COUNT:-2000000}
SIZE=${SIZE:-64}
ROUNDTRIPS=${ROUNDTRIPS:-20000}
VARIANTS=(c sync:sync async:sync loop:sync async:async loop:loop)

echo "building (release)..." >&2
swift build -c release --product zmq-c-baseline >&2
swift build -c release --product zmq-perf >&2
BIN=$(swift build -c release --show-bin-path)

WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

run() {  # run VARIANT thr|lat COUNT
    local variant=$1 kind=$2 count=$3
    if [[ $variant == c ]]; then
        timeout 300 "$BIN/zmq-c-baseline" "$kind" "$count" "$SIZE"
    else
        timeout 300 "$BIN/zmq-perf" "$kind" "${variant%%:*}" "$count" "$SIZE" "${variant##*:}"
    fi
}

field() {  # field NAME < RESULT line
    sed -n "s/.*[[:space:]]$1=\([0-9.]*\).*/\1/p"
}

for rep in $(seq 1 "$REPS"); do
    for variant in "${VARIANTS[@]}"; do
        line=$(run "$variant" thr "$COUNT" | grep '^RESULT')
        echo "rep $rep thr $variant: $line" >&2
        echo "$line" | field msgs_per_sec >>"$WORK/thr-$variant"
        echo "$line" | field cpu_ns_per_msg >>"$WORK/cpu-$variant"
    done
    for variant in "${VARIANTS[@]}"; do
        line=$(run "$variant" lat "$ROUNDTRIPS" | grep '^RESULT')
        echo "rep $rep lat $variant: $line" >&2
        echo "$line" | field median_us >>"$WORK/lat-median-$variant"
        echo "$line" | field p99_us >>"$WORK/lat-p99-$variant"
        echo "$line" | field cpu_us_per_rt >>"$WORK/rtcpu-$variant"
    done
done

median() {
    sort -g "$1" | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

label() {
    case $1 in
        c) echo "C <-> C (raw libzmq)" ;;
        sync:sync) echo "Socket <-> Socket" ;;
        async:sync) echo "AsyncSocket pool <-> Socket" ;;
        loop:sync) echo "AsyncSocket loop <-> Socket" ;;
        async:async) echo "AsyncSocket pool, both" ;;
        loop:loop) echo "AsyncSocket loop, both" ;;
    esac
}

C_THR=$(median "$WORK/thr-c")
C_CPU=$(median "$WORK/cpu-c")
C_LAT=$(median "$WORK/lat-median-c")
C_P99=$(median "$WORK/lat-p99-c")
C_RTCPU=$(median "$WORK/rtcpu-c")

echo
echo "ZeroMQ wrapper vs raw libzmq $(pkg-config --modversion libzmq 2>/dev/null || true), medians of $REPS runs, $(nproc) cores"
echo
echo "pub/sub, $SIZE-byte messages over tcp://127.0.0.1 (cpu = subscriber process CPU time per message)"
printf "%-32s %14s %8s %10s %8s\n" "variant" "msg/s" "Swift/C" "cpu ns" "Swift/C"
for variant in "${VARIANTS[@]}"; do
    awk -v name="$(label "$variant")" -v thr="$(median "$WORK/thr-$variant")" -v cpu="$(median "$WORK/cpu-$variant")" \
        -v cthr="$C_THR" -v ccpu="$C_CPU" 'BEGIN {
        printf "%-32s %14.0f %8.2f %10.0f %8.2f\n", name, thr, thr / cthr, cpu, cpu / ccpu
    }'
done
echo
echo "REQ/REP round trip, $SIZE bytes over tcp://127.0.0.1 (cpu = requester process CPU time per round trip)"
printf "%-32s %10s %8s %10s %8s %10s %8s\n" "variant" "median µs" "Swift/C" "p99 µs" "Swift/C" "cpu µs" "Swift/C"
for variant in "${VARIANTS[@]}"; do
    awk -v name="$(label "$variant")" -v lat="$(median "$WORK/lat-median-$variant")" -v p99="$(median "$WORK/lat-p99-$variant")" \
        -v cpu="$(median "$WORK/rtcpu-$variant")" -v clat="$C_LAT" -v cp99="$C_P99" -v ccpu="$C_RTCPU" 'BEGIN {
        printf "%-32s %10.1f %8.2f %10.1f %8.2f %10.1f %8.2f\n", name, lat, lat / clat, p99, p99 / cp99, cpu, cpu / ccpu
    }'
done
echo
echo "rows: measuring side <-> child (subscriber <-> publisher; requester <-> echo server)"
echo "targets: pub/sub Swift/C >= 0.70 (batch-receive path); round trip Swift/C <= 1.30"
echo "settings: COUNT=$COUNT SIZE=$SIZE ROUNDTRIPS=$ROUNDTRIPS REPS=$REPS"
