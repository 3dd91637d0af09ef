#!/usr/bin/env python3
"""Replicated coordinators with a long history: disk use under sustained load, then failover.

    Benchmarks/failover-history.py [--flowkit PATH] [--entries N] [--rate R] [--kills K] [--out DIR]

Starts `flowkit cluster --coordinators 3` (etcd, three coordinators with synced logs, 3 nodes).

First the baseline: under a light load (`flowkit bench --attach` at 2,000/s) it kills the leader
`--kills` times with a fresh log (`kill -9`) and times each failover as a user sees it: from the
kill to the first EMIT that is ordered. From the kill on, an EMIT goes to node 1 every 100 ms over
one ZeroMQ connection made before it (pyzmq: `scripts/install-deps --test`), and the first
EMITTED ends the failover. The killed coordinator is started again with its command from
cluster.json, and the next kill waits until every coordinator is in sync.

Then `flowkit bench --attach` at `--rate` until `--entries` entries are written (12 million at
20,000/s by default: 10 minutes), sampling each coordinator's data directory (`du`) every 30 s:
with compaction the disk stays bounded, where it used to grow by ~104 bytes an entry. Then the
same kills again, with the long history behind them.

Prints the disk samples and both sets of failover times (median, max) and writes them to --out as
JSON. Stops every process it started, on every path.
"""
import argparse
import json
import os
import signal
import statistics
import struct
import subprocess
import sys
import tempfile
import time

import zmq

# The client protocol's version (docs/PROTOCOL.md, the header).
PROTOCOL_VERSION = 4
zmq_context = zmq.Context()


def say(text):
    print(f"failover-history: {text}", file=sys.stderr, flush=True)


