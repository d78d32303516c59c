#!/usr/bin/env python3
"""The house rules a reader can check by counting: no file of the core library over 300 lines,
the writer's main file at most 200, and nothing in the repository that points outside it for
what it needs (documents this project grew from are restated in docs/, never cited)."""
import os
import re
import sys

root = os.path.join(os.path.dirname(__file__), "..")
problems = []

for folder, _, files in os.walk(os.path.join(root, "Sources", "Strata")):
    for name in files:
        if name.endswith(".swift"):
            path = os.path.join(folder, name)
            count = sum(1 for _ in open(path, encoding="utf-8"))
            limit = 200 if name == "Writer.swift" else 300
            if count > limit:
                problems.append(f"{os.path.relpath(path, root)}: {count} lines (at most {limit})")

outside = re.compile(r"\.\./shared|shared/seeds|\bseeds/0|\bRFC 0002\b|\bADR-0\d\d\b|\bissue #?\d+\b", re.IGNORECASE)
for top in ["Sources", "Tests", "Examples", "docs", "scripts", "README.md", "Makefile", "CHANGELOG.md"]:
    start = os.path.join(root, top)
    paths = [start] if os.path.isfile(start) else [os.path.join(f, n) for f, _, ns in os.walk(start) for n in ns]
    for path in paths:
        if path.endswith((".swift", ".md", ".py", ".sh", ".toml")) or os.path.basename(path) == "Makefile":
            if os.path.abspath(path) == os.path.abspath(__file__):
                continue
            for number, line in enumerate(open(path, encoding="utf-8", errors="replace"), 1):
                if outside.search(line):
                    problems.append(f"{os.path.relpath(path, root)}:{number}: points outside the repository: {line.strip()[:120]}")

for problem in problems:
    print(problem)
if problems:
    print(f"check-house-rules: {len(problems)} problem(s)")
    sys.exit(1)
print("check-house-rules: core files within 300 lines (Writer.swift within 200), nothing cited from outside")
