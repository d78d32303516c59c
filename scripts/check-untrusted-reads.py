#!/usr/bin/env python3
"""Fails on a trap that a value read from the file, the network or the command line could reach.

In the engine, its adapters, the host and the sync service (ROOTS below) (comments and string
literals left out, interpolations kept), it refuses:

- a GRDB `Row` read by subscript (`row["x"]`, `row[0]`, `$1["x"]` on a fetched row): the
  subscript traps on NULL or on a value of another type. Read with `try row.decode(...)`,
  which throws, and handle the throw as damage of that row;
- `try!`, a forced cast (`as!`) and a forced unwrap (`x!`): say what happens when the value
  is not there instead.

`precondition` stays allowed: it guards the API against its caller (a programming error),
never a value read from outside. Run by `make test`; prints each finding as FILE:LINE and
exits 1 if there is any.
"""
import pathlib
import re
import sys

ROOTS = ["Sources/Strata", "Sources/StrataPostgres", "Sources/StrataPQ", "Sources/StrataWire", "Sources/StrataHTTP",
         "Sources/StrataHost", "Sources/StrataServer", "Sources/StrataServerCommand"]

ROW_SUBSCRIPT = re.compile(r"\b\w*[rR]ow\??\s*\[")
# `$0[...]` in a closure over fetched rows, or a subscript straight on `Row.fetchOne(...)`.
FETCHED_ROW_SHORTHAND = re.compile(r"Row\.fetch\w*\(.*(\$\d+\s*\[|\)\??\s*\[)")
# Any subscript cast with `as Type` (not `as?`): GRDB's row idiom, whatever the row is named.
SUBSCRIPT_CAST = re.compile(r"\[[^\[\]]*\]\s+as\s+[A-Z]")
TRY_BANG = re.compile(r"\btry!")
FORCED_CAST = re.compile(r"\bas!")
# An identifier, `)` or `]` followed by `!` that is not `!=`: a forced unwrap.
FORCED_UNWRAP = re.compile(r"[\w\)\]]!(?!=)")


def code_only(text):
    """The text with comments and string literals blanked (newlines kept), interpolations kept."""
    out = []
    i, n = 0, len(text)
    # A stack of states: "code" or a string (its delimiter); an interpolation pushes ("interp", depth).
    stack = ["code"]
    while i < n:
        state = stack[-1]
        c = text[i]
        if state == "code" or isinstance(state, tuple):
            if text.startswith("//", i):
                j = text.find("\n", i)
                j = n if j < 0 else j
                out.append(" " * (j - i))
                i = j
                continue
            if text.startswith("/*", i):
                j = text.find("*/", i + 2)
                j = n if j < 0 else j + 2
                out.append(re.sub(r"[^\n]", " ", text[i:j]))
                i = j
                continue
            if text.startswith('"""', i):
                stack.append('"""')
                out.append("   ")
                i += 3
                continue
            if c == '"':
                stack.append('"')
                out.append(" ")
                i += 1
                continue
            if isinstance(state, tuple):
                if c == "(":
                    stack[-1] = ("interp", state[1] + 1)
                elif c == ")":
                    if state[1] == 0:
                        stack.pop()
                        out.append(" ")
                        i += 1
                        continue
                    stack[-1] = ("interp", state[1] - 1)
            out.append(c)
            i += 1
            continue
        # Inside a string literal.
        if c == "\\" and i + 1 < n:
            if text[i + 1] == "(":
                stack.append(("interp", 0))
                out.append("  ")
                i += 2
                continue
            out.append("  " if text[i + 1] != "\n" else " \n")
            i += 2
            continue
        if text.startswith(state, i):
            stack.pop()
            out.append(" " * len(state))
            i += len(state)
            continue
        out.append("\n" if c == "\n" else " ")
        i += 1
    return "".join(out)


def findings(path):
    code = code_only(path.read_text(encoding="utf-8"))
    for number, line in enumerate(code.split("\n"), start=1):
        for pattern, what in [
            (ROW_SUBSCRIPT, "a Row read by subscript (traps on NULL or another type): try row.decode(...)"),
            (FETCHED_ROW_SHORTHAND, "a fetched Row read by subscript (traps on NULL or another type): try row.decode(...)"),
            (SUBSCRIPT_CAST, "a subscript read as a type (GRDB's row read: traps on NULL or another type): try row.decode(...)"),
            (TRY_BANG, "try! (traps on the error)"),
            (FORCED_CAST, "as! (traps on another type)"),
            (FORCED_UNWRAP, "a forced unwrap (traps on nil)"),
        ]:
            if pattern.search(line):
                yield number, what, line.strip()


def main():
    root = pathlib.Path(__file__).resolve().parent.parent
    count = 0
    for folder in ROOTS:
        for path in sorted((root / folder).rglob("*.swift")):
            for number, what, line in findings(path):
                print(f"{path.relative_to(root)}:{number}: {what}: {line}")
                count += 1
    if count:
        print(f"check-untrusted-reads: {count} places where a value read from outside could reach a trap")
        return 1
    print("check-untrusted-reads: no row subscript, try!, as! or forced unwrap in " + ", ".join(ROOTS))
    return 0


if __name__ == "__main__":
    sys.exit(main())
