#!/usr/bin/env python3
"""WAL frames per commit of a quiet canvas's critical commits, by how the rows are laid out.

A model, not the engine: plain SQLite (Python's sqlite3) with the engine's settings (WAL,
512-byte pages, auto_vacuum = incremental), fed a commit shaped like the canvas's critical
commit at 1k shapes (`strata bench --workload canvas`): six or seven of this replica's
operations of about 50 bytes, one segment row of 120-260 bytes, a waiting spawn or despawn
two commits in three, a despawn's index entry every other commit, the vector clock's row.
Each layout runs the same commits; the WAL's growth over them, in frames, is the cost.

  trees    today's layout: each kind of row appended to its own table (the canvas itself
           measures 9.0 pages a commit, the jobs' and received operations' tables included);
  row      the commit as one append-only row of one table, holding all of it;
  folded   the commit as one row, moved into today's tables every N commits (a journal
           folded by the writer): what a layout that keeps today's readers would cost.

Usage: python3 scripts/model-commit-pages.py [--commits N]
"""
import argparse
import os
import random
import sqlite3
import tempfile

SCHEMA = """
CREATE TABLE local_operations (seq INTEGER PRIMARY KEY, kind INTEGER, entity INTEGER, timestamp INTEGER, payload BLOB);
CREATE INDEX local_operations_despawns ON local_operations (kind) WHERE kind = 2;
CREATE TABLE segments (seq INTEGER PRIMARY KEY, records BLOB);
CREATE TABLE pending_entities (seq INTEGER PRIMARY KEY, num INTEGER, id BLOB, created_at INTEGER);
CREATE TABLE vector_clock (node BLOB PRIMARY KEY, seq INTEGER);
CREATE TABLE journal (seq INTEGER PRIMARY KEY, body BLOB);
"""


def open_db(folder, name, page, vacuum):
    path = os.path.join(folder, name)
    db = sqlite3.connect(path, isolation_level=None)
    db.execute(f"PRAGMA page_size = {page}")
    db.execute(f"PRAGMA auto_vacuum = {vacuum}")
    db.execute("PRAGMA journal_mode = WAL")
    db.execute("PRAGMA wal_autocheckpoint = 0")
    db.execute("PRAGMA synchronous = OFF")   # fsyncs do not change the frames
    db.executescript(SCHEMA)
    # Some history first, so the trees have their depth.
    db.execute("BEGIN")
    for i in range(3000):
        db.execute("INSERT INTO local_operations (kind, entity, timestamp, payload) VALUES (1, ?, ?, ?)",
                   (i, 1_700_000_000_000 + i, os.urandom(30)))
    for _ in range(300):
        db.execute("INSERT INTO segments (records) VALUES (?)", (os.urandom(200),))
    db.execute("INSERT INTO vector_clock VALUES (?, 0)", (b"n" * 16,))
    db.execute("COMMIT")
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return db, path


class Canvas:
    """The rows of each critical commit, the same for every layout (one seed)."""

    def __init__(self):
        self.rng = random.Random(1)
        self.seq = 3000
        self.number = 5000

    def commit(self, index):
        operations = []
        for k in range(self.rng.choice([6, 7, 7])):
            self.seq += 1
            despawn = k == 0 and index % 2 == 0
            operations.append((2 if despawn else 1, self.number, 1_700_000_000_000 + self.seq, os.urandom(30)))
        segment = os.urandom(self.rng.randint(120, 260))
        entity = None
        if index % 3 != 2:
            self.number += 1
            entity = (self.number, None if index % 2 else b"", 1_700_000_000_000 + self.seq)
        return operations, segment, entity, self.seq


def write_trees(db, commit):
    operations, segment, entity, seq = commit
    for row in operations:
        db.execute("INSERT INTO local_operations (kind, entity, timestamp, payload) VALUES (?, ?, ?, ?)", row)
    db.execute("INSERT INTO segments (records) VALUES (?)", (segment,))
    if entity:
        db.execute("INSERT INTO pending_entities (num, id, created_at) VALUES (?, ?, ?)", entity)
    db.execute("UPDATE vector_clock SET seq = ?", (seq,))


def as_row(commit):
    operations, segment, entity, _ = commit
    return os.urandom(len(operations) * 38 + len(segment) + (12 if entity else 0) + 8)


def run(layout, page, vacuum, commits, fold_every=None):
    with tempfile.TemporaryDirectory() as folder:
        db, path = open_db(folder, "model.db", page, vacuum)
        canvas = Canvas()
        waiting = []
        for index in range(commits):
            commit = canvas.commit(index)
            db.execute("BEGIN")
            if layout == "trees":
                write_trees(db, commit)
            else:
                db.execute("INSERT INTO journal (body) VALUES (?)", (as_row(commit),))
            db.execute("COMMIT")
            if layout == "folded":
                waiting.append(commit)
                if len(waiting) == fold_every:
                    db.execute("BEGIN")
                    for held in waiting:
                        write_trees(db, held)
                    db.execute("DELETE FROM journal")
                    if vacuum == "incremental":
                        db.execute("PRAGMA incremental_vacuum")
                    db.execute("COMMIT")
                    waiting = []
        wal = os.path.getsize(path + "-wal")
        db.close()
    frames = (wal - 32) // (page + 24)
    return frames / commits, wal / commits


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--commits", type=int, default=600)
    args = parser.parse_args()
    print(f"{'layout':<22} {'page':>5} {'auto_vacuum':>12} {'frames/commit':>14} {'WAL bytes/commit':>17}")
    cases = [("trees", None), ("row", None), ("folded", 5), ("folded", 30)]
    for page in (512, 1024):
        for vacuum in ("incremental", "none"):
            for layout, every in cases:
                frames, wal = run(layout, page, vacuum, args.commits, every)
                name = layout if every is None else f"{layout} every {every}"
                print(f"{name:<22} {page:>5} {vacuum:>12} {frames:>14.2f} {wal:>17.0f}")


if __name__ == "__main__":
    main()
