#!/usr/bin/env python3
"""The slowest events of a traced bench run, one by one: when they were sent and where they waited.

    flowkit bench --rate 20000 --duration 10 --trace --trace-every 5 --data-dir /tmp/run
    python3 Benchmarks/slow-events.py /tmp/run/trace [--percentile 99]
        [--timehist FILE --monotonic-offset SECONDS]

Reads every process's trace records (`<process>.jsonl`, the bench's own in `bench.jsonl`) and takes
the sampled events at or above the percentile of ordered latency. Prints how they bunch in time
(10 ms bins, and their phase in the second), and each hop's mean over them against its mean over
all events: slow events that are slow at every hop at once point at the machine, not a process.

With `--timehist` (the output of `perf sched timehist` over part of the run, recorded with
`perf sched record -k monotonic`) and the offset of the wall clock from CLOCK_MONOTONIC at the
time (`python3 -c 'import time; print(time.clock_gettime(time.CLOCK_REALTIME) -
time.clock_gettime(time.CLOCK_MONOTONIC))'`), it also says which threads other than the I/O loops
ran for 0.3 ms or more while each slow event was under way, and how often a thread waited 0.5 ms
or more for a core while the other core sat idle.
"""
import argparse
import bisect
import collections
import glob
import json
import os

HOPS = [
    ("bench: intended → sent", "bench.intended", "bench.sent"),
    ("bench → node", "bench.sent", "node.received"),
    ("node → coordinator", "node.submitted", "coordinator.received"),
    ("ordered → commit starts", "coordinator.ordered", "coordinator.commitStarted"),
    ("commit", "coordinator.commitStarted", "coordinator.committed"),
    ("coordinator → node", "coordinator.acknowledged", "node.acknowledged"),
    ("EMITTED queued → engine", "node.answered", "node.answerSent"),
    ("node → bench", "node.answerSent", "bench.answered"),
]


def load(directory):
    records = collections.defaultdict(lambda: collections.defaultdict(list))
    for path in glob.glob(os.path.join(directory, "*.jsonl")):
        with open(path) as file:
            for line in file:
                record = json.loads(line)
                records[record["seq"]][record["stage"]].append(record["us"])
    events = []
    for seq, stages in records.items():
        if stages.get("bench.intended") and stages.get("bench.answered"):
            intended = stages["bench.intended"][0]
            events.append((intended, stages["bench.answered"][0] - intended, seq))
    events.sort()
    return records, events


def hop_means(records, events):
    sums, counts = collections.Counter(), collections.Counter()
    for _, _, seq in events:
        stages = records[seq]
        for name, start, end in HOPS:
            if stages.get(start) and stages.get(end):
                sums[name] += min(stages[end]) - min(stages[start])
                counts[name] += 1
    return {name: sums[name] / counts[name] for name, _, _ in HOPS if counts[name]}


def read_timehist(path):
    runs = []
    with open(path) as file:
        for line in file.readlines()[3:]:
            fields = line.split()
            try:
                end, cpu, name = float(fields[0]), int(fields[1].strip("[]")), fields[2]
                delay, run = float(fields[-2]) / 1000, float(fields[-1]) / 1000
            except (ValueError, IndexError):
                continue
            runs.append((end, cpu, name, delay, run))
    return runs


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("directory")
    parser.add_argument("--percentile", type=float, default=99)
    parser.add_argument("--timehist")
    parser.add_argument("--monotonic-offset", type=float, default=0)
    arguments = parser.parse_args()

    records, events = load(arguments.directory)
    if not events:
        raise SystemExit(f"no traced events with the bench's side in {arguments.directory} (run the bench with --trace and --data-dir)")
    latencies = sorted(event[1] for event in events)
    threshold = latencies[min(len(latencies) - 1, int(len(latencies) * arguments.percentile / 100))]
    slow = [event for event in events if event[1] >= threshold]
    start = events[0][0]
    print(f"{len(events)} sampled events; p50 {latencies[len(latencies) // 2]} µs, p{arguments.percentile:g} {threshold} µs: {len(slow)} events at or above it")
    bins = collections.Counter((event[0] - start) // 10_000 for event in slow)
    print(f"they fall in {len(bins)} of {(events[-1][0] - start) // 10_000 + 1} bins of 10 ms; the fullest: "
          + ", ".join(f"{bin / 100:.2f} s ({count})" for bin, count in bins.most_common(8)))
    phases = collections.Counter(((event[0] - start) % 1_000_000) // 50_000 for event in slow)
    print("by phase in the second (20 slots of 50 ms): " + " ".join(str(phases.get(slot, 0)) for slot in range(20)))
    everyone, slowest = hop_means(records, events), hop_means(records, slow)
    print(f"{'hop':<28}{'mean, all':>12}{'mean, slow':>12}")
    for name, _, _ in HOPS:
        if name in everyone:
            print(f"{name:<28}{everyone[name]:>10.0f}µs{slowest.get(name, 0):>10.0f}µs")

    if not arguments.timehist:
        return
    runs = read_timehist(arguments.timehist)
    ends = [run[0] for run in runs]
    low, high = ends[0], ends[-1]
    offset = arguments.monotonic_offset
    covered = [event for event in slow if low <= event[0] / 1e6 - offset and (event[0] + event[1]) / 1e6 - offset <= high]
    alongside = collections.Counter()
    for intended, latency, _ in covered:
        begin, finish = intended / 1e6 - offset, (intended + latency) / 1e6 - offset
        index, seen = bisect.bisect_left(ends, begin), set()
        while index < len(runs) and runs[index][0] <= finish + 0.0005:
            _, _, name, _, run = runs[index]
            if run >= 0.0003 and "-io[" not in name:
                seen.add(name.split("[")[0] + (" of " + name.split("/")[-1].rstrip("]") if "/" in name else ""))
            index += 1
        alongside.update(seen or {"(nothing else for 0.3 ms)"})
    print(f"\n{len(covered)} slow events under way during the scheduler trace; threads that ran 0.3 ms or more meanwhile (pid after 'of'):")
    for name, count in alongside.most_common(12):
        print(f"  {count:>5}  {name}")
    idle = {0: [], 1: []}
    for end, cpu, name, _, run in runs:
        if name == "<idle>" and cpu in idle:
            idle[cpu].append((end - run, end))
    waits = [(cpu, end - run - delay, end - run, name) for end, cpu, name, delay, run in runs if delay >= 0.0005 and name != "<idle>"]
    idle_beside = 0
    for cpu, begin, finish, _ in waits:
        other = idle.get(1 - cpu, [])
        overlap = sum(min(e, finish) - max(s, begin) for s, e in other if s < finish and e > begin)
        idle_beside += overlap >= 0.0002
    print(f"{len(waits)} waits of 0.5 ms or more for a core ({sum(w[2] - w[1] for w in waits) * 1000:.0f} ms in all); "
          f"in {idle_beside} of them the other core sat idle for 0.2 ms or more of the wait")


if __name__ == "__main__":
    main()
