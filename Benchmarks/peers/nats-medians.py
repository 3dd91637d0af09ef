#!/usr/bin/env python3
"""Medians of several runs of nats-compare.sh, with the median of each run's own ratios.

    Benchmarks/peers/nats-medians.py RUN_DIR [RUN_DIR ...]

Each RUN_DIR is one run's --out directory (its summary.json). One run on this 2-core machine says
little about a p99. So the table shows, per rate and figure, the median of NATS's values, of
FlowKit's with 3 coordinators and with 1, and the median of the runs' own ratios (each run's
sides measured back to back on the same machine state) with every run's ratio after it; then how
many runs each side's end check held in. A run whose side failed its check still counts in the
latencies (the check is shown beside them). Writes medians.json next to the run directories.
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
        print(f"nats-medians: skipping {directory}: cannot read {path}: {error}", file=sys.stderr)
        return None


SIDES = [("nats", "NATS"), ("flowkit3", "FlowKit 3c"), ("flowkit1", "FlowKit 1c")]
RATIOS = [("flowkit3OverNats", "FlowKit 3c ÷ NATS"), ("flowkit3Over1", "FlowKit 3c ÷ 1c")]


def median_of(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def ms(value):
    return f"{value:.2f} ms" if value is not None else "—"


def table(summaries):
    header = ("", "NATS, median", "FlowKit 3c, median", "FlowKit 1c, median")
    rows, ratio_rows = [header], [("", "median (each run)")]
    result = {"runs": len(summaries), "rates": []}
    grouped = {}
    for summary in summaries:
        for row in summary["rates"]:
            grouped.setdefault(row["rate"], []).append(row)
    for rate in sorted(grouped):
        runs = grouped[rate]
        label = f"at {rate:,}/s"
        entry = {"rate": rate, "runs": len(runs), "figures": {}, "ratios": {}, "endChecksHeld": {}}
        for figure in ("p50Ms", "p99Ms"):
            cells = [f"{label}: {figure[:3]}"]
            for key, _ in SIDES:
                values = [r[key].get(figure) for r in runs]
                entry["figures"].setdefault(key, {})[figure] = {"median": median_of(values), "runs": values}
                cells.append(ms(median_of(values)))
            rows.append(tuple(cells))
        cells = [f"{label}: end check held"]
        for key, _ in SIDES:
            held = sum(1 for r in runs if r[key].get("passed"))
            entry["endChecksHeld"][key] = held
            cells.append(f"{held} of {len(runs)} runs")
        rows.append(tuple(cells))
        for key, name in RATIOS:
            for figure in ("p50", "p99"):
                values = [r[key][figure] for r in runs if r.get(key)]
                entry["ratios"].setdefault(key, {})[figure] = {"median": median_of(values), "runs": values}
                shown = f"{median_of(values):.2f}× ({', '.join(f'{v:.2f}' for v in values)})" if values else "—"
                ratio_rows.append((f"{label}: {name}, {figure}", shown))
        result["rates"].append(entry)
    return rows, ratio_rows, result


def show(rows):
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for index, row in enumerate(rows):
        print("| " + " | ".join(cell.ljust(widths[i]) for i, cell in enumerate(row)) + " |")
        if index == 0:
            print("| " + " | ".join("-" * w for w in widths) + " |")


def main(arguments):
    if not arguments or arguments[0] in ("-h", "--help"):
        print(__doc__.strip())
        return 0 if arguments else 64
    loaded = [(directory, load(directory)) for directory in arguments]
    directories = [directory for directory, summary in loaded if summary is not None]
    summaries = [summary for _, summary in loaded if summary is not None]
    if not summaries:
        print("nats-medians: no run left a summary.json", file=sys.stderr)
        return 1
    rows, ratio_rows, result = table(summaries)
    print(f"Medians of {len(summaries)} runs of Benchmarks/peers/nats-compare.sh"
          f" (latency to the durable acknowledgement; FlowKit: 'ordered')")
    show(rows)
    print()
    show(ratio_rows)
    out = os.path.join(os.path.dirname(os.path.abspath(arguments[0])), "medians.json")
    with open(out, "w") as file:
        json.dump(result, file, indent=1)
    print(f"\nEvery run's tables and JSON: {', '.join(directories)}; these medians: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