def du(path):
    """Bytes under `path` (0 if it is gone)."""
    try:
        return int(subprocess.run(["du", "-sb", path], capture_output=True, text=True, check=True).stdout.split()[0])
    except (subprocess.CalledProcessError, IndexError, ValueError):
        return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--flowkit", default=".build-release/release/flowkit")
    parser.add_argument("--entries", type=int, default=12_000_000)
    parser.add_argument("--rate", type=int, default=20_000)
    parser.add_argument("--kills", type=int, default=10)
    parser.add_argument("--sample-every", type=float, default=30)
    parser.add_argument("--out")
    options = parser.parse_args()
    os.chdir(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    flowkit = os.path.abspath(options.flowkit)
    if not os.access(flowkit, os.X_OK):
        sys.exit(f"failover-history: no {options.flowkit}: scripts/build-release --product flowkit")
    out = options.out or tempfile.mkdtemp(prefix="flowkit-failover-history-")
    os.makedirs(out, exist_ok=True)
    directory = tempfile.mkdtemp(prefix="flowkit-failover-history-cluster-")
    started = []

    def start(arguments, name):
        process = subprocess.Popen(
            arguments, stdout=open(f"{out}/{name}.stdout", "w"), stderr=open(f"{out}/{name}.stderr", "w"),
            stdin=subprocess.DEVNULL, start_new_session=True,
        )
        started.append(process)
        return process

    def stop(process):
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()

    def cluster_file():
        return json.load(open(f"{directory}/cluster.json"))

    def status():
        result = subprocess.run([flowkit, "status", "--cluster-dir", directory, "--json", "--timeout", "5"], capture_output=True, text=True)
        try:
            return json.loads(result.stdout.strip().splitlines()[-1])
        except (IndexError, json.JSONDecodeError):
            return None

    def replication():
        current = status()
        return (current or {}).get("replication") or {}

    def data_dirs():
        return sorted(path for path in os.listdir(directory) if path.startswith("c") and os.path.isdir(f"{directory}/{path}"))

    # The pid of each coordinator now: cluster.json's, until this script starts one again.
    pids = {}

    def probe_socket():
        """A DEALER to node 1's client socket, for the failover probe."""
        socket = zmq_context.socket(zmq.DEALER)
        socket.setsockopt(zmq.LINGER, 0)
        socket.connect(cluster_file()["nodes"][0]["clientEndpoint"])
        return socket

    def first_ordered_emit(killed, socket):
        """Seconds from `killed` to the first EMITTED of the EMITs sent every 100 ms from then on.

        The client protocol by hand (docs/PROTOCOL.md: EMIT, wait 0 = ordered, codec 1 = JSON), on
        one connection made before the kill: no process started per probe, and an EMIT the node
        holds until it finds the new leader is answered the moment it is ordered."""
        address = "counter/failover".encode()
        request = 0
        next_send = killed
        while time.time() - killed < 60:
            if time.time() >= next_send:
                request += 1
                socket.send_multipart([b"FK" + bytes([PROTOCOL_VERSION, 0x30]) + struct.pack(">QBBH", request, 0, 1, len(address)) + address,
                                       b'{"increment":{}}'])
                next_send += 0.1
            if socket.poll(max(1, int((next_send - time.time()) * 1000))):
                frames = socket.recv_multipart()
                if len(frames[0]) > 3 and frames[0][3] == 0x31:  # EMITTED
                    return time.time() - killed
        return None

    def failovers(label):
        """`--kills` leader kills under 2,000/s; their times and a summary."""
        if not pids:
            pids.update({entry["id"]: entry["pid"] for entry in cluster_file()["coordinators"]})
        say(f"{label}: {options.kills} leader kills under 2,000/s")
        name = label.replace(" ", "-")
        load = start([flowkit, "bench", "--attach", directory, "--rate", "2000", "--duration", str(options.kills * 40 + 60), "--json"], f"load-{name}")
        time.sleep(5)
        kills = []
        for kill in range(1, options.kills + 1):
            view = replication()
            leader = view.get("leader")
            lagging = [c["id"] for c in view.get("coordinators", []) if not c.get("inSync")]
            if not leader or lagging:
                say(f"waiting for a leader with every coordinator in sync (lagging: {lagging})")
                deadline = time.time() + 60
                while time.time() < deadline:
                    time.sleep(1)
                    view = replication()
                    leader = view.get("leader")
                    if leader and all(c.get("inSync") for c in view.get("coordinators", [])):
                        break
            entry = next(c for c in cluster_file()["coordinators"] if c["id"] == leader)
            written = view.get("written")
            socket = probe_socket()
            time.sleep(0.2)  # connected before the kill
            os.kill(pids[leader], signal.SIGKILL)
            killed = time.time()
            ordered = first_ordered_emit(killed, socket)
            socket.close()
            after = replication().get("leader")
            if after == leader:
                say(f"kill {kill}: {leader} still leads: the kill did not take; stopping")
                break
            failover = {"kill": kill, "killed": leader, "written": written, "newLeader": after,
                        "orderedSeconds": None if ordered is None else round(ordered, 3)}
            kills.append(failover)
            say(f"{label}, kill {kill}: {leader} (log end {written}) → {after}, first emit ordered after {failover['orderedSeconds']} s")
            # Started again by hand, as cluster.json says (flowkit cluster restarts nodes, not coordinators).
            restarted = subprocess.Popen(entry["command"], cwd=directory, stdout=open(f"{out}/{leader}-{name}-restart-{kill}.stdout", "w"),
                                         stderr=open(f"{out}/{leader}-{name}-restart-{kill}.stderr", "w"), stdin=subprocess.DEVNULL,
                                         start_new_session=True)
            pids[leader] = restarted.pid
            time.sleep(8)
        stop(load)
        times = [f["orderedSeconds"] for f in kills if f["orderedSeconds"] is not None]
        summary = None
        if times:
            summary = {"median": statistics.median(times), "max": max(times), "count": len(times), "unordered": len(kills) - len(times),
                       "over3s": sum(1 for t in times if t > 3)}
            say(f"{label}: failover median {summary['median']:.2f} s, max {summary['max']:.2f} s over {len(times)} kills")
        return {"failovers": kills, "summary": summary}

    result = {"entries": options.entries, "rate": options.rate, "disk": []}
    try:
        say(f"starting 3 coordinators, etcd and 3 nodes in {directory}")
        cluster = start([flowkit, "cluster", "--coordinators", "3", "--base-port", "0", "--dir", directory, "--no-demo", "--fresh",
                         "--no-dashboard", "--duration", "100000"], "cluster")
        deadline = time.time() + 120
        while time.time() < deadline and not replication().get("leader"):
            if cluster.poll() is not None:
                sys.exit(f"failover-history: flowkit cluster exited; see {out}/cluster.stderr")
            time.sleep(1)
        say(f"leader {replication().get('leader')}; data directories {data_dirs()}")

        result["baseline"] = failovers("fresh log")

        seconds = options.entries / options.rate
        say(f"writing {options.entries:,} entries at {options.rate:,}/s ({seconds:.0f} s), sampling the disk every {options.sample_every:.0f} s")
        fill = start([flowkit, "bench", "--attach", directory, "--rate", str(options.rate), "--duration", f"{seconds:.0f}", "--json"], "fill")
        began = time.time()
        while fill.poll() is None:
            sample = {"seconds": round(time.time() - began), "bytes": {name: du(f"{directory}/{name}") for name in data_dirs()}}
            sample["written"] = replication().get("written")
            result["disk"].append(sample)
            say(f"{sample['seconds']:>5} s: written {sample['written']}, " + ", ".join(f"{name} {size / 2**20:.0f} MiB" for name, size in sample["bytes"].items()))
            try:
                fill.wait(timeout=options.sample_every)
            except subprocess.TimeoutExpired:
                pass
        try:
            result["fill"] = json.loads(open(f"{out}/fill.stdout").read())
        except json.JSONDecodeError:
            result["fill"] = None
        result["disk"].append({"seconds": round(time.time() - began), "bytes": {name: du(f"{directory}/{name}") for name in data_dirs()},
                               "written": replication().get("written")})

        result["history"] = failovers("long history")
        json.dump(result, open(f"{out}/failover-history.json", "w"), indent=2)
        print(json.dumps({"fresh log": result["baseline"]["summary"], "long history": result["history"]["summary"]}, indent=2))
        say(f"results in {out}")
    finally:
        for process in reversed(started):
            stop(process)
        # The coordinators started again by hand are not flowkit cluster's children.
        subprocess.run(["pkill", "-f", directory], capture_output=True)


if __name__ == "__main__":
    main()
