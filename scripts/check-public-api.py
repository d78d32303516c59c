#!/usr/bin/env python3
"""The Strata library's public symbols against the list in docs/public-api.txt.

`make docs` extracts the symbol graph (public symbols only) while building the DocC archive;
this reads it and fails, naming them, when a symbol became public or stopped being public
without the list saying so. After a deliberate change: scripts/check-public-api.py --update.
"""
import glob
import json
import os
import sys

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
listing = os.path.join(root, "docs", "public-api.txt")
graphs = glob.glob(os.path.join(root, ".build", "*", "extracted-symbols", "*", "Strata", "Strata*.symbols.json"))
if not graphs:
    sys.exit("check-public-api: no symbol graph under .build/*/extracted-symbols: run `make docs` first")

symbols = set()
for path in graphs:
    graph = json.load(open(path))
    extended = os.path.basename(path)[len("Strata"):-len(".symbols.json")]   # "" or "@Swift"
    for symbol in graph["symbols"]:
        if symbol.get("accessLevel") != "public":
            continue
        kind = symbol["kind"]["identifier"].removeprefix("swift.")
        name = ".".join(symbol["pathComponents"])
        symbols.add(f"{kind} {extended + ' ' if extended else ''}{name}")

current = sorted(symbols)
header = ("# The Strata library's public symbols (kind, then path), one a line: what a host may use.\n"
          "# Checked by scripts/check-public-api.py in `make docs`; regenerate with --update after a deliberate change.\n")
if "--update" in sys.argv:
    with open(listing, "w") as out:
        out.write(header + "\n".join(current) + "\n")
    print(f"check-public-api: {len(current)} public symbols written to docs/public-api.txt")
    sys.exit(0)

expected = [line for line in open(listing).read().splitlines() if line and not line.startswith("#")] if os.path.exists(listing) else []
added = sorted(set(current) - set(expected))
removed = sorted(set(expected) - set(current))
if added or removed:
    for line in added:
        print(f"  now public, not in docs/public-api.txt: {line}")
    for line in removed:
        print(f"  in docs/public-api.txt, no longer public: {line}")
    sys.exit(f"check-public-api: {len(added)} symbols became public and {len(removed)} stopped being public; "
             "make them package/internal, or run scripts/check-public-api.py --update if it is deliberate")
types = sum(1 for line in current if line.split(" ")[0] in ("struct", "class", "enum", "protocol", "typealias") and "." not in line.split(" ")[-1])
print(f"check-public-api: {len(current)} public symbols ({types} top-level types), as listed")
