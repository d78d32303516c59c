#!/usr/bin/env python3
"""The public symbols of Strata and its adapters against the list in docs/public-api.txt.

`make docs` extracts the symbol graphs of the library and its adapters (StrataPostgres,
StrataServiceLifecycle, StrataHTTP, StrataWire, StrataPQ, StrataTesting), public symbols only, with
`swift package dump-symbol-graph` (the library's also makes its DocC archive); this reads them and fails, naming them, when a symbol became
public or stopped being public without the list saying so. After a deliberate change:
scripts/check-public-api.py --update.

Two corrections to the graphs. Members the compiler synthesizes (`!=`, `hashValue`, Codable's,
an actor's `assertIsolated`) are left out: a type's conformances are listed, not the noise they
bring. And names that begin with an underscore, which the graphs omit, are read from the
sources: a public protocol's underscored requirements (`Component._strataDrain`) and public
underscored declarations are API a host can reach, so they are listed too ("underscored").
"""
import glob
import json
import os
import re
import sys

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
listing = os.path.join(root, "docs", "public-api.txt")
# The module, the glob of its graphs, and the prefix its lines carry in the listing. The
# library's graphs are `Strata.symbols.json` and `Strata@Module.symbols.json` (its extensions
# of other modules' types), not the graphs of the other modules whose names start with it.
modules = [("Strata", os.path.join(".build", "*", "symbolgraph", "Strata[.@]*symbols.json"), ""),
           ("StrataPostgres", os.path.join(".build", "*", "symbolgraph", "StrataPostgres*.symbols.json"), "StrataPostgres: "),
           ("StrataServiceLifecycle", os.path.join(".build", "*", "symbolgraph", "StrataServiceLifecycle*.symbols.json"),
            "StrataServiceLifecycle: "),
           ("StrataHTTP", os.path.join(".build", "*", "symbolgraph", "StrataHTTP*.symbols.json"), "StrataHTTP: "),
           ("StrataWire", os.path.join(".build", "*", "symbolgraph", "StrataWire*.symbols.json"), "StrataWire: "),
           ("StrataPQ", os.path.join(".build", "*", "symbolgraph", "StrataPQ*.symbols.json"), "StrataPQ: "),
           ("StrataTesting", os.path.join(".build", "*", "symbolgraph", "StrataTesting*.symbols.json"), "StrataTesting: ")]

symbols = set()
for module, pattern, prefix in modules:
    graphs = glob.glob(os.path.join(root, pattern))
    if not graphs:
        sys.exit(f"check-public-api: no symbol graph of {module} under .build: run `make docs` first")
    for path in graphs:
        graph = json.load(open(path))
        extended = os.path.basename(path)[len(module):-len(".symbols.json")]   # "" or "@Swift"
        for symbol in graph["symbols"]:
            if symbol.get("accessLevel") != "public":
                continue
            if "::SYNTHESIZED::" in symbol["identifier"]["precise"]:
                continue   # synthesized by a conformance: the conformance is the API
            kind = symbol["kind"]["identifier"].removeprefix("swift.")
            name = ".".join(symbol["pathComponents"])
            symbols.add(f"{prefix}{kind} {extended + ' ' if extended else ''}{name}")



def underscored(module, prefix):
    """Public underscored declarations of `module`'s sources, and its public protocols'
    underscored requirements, as `underscored Type.name(labels:)` lines."""
    declaration = re.compile(r"^\s*(?:@\w+(?:\([^)]*\))?\s+)*(public\s+)?(?:static\s+|class\s+|mutating\s+)*"
                             r"(func|var|let|init|subscript|typealias)\s+(_\w+)\s*(\([^)]*\))?")
    scope = re.compile(r"^\s*(?:@\w+\s+)*(public\s+|package\s+|internal\s+|private\s+|fileprivate\s+)?(?:final\s+)?"
                       r"(protocol|extension|struct|class|enum|actor)\s+(\w+)")
    found = set()
    for path in glob.glob(os.path.join(root, "Sources", module, "**", "*.swift"), recursive=True):
        stack = []   # (kind, name, public, depth at which it opened)
        depth = 0
        for line in open(path, encoding="utf-8"):
            code = line.split("//")[0]
            opened = scope.match(code)
            match = declaration.match(code)
            if match and stack:
                kind, name, public, _ = stack[-1]
                requirement = kind == "protocol" and public
                if match.group(1) or requirement:
                    labels = ""
                    if match.group(4) is not None:
                        parameters = [p.strip() for p in match.group(4)[1:-1].split(",") if p.strip()]
                        labels = "(" + "".join(p.split()[0].rstrip(":") + ":" for p in parameters) + ")"
                    found.add(f"{prefix}underscored {name}.{match.group(3)}{labels}")
            depth += code.count("{") - code.count("}")
            if opened and "{" in code:
                stack.append((opened.group(2), opened.group(3), (opened.group(1) or "").strip() == "public", depth - 1))
            while stack and depth <= stack[-1][3]:
                stack.pop()
    return found


for module, _, prefix in modules:
    symbols |= underscored(module, prefix)
current = sorted(symbols)
header = ("# The public symbols of Strata (kind, then path) and of its adapters (prefixed with the module), one a line:\n"
          "# what a host may use.\n"
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
library = [line for line in current if ": " not in line]
types = sum(1 for line in library if line.split(" ")[0] in ("struct", "class", "enum", "protocol", "typealias") and "." not in line.split(" ")[-1])
print(f"check-public-api: {len(library)} public symbols in Strata ({types} top-level types), "
      f"{len(current) - len(library)} in the adapters, as listed")
