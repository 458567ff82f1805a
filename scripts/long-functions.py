#!/usr/bin/env python3
"""Lists the Swift functions, initializers, subscripts and accessors under Sources/ whose body is
longer than a limit (100 lines by default), and exits 1 when there is one that is not a declarative
table named in ALLOWED.

A function is found by its declaration line and measured from there to its closing brace, counting
every line (blank lines and comments too). Braces inside string literals and after `//` are not
counted; multi-line string literals and block comments holding unbalanced braces would confuse it,
and the repository has none.

Usage: scripts/long-functions.py [--limit N] [FOLDER ...]   (default: Sources)
"""
import argparse
import re
import sys
from pathlib import Path

# Declarative tables: one entry per line of data, longer than the limit by nature. Each is named
# as "path:function".
ALLOWED: set[str] = set()

MODIFIERS = (
    r"(?:@\w+(?:\([^)]*\))?\s+)*"
    r"(?:(?:public|private|fileprivate|internal|package|open|static|class|final|override|mutating"
    r"|nonmutating|nonisolated|convenience|required|dynamic|indirect)(?:\([^)]*\))?\s+)*"
)
DECLARATION = re.compile(r"^\s*" + MODIFIERS + r"(func\s+[^\s(<]+|init[?!]?|deinit|subscript)\b")
STRING = re.compile(r'"(?:\\.|[^"\\])*"')


def body_length(lines: list[str], start: int) -> int | None:
    """The number of lines from `start` to the brace that closes the body opened after it."""
    depth = 0
    opened = False
    for index in range(start, len(lines)):
        code = STRING.sub('""', lines[index]).split("//")[0]
        for character in code:
            if character == "{":
                depth += 1
                opened = True
            elif character == "}":
                depth -= 1
        if opened and depth <= 0:
            return index - start + 1
        if not opened and index > start + 20:
            return None  # a protocol requirement: no body
    return None


def long_functions(root: Path, limit: int):
    for path in sorted(root.rglob("*.swift")):
        lines = path.read_text(encoding="utf-8").split("\n")
        for index, line in enumerate(lines):
            match = DECLARATION.match(line)
            if not match:
                continue
            length = body_length(lines, index)
            if length is not None and length > limit:
                name = match.group(1).removeprefix("func").strip()
                yield path, index + 1, name, length


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--limit", type=int, default=100)
    parser.add_argument("folders", nargs="*", default=["Sources"])
    arguments = parser.parse_args()
    failed = False
    for folder in arguments.folders:
        for path, line, name, length in long_functions(Path(folder), arguments.limit):
            allowed = f"{path}:{name}" in ALLOWED
            failed = failed or not allowed
            note = " (a declarative table)" if allowed else ""
            print(f"{path}:{line}: {name} has {length} lines{note}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
