#!/usr/bin/env bash
# Builds the libFuzzer target for FlowKit's wire decoders (Fuzz/) and runs it for <seconds>.
#
#   scripts/fuzz-decoders.sh 60            # a minute; the corpus grows in Fuzz/.build/work/corpus
#   FUZZ_JOBS=2 scripts/fuzz-decoders.sh 600
#   FUZZ_CONFIGURATION=release scripts/fuzz-decoders.sh 600
#
# A debug build by default: it builds in half the time of a release one (68 s against ~140 s here,
# from clean, on 2 cores), keeps `assert`s on, and in 25 s ran 652,742 inputs (25,105 a second)
# to the release build's 894,431 (34,401), reaching more coverage points (3,346 against 2,671: less
# is inlined). For long runs the release build's 37 % more inputs a second may be worth its build.
#
# Every run builds from clean (the corpus in Fuzz/.build/work is kept): an incremental rebuild of
# this package after a change in Sources/ lost the coverage instrumentation of the changed modules
# (254 coverage points instead of ~1,800) and did not see files added there. FUZZ_INCREMENTAL=1
# skips the clean, for quick local reruns.
#
# Every decoder a process runs on network bytes (ClientRequest, SubmitMessage, EntriesMessage,
# SyncRequest, Entry, RangeMessage, SnapshotChunkMessage, AckMessage, HelloMessage, …) is fed
# mutated frames with AddressSanitizer on; whatever decodes must survive an encode/decode round
# trip. Exit status: 0 nothing found; 1 a crash, sanitizer report or failed round trip (the input
# is saved in Fuzz/.build/work/artifacts; replay it with the binary and that file); 2 the toolchain
# cannot build a libFuzzer binary here.
set -euo pipefail
seconds="${1:-60}"
source "$(dirname "$0")/swiftpm-env"
cd "$(dirname "$0")/../Fuzz"
work=".build/work"
mkdir -p "$work/corpus" "$work/artifacts"

if [ "${FUZZ_INCREMENTAL:-0}" != 1 ]; then
    # The build products only: the corpus (work), and the dependencies' checkouts, stay.
    rm -rf .build/debug .build/debug.yaml .build/release .build/release.yaml .build/build.db .build/x86_64-unknown-linux-gnu .build/aarch64-unknown-linux-gnu
fi
# Every module gets AddressSanitizer and libFuzzer's coverage instrumentation (what
# -sanitize=fuzzer adds), so coverage inside FlowKitCluster guides the fuzzer; only FuzzDecoders
# links libFuzzer itself (Fuzz/Package.swift). A global --sanitize=fuzzer would link libFuzzer's
# `main` into a package's executables and plugins too, which then fail to link.
configuration="${FUZZ_CONFIGURATION:-debug}"
build=(swift build -c "$configuration" --product FuzzDecoders --sanitize=address
    -Xswiftc -sanitize-coverage=edge,inline-8bit-counters,pc-table,trace-cmp)
echo "==> building the fuzz target ($configuration, AddressSanitizer and libFuzzer coverage; a minute or more)"
if ! "${build[@]}" >"$work/build.log" 2>&1; then
    tail -30 "$work/build.log"
    echo "fuzz-decoders: this toolchain could not build a libFuzzer binary (see $PWD/$work/build.log)" >&2
    exit 2
fi
binary="$("${build[@]}" --show-bin-path)/FuzzDecoders"

echo "==> writing the seed corpus"
FLOWKIT_FUZZ_SEEDS="$work/seeds" "$binary" >/dev/null 2>&1 || true

echo "==> fuzzing for ${seconds} s"
jobs=()
if [ "${FUZZ_JOBS:-1}" -gt 1 ]; then jobs=(-jobs="$FUZZ_JOBS" -workers="$FUZZ_JOBS"); fi
set +e
"$binary" "$work/corpus" "$work/seeds" \
    -max_total_time="$seconds" -max_len=4096 -timeout=10 -rss_limit_mb=2048 "${jobs[@]}" \
    -artifact_prefix="$work/artifacts/" -print_final_stats=1 2>&1 | tee "$work/last-run.log" | grep -E "^#[0-9]+[[:space:]]+(INITED|DONE)|^stat::|ERROR|Fatal|SUMMARY|Test unit written|fatal error"
status=${PIPESTATUS[0]}
set -e
if [ "$status" -ne 0 ]; then
    echo "fuzz-decoders: libFuzzer found a problem (exit $status); input in $PWD/$work/artifacts, log in $PWD/$work/last-run.log" >&2
    exit 1
fi
echo "fuzz-decoders: no crash, sanitizer report or failed round trip in ${seconds} s; corpus $(ls "$work/corpus" | wc -l) inputs"
