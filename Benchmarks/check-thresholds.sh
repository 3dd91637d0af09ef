#!/usr/bin/env bash
# Checks a benchmark run against the committed Thresholds/, e.g.
#
#     Benchmarks/check-thresholds.sh --target FlowStoreBenchmarks
#
# `swift package benchmark thresholds update` writes each benchmark's file with the spaces of its
# name turned into underscores, but `thresholds check` (ordo-one/benchmark 1.x) looks the file up
# by the name as written, finds none and fails. This checks against a copy of Thresholds/ under
# the written names. (Benchmark names here use no underscores and no slashes, so the mapping back
# is exact.)
set -euo pipefail
cd "$(dirname "$0")"
copy=$(mktemp -d)
trap 'rm -rf "$copy"' EXIT
for file in Thresholds/*.p90.json; do
    name=$(basename "$file")
    cp "$file" "$copy/${name//_/ }"
done
swift package benchmark thresholds check --path "$copy" "$@"
