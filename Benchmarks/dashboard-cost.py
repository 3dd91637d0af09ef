#!/usr/bin/env python3
"""What a dashboard page open costs the cluster: `flowkit bench` with and without one, same run.

    Benchmarks/dashboard-cost.py [--flowkit PATH] [--pairs N] [--rates R,R] [--duration S] [--out DIR]

Starts one `flowkit cluster` (a coordinator with a synced log, 3 nodes, its web dashboard on), then
runs `flowkit bench --attach` against it `--pairs` times with the dashboard's page closed and
`--pairs` times with it open in headless Chromium, interleaved (closed, open, open, closed, …) so
that drift on this noisy machine falls on both sides alike. Each bench is a sweep of `--rates`
(default 10,000/s, where latency is read, and 50,000/s, above what the cluster sustains, where
throughput is read) and shows itself live on that same page, as a user would watch it.

Prints the median of each side and open ÷ closed: throughput ordered, the ordered and applied p50
and p99, the cluster's CPU per event (coordinator and nodes), and the CPU of the two things the
page adds: the `flowkit cluster` process (its dashboard: a monitor subscription and the hub) and
Chromium. Stops every process it started, on every path.
"""
import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

TICKS = os.sysconf("SC_CLK_TCK")


def say(text):
    print(f"dashboard-cost: {text}", file=sys.stderr, flush=True)


def cpu_seconds(pids):
    """User + system CPU of these processes (and their reaped children), from /proc."""
    total = 0.0
    for pid in pids:
        try:
            fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
            total += sum(int(value) for value in fields[11:15]) / TICKS
        except (FileNotFoundError, ProcessLookupError, IndexError):
            pass
    return total


def tree(pid):
    """The process and every descendant (Chromium is a dozen processes)."""
    found, frontier = [pid], [pid]
    while frontier:
        parent = frontier.pop()
        try:
            children = open(f"/proc/{parent}/task/{parent}/children").read().split()
        except FileNotFoundError:
            continue
        for child in map(int, children):
            found.append(child)
            frontier.append(child)
    return found


