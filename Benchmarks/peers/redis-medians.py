#!/usr/bin/env python3
"""Medians of several runs of redis-compare.sh, with each run's FlowKit ÷ Redis.

    Benchmarks/peers/redis-medians.py RUN_DIR [RUN_DIR ...]

Each RUN_DIR is one run's --out directory (its summary.json). One run on this 2-core machine
says little: Redis's maximum and both sides' p99 move by a third between runs. So the table shows,
per figure, the median of FlowKit's values, the median of Redis's, and the median of the runs'
own ratios (each run's FlowKit and Redis measured back to back on the same machine state), with
every run's ratio after it. "At Redis's maximum" pools the runs' maxima, which differ; the rates
they were measured at are listed. Writes medians.json next to the run directories.
"""
import json
import os
import statistics
import sys


def load(directory):
    path = os.path.join(directory, "summary.json")
    try:
        with open(path) as file:
            return json.load(file)
    except (OSError, ValueError) as error:
        sys.exit(f"redis-medians: cannot read {path}: {error}")


def maximum(summary):
    """The rate redis-compare.sh took for Redis's maximum (written since; computed for older runs)."""
    return summary.get("maximum", int(summary["redisClosedLoop"]["rps"] // 100 * 100))


def groups(summaries):
    """Each run's rows under one key: "maximum" for Redis's maximum, else the rate itself."""
    grouped = {}
    for summary in summaries:
        for row in summary["rates"]:
            key = "maximum" if row["rate"] == maximum(summary) else row["rate"]
            grouped.setdefault(key, []).append(row)
    return grouped


FIGURES = [  # label, FlowKit's value, Redis's value, how to print one value
    ("p50 to the durable acknowledgement", lambda r: r["flowkitOrdered"]["p50"], lambda r: r["redis"]["p50"], lambda v: f"{v / 1000:.2f} ms"),
    ("p99 (FlowKit: ordered)", lambda r: r["flowkitOrdered"]["p99"], lambda r: r["redis"]["p99"], lambda v: f"{v / 1000:.2f} ms"),
    ("FlowKit's p99 applied on all nodes", lambda r: r["flowkitApplied"]["p99"], None, lambda v: f"{v / 1000:.2f} ms"),
    ("CPU per event, servers only", lambda r: r["flowkitCpuMicrosPerEvent"], lambda r: r["redisCpuMicrosPerEvent"], lambda v: f"{v:.0f} µs"),
]


def table(summaries):
    rows = [("", "Redis, median", "FlowKit, median", "FlowKit ÷ Redis: median (each run)")]
    result = {"runs": len(summaries), "rates": []}
    grouped = groups(summaries)
    for key in sorted(grouped, key=lambda k: (k != "maximum", k if k != "maximum" else 0)):
        runs = grouped[key]
        rates = sorted(r["rate"] for r in runs)
        if key == "maximum":
            label = f"at Redis's maximum ({rates[0]:,}–{rates[-1]:,}/s)" if rates[0] != rates[-1] else f"at Redis's maximum ({rates[0]:,}/s)"
        else:
            label = f"at {key:,}/s"
        entry = {"rate": key, "rates": rates, "figures": {}}
        for name, flowkit, redis, show in FIGURES:
            ours = [flowkit(r) for r in runs]
            cells = [f"{label}: {name}", "", show(statistics.median(ours)), ""]
            figure = {"flowkit": statistics.median(ours), "flowkitRuns": ours}
            if redis is not None:
                theirs = [redis(r) for r in runs]
                ratios = [a / b for a, b in zip(ours, theirs) if b]
                cells[1] = show(statistics.median(theirs))
                if ratios:
                    cells[3] = f"{statistics.median(ratios):.2f}× ({', '.join(f'{x:.2f}' for x in ratios)})"
                figure.update(redis=statistics.median(theirs), redisRuns=theirs, ratio=statistics.median(ratios) if ratios else None, ratios=ratios)
            rows.append(tuple(cells))
            entry["figures"][name] = figure
        passed = sum(1 for r in runs if r["flowkitPassed"])
        rows.append((f"{label}: FlowKit's end check", "", f"passed in {passed} of {len(runs)} runs", ""))
        entry["endCheckPassed"] = passed
        result["rates"].append(entry)
    return rows, result


def main(arguments):
    if not arguments or arguments[0] in ("-h", "--help"):
        print(__doc__.strip())
        return 0 if arguments else 64
    summaries = [load(directory) for directory in arguments]
    rows, result = table(summaries)
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    print(f"Medians of {len(summaries)} runs of Benchmarks/peers/redis-compare.sh")
    for index, row in enumerate(rows):
        print("| " + " | ".join(cell.ljust(widths[i]) for i, cell in enumerate(row)) + " |")
        if index == 0:
            print("| " + " | ".join("-" * widths[i] for i in range(4)) + " |")
    out = os.path.join(os.path.dirname(os.path.abspath(arguments[0])), "medians.json")
    with open(out, "w") as file:
        json.dump(result, file, indent=1)
    print(f"\nEvery run's tables and JSON: {', '.join(arguments)}; these medians: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
