#!/usr/bin/env python3
"""Strata's job queue beside two SQLite queues of the Python world, on the same workload.

    python3 Benchmarks/queue_compare.py [--jobs 20000] [--batch 100] [--queued 100000] [--samples 2000]

- persist-queue's SQLiteAckQueue: put, get, ack (an acknowledged queue: a job survives a
  crash until acked).
- huey's SqliteStorage: enqueue_data, dequeue (dequeue deletes: a job running when the
  process dies is lost, huey #844).
- Strata: `strata bench-queue --json` (release build: `swift build -c release`), the same
  counts.

The workload: one thread runs --jobs enqueue->claim->complete cycles, --batch jobs at a time,
then one job at a time; then, with --queued jobs waiting, --samples enqueues and claims are
timed. Installs the two packages with pip if they are missing. Prints each figure and
Strata's ratio to it.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time


def ensure(package, module):
    try:
        __import__(module)
    except ImportError:
        base = [sys.executable, "-m", "pip", "install", "--quiet", package]
        if subprocess.run(base).returncode != 0:
            subprocess.run(base + ["--break-system-packages"], check=True)


def percentile(values, p):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * p))] * 1000


def bench_persistqueue(folder, jobs, batch, queued, samples):
    from persistqueue import SQLiteAckQueue
    queue = SQLiteAckQueue(os.path.join(folder, "pq"), auto_commit=True, multithreading=False)
    start = time.perf_counter()
    for base in range(0, jobs, batch):
        count = min(batch, jobs - base)
        for i in range(count):
            queue.put({"entity": base + i, "kind": "cycle"})
        for _ in range(count):
            queue.ack(queue.get(block=False))
    cycles = jobs / (time.perf_counter() - start)
    single = min(jobs, 2000)
    start = time.perf_counter()
    for i in range(single):
        queue.put({"entity": i, "kind": "single"})
        queue.ack(queue.get(block=False))
    single_rate = single / (time.perf_counter() - start)
    for i in range(queued):
        queue.put({"entity": i, "kind": "backlog"})
    puts, gets = [], []
    for i in range(samples):
        t0 = time.perf_counter()
        queue.put({"entity": i, "kind": "sample"})
        t1 = time.perf_counter()
        item = queue.get(block=False)
        t2 = time.perf_counter()
        queue.ack(item)
        puts.append(t1 - t0)
        gets.append(t2 - t1)
    return {"cycles_per_second": cycles, "single_cycles_per_second": single_rate,
            "enqueue_p99_ms": percentile(puts, 0.99), "claim_p99_ms": percentile(gets, 0.99)}


def bench_huey(folder, jobs, batch, queued, samples):
    from huey.storage import SqliteStorage
    storage = SqliteStorage(name="bench", filename=os.path.join(folder, "huey.db"))
    start = time.perf_counter()
    for base in range(0, jobs, batch):
        count = min(batch, jobs - base)
        for i in range(count):
            storage.enqueue(json.dumps({"entity": base + i}).encode())
        for _ in range(count):
            storage.dequeue()
    cycles = jobs / (time.perf_counter() - start)
    single = min(jobs, 2000)
    start = time.perf_counter()
    for i in range(single):
        storage.enqueue(b"single")
        storage.dequeue()
    single_rate = single / (time.perf_counter() - start)
    for i in range(queued):
        storage.enqueue(b"backlog")
    puts, gets = [], []
    for i in range(samples):
        t0 = time.perf_counter()
        storage.enqueue(b"sample")
        t1 = time.perf_counter()
        storage.dequeue()
        t2 = time.perf_counter()
        puts.append(t1 - t0)
        gets.append(t2 - t1)
    return {"cycles_per_second": cycles, "single_cycles_per_second": single_rate,
            "enqueue_p99_ms": percentile(puts, 0.99), "claim_p99_ms": percentile(gets, 0.99)}


def bench_strata(strata, jobs, batch, queued, samples):
    out = subprocess.run([strata, "bench-queue", "--json", "--jobs", str(jobs), "--batch", str(batch),
                          "--queued", str(queued), "--samples", str(samples)], check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--jobs", type=int, default=20000)
    parser.add_argument("--batch", type=int, default=100)
    parser.add_argument("--queued", type=int, default=100000)
    parser.add_argument("--samples", type=int, default=2000)
    parser.add_argument("--strata", default=os.path.join(os.path.dirname(__file__), "..", ".build", "release", "strata"))
    args = parser.parse_args()
    ensure("persist-queue", "persistqueue")
    ensure("huey", "huey")
    counts = (args.jobs, args.batch, args.queued, args.samples)
    with tempfile.TemporaryDirectory() as folder:
        results = {
            "strata": bench_strata(args.strata, *counts),
            "persist-queue": bench_persistqueue(folder, *counts),
            "huey": bench_huey(folder, *counts),
        }
    s = results["strata"]
    print(f"jobs {args.jobs}, batch {args.batch}, queued {args.queued}, samples {args.samples}")
    print(f"{'':14} {'cycles/s':>10} {'one at a time/s':>16} {'enqueue p99 ms':>15} {'claim p99 ms':>13}")
    for name, r in results.items():
        print(f"{name:14} {r['cycles_per_second']:10.0f} {r['single_cycles_per_second']:16.0f} "
              f"{r['enqueue_p99_ms']:15.3f} {r['claim_p99_ms']:13.3f}")
    for name in ("persist-queue", "huey"):
        r = results[name]
        print(f"Strata / {name}: cycles ×{s['cycles_per_second'] / r['cycles_per_second']:.2f}, "
              f"one at a time ×{s['single_cycles_per_second'] / r['single_cycles_per_second']:.2f}, "
              f"enqueue p99 ×{s['enqueue_p99_ms'] / r['enqueue_p99_ms']:.2f}, claim p99 ×{s['claim_p99_ms'] / r['claim_p99_ms']:.2f} "
              "(above 1: Strata faster for cycles, slower for latencies)")
    print(f"Strata after a crash: {s['interrupted_jobs']} jobs running marked interrupted in {s['recovery_mark_all_ms']:.1f} ms "
          f"(the whole open: {s['recovery_open_ms']:.1f} ms); 8 jobs running in {s['recovery_mark_few_ms']:.2f} ms")


if __name__ == "__main__":
    main()