def get_json(url, token):
    """A dashboard's JSON, asked for with its token (docs/SECURITY.md, "The dashboard")."""
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"})
    with urllib.request.urlopen(request, timeout=15) as response:
        return json.load(response)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--flowkit", default=".build-release/release/flowkit")
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--rates", default="10000,50000")
    parser.add_argument("--duration", type=float, default=10)
    parser.add_argument("--out")
    options = parser.parse_args()
    os.chdir(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if not chromium:
        sys.exit("dashboard-cost: needs chromium (scripts/install-deps --test installs it)")
    if not os.access(options.flowkit, os.X_OK):
        sys.exit(f"dashboard-cost: no {options.flowkit}: swift build -c release --product flowkit")
    out = options.out or tempfile.mkdtemp(prefix="flowkit-dashboard-cost-")
    os.makedirs(out, exist_ok=True)
    directory = tempfile.mkdtemp(prefix="flowkit-dashboard-cost-cluster-")
    started = []

    def start(arguments, name, **extra):
        process = subprocess.Popen(
            arguments, stdout=open(f"{out}/{name}.stdout", "w"), stderr=open(f"{out}/{name}.stderr", "w"),
            stdin=subprocess.DEVNULL, start_new_session=True, **extra,
        )
        started.append(process)
        return process

    def stop(process):
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()

    try:
        say(f"starting a cluster with its dashboard in {directory}")
        cluster = start([options.flowkit, "cluster", "--base-port", "0", "--dir", directory, "--no-demo", "--fresh"], "cluster")
        deadline = time.time() + 120
        url = token = None
        while url is None and time.time() < deadline:
            time.sleep(0.2)
            if cluster.poll() is not None:
                sys.exit(f"dashboard-cost: flowkit cluster exited; see {out}/cluster.stderr")
            try:
                file = json.load(open(f"{directory}/cluster.json"))
                url, token = file.get("dashboard"), file.get("dashboardToken")
            except (FileNotFoundError, json.JSONDecodeError):
                pass
        if url is None:
            sys.exit("dashboard-cost: the cluster's dashboard did not come up")
        say(f"dashboard at {url}")

        sides = {"closed": [], "open": []}
        order = []
        for pair in range(options.pairs):
            order += ["closed", "open"] if pair % 2 == 0 else ["open", "closed"]
        for run, side in enumerate(order, 1):
            page = None
            if side == "open":
                profile = tempfile.mkdtemp(prefix="flowkit-dashboard-cost-chromium-")
                page = start([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
                              f"--user-data-dir={profile}", "--window-size=1200,1500", f"{url}?token={token}"], f"chromium-{run}")
                opened = time.time() + 30
                while get_json(url + "api/info", token)["pages"] < 1:
                    if time.time() > opened:
                        sys.exit("dashboard-cost: the page did not open its WebSocket")
                    time.sleep(0.2)
            elif get_json(url + "api/info", token)["pages"] != 0:
                sys.exit("dashboard-cost: a page is open on the dashboard; close it for the closed side")
            before = (cpu_seconds([cluster.pid]), cpu_seconds(tree(page.pid)) if page else 0.0, time.time())
            bench = subprocess.run(
                [options.flowkit, "bench", "--attach", directory, "--sweep", options.rates, "--duration", str(options.duration),
                 "--warmup", "2", "--no-baseline", "--quiet", "--json"],
                stdout=subprocess.PIPE, stderr=open(f"{out}/bench-{run}-{side}.stderr", "w"), text=True,
            )
            after = (cpu_seconds([cluster.pid]), cpu_seconds(tree(page.pid)) if page else 0.0, time.time())
            if page:
                shutil.rmtree(profile, ignore_errors=True)
                stop(page)
            open(f"{out}/bench-{run}-{side}.json", "w").write(bench.stdout)
            steps = json.loads(bench.stdout) if bench.stdout.strip() else []
            if len(steps) != len(options.rates.split(",")):
                sys.exit(f"dashboard-cost: bench {run} gave no result; see {out}/bench-{run}-{side}.stderr")
            wall = after[2] - before[2]
            sides[side].append({
                "steps": steps, "passed": all(step["passed"] for step in steps),
                "dashboard cpu %": (after[0] - before[0]) / wall * 100, "chromium cpu %": (after[1] - before[1]) / wall * 100,
            })
            say(f"run {run} of {len(order)} ({side} page) done")

        def figures(runs):
            rows = []
            for run in runs:
                latency, throughput = run["steps"][0], run["steps"][-1]
                servers = [v["cpuSeconds"] for k, v in latency["resources"].items() if k != "bench"]
                events = latency["throughput"]["ordered"] * latency["config"]["duration"]
                rows.append({
                    f"ordered/s offered {throughput['config']['rate']:,.0f}": throughput["throughput"]["ordered"],
                    f"ordered p50 µs at {latency['config']['rate']:,.0f}/s": latency["latency"]["ordered"]["p50"],
                    "ordered p99 µs": latency["latency"]["ordered"]["p99"],
                    "applied p50 µs": latency["latency"]["applied"]["p50"],
                    "applied p99 µs": latency["latency"]["applied"]["p99"],
                    "cluster CPU µs/event": sum(servers) / max(events, 1) * 1e6,
                    "dashboard CPU % of a core": run["dashboard cpu %"],
                    "Chromium CPU % of a core": run["chromium cpu %"],
                })
            return {key: statistics.median(row[key] for row in rows) for key in rows[0]}

        closed, opened = figures(sides["closed"]), figures(sides["open"])
        print(f"{'median of ' + str(options.pairs) + ' runs each':34}{'page closed':>14}{'page open':>14}{'open ÷ closed':>15}")
        for key in closed:
            ratio = f"{opened[key] / closed[key]:15.2f}" if closed[key] >= 1 else f"{'':15}"
            print(f"{key:34}{closed[key]:14,.0f}{opened[key]:14,.0f}{ratio}")
        passed = all(run["passed"] for runs in sides.values() for run in runs)
        print(f"every end check passed: {'yes' if passed else 'NO'}; JSON in {out}")
        return 0 if passed else 6
    finally:
        for process in reversed(started):
            stop(process)
        shutil.rmtree(directory, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
