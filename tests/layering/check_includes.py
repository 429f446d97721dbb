#!/usr/bin/env python3
"""Checks that every room includes only the rooms below it.

docs/architecture.md ("Includes run downward") states the table; this
enforces it over every #include of every source in the library rooms, so a
new include that points up (the plan model including the executor, the
runtime including MLIR) fails the suite. Tools, Python bindings, tests and
benchmarks sit on top and may include anything.
"""
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]

# room -> the header families it may include ("mlir" covers mlir/ and llvm/).
ALLOWED = {
    "support": {"Support"},
    "ir": {"Support", "IR", "mlir"},
    "passes": {"Support", "IR", "Transforms", "mlir"},
    "plan": {"Support", "Plan"},
    "codegen": {"Support", "IR", "Transforms", "Plan", "Codegen", "mlir"},
    "frontend": {"Support", "IR", "Frontend", "mlir"},
    "driver": {"Support", "IR", "Transforms", "Plan", "Codegen", "Frontend",
               "Driver", "mlir"},
    "executor": {"Support", "Plan", "Executor"},
}
INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]((?:monarch/(\w+))|mlir|llvm)/')
SOURCES = ("*.cpp", "*.h", "*.cc", "*.hpp")


def family(line):
    m = INCLUDE.match(line)
    if not m:
        return None
    return m.group(2) or "mlir"


def violations(room, path, text):
    out = []
    for n, line in enumerate(text.splitlines(), 1):
        fam = family(line)
        if fam is not None and fam not in ALLOWED[room]:
            out.append(f"{path}:{n}: {room}/ may not include "
                       f"{line.strip()} (allowed: "
                       f"{', '.join(sorted(ALLOWED[room]))})")
    return out


def main():
    # The checker itself: an arrow up is caught, a downward one is not.
    assert violations("plan", "x", '#include "monarch/Executor/Status.h"')
    assert violations("executor", "x", "#include <mlir/IR/Value.h>")
    assert not violations("codegen", "x", '#include "monarch/Plan/Plan.h"')
    # The tracer builds IR; compiling it is the driver's, above it.
    assert violations("frontend", "x",
                      '#include "monarch/Driver/CompileSession.h"')
    found, checked = [], 0
    for room in ALLOWED:
        for pattern in SOURCES:
            for path in sorted((ROOT / room).rglob(pattern)):
                checked += 1
                found += violations(room, path.relative_to(ROOT),
                                    path.read_text(errors="replace"))
    for v in found:
        print(v)
    if found:
        print(f"{len(found)} include(s) point up a room")
        return 1
    print(f"include layering: {checked} files, every include points down")
    return 0


if __name__ == "__main__":
    sys.exit(main())
