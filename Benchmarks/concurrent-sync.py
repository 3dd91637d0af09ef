#!/usr/bin/env python3
"""What a log's `fdatasync` costs when other logs on the same disk sync at the same moment.

    Benchmarks/concurrent-sync.py [--dir DIR] [--rate R] [--syncs N] [--rounds K]

Each writer appends 200 bytes to a file of its own in DIR and syncs it (`fdatasync`), paced at R
a second, N times, the way a coordinator's log commits a small group. One writer, then three at
once (a leader and two standbys on one disk), alternated K times; prints each sync's p50 and p99.
The question it answers: does a leader that syncs at the same moment as its standbys (protocol
version 4's parallel sync) make each sync slower than when they came one after another?
"""
import argparse
import os
import tempfile
import threading
import time


def writer(path, syncs, rate, latencies):
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    record, interval, due = b"x" * 200, 1.0 / rate, time.perf_counter()
    own = []
    for _ in range(syncs):
        due += interval
        wait = due - time.perf_counter()
        if wait > 0:
            time.sleep(wait)
        os.write(fd, record)
        start = time.perf_counter()
        os.fdatasync(fd)
        own.append(time.perf_counter() - start)
    os.close(fd)
    latencies.extend(own)


def measure(writers, syncs, rate, directory):
    latencies = []
    threads = [
        threading.Thread(target=writer, args=(os.path.join(directory, f"log-{i}"), syncs, rate, latencies))
        for i in range(writers)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    latencies.sort()
    return latencies[len(latencies) // 2] * 1e6, latencies[int(len(latencies) * 0.99)] * 1e6


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", help="where the files go (default: a new directory in /tmp)")
    parser.add_argument("--rate", type=float, default=500, help="syncs a second per writer (default 500)")
    parser.add_argument("--syncs", type=int, default=1000, help="syncs per writer and round (default 1000)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of one writer, then three (default 3)")
    args = parser.parse_args()
    directory = args.dir or tempfile.mkdtemp(prefix="concurrent-sync-", dir="/tmp")
    for _ in range(args.rounds):
        for writers in (1, 3):
            p50, p99 = measure(writers, args.syncs, args.rate, directory)
            print(f"writers {writers}, {args.rate:g} syncs/s each: fdatasync p50 {p50:.0f} µs, p99 {p99:.0f} µs", flush=True)


if __name__ == "__main__":
    main()
