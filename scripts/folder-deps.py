#!/usr/bin/env python3
"""Which folders of Sources/AuthGateway use which, and the pairs that use each other.

For every folder `Sources/AuthGateway/<folder>` it collects the names the folder declares:
its top-level (non-private) `struct`, `class`, `enum`, `protocol`, `actor`, `typealias`,
`func`, `let` and `var` names, and the members it adds in an `extension` of a type declared
in another folder (`extension MetricKey { static func x }` in Auth makes `.x` an Auth name,
unless another folder declares something named `x` too: a name alone cannot tell them apart).
Then it looks for those names, as whole words (extension members as `.name`), in the other
folders' files, comments and string literals removed. A folder uses another when one of its
files names one of the other's declarations.

Prints every pair of folders that use each other (a cycle of length 2) with, for each
direction, the names that make the use. Exit status 1 when there is such a pair, else 0.

    scripts/folder-deps.py            # the cycles
    scripts/folder-deps.py --graph    # and every folder's uses
    scripts/folder-deps.py --root DIR # another source root (default Sources/AuthGateway)
"""
import argparse
import os
import re
import sys
from collections import defaultdict

ATTRIBUTES = r"(?:@[\w.]+(?:\([^)]*\))?\s+)*"
MODIFIERS = r"(?:(?:public|package|internal|final|open|indirect|nonisolated|static|mutating|override|convenience|required|lazy|weak|unowned|dynamic|@\w+)\s+)*"
TOP_DECL = re.compile(r"^" + ATTRIBUTES + r"(?P<mods>(?:(?:public|package|internal|fileprivate|private|final|open|indirect|nonisolated)\s+)*)"
                      r"(?P<kind>struct|class|enum|protocol|actor|typealias|func|let|var)\s+(?P<name>`?[A-Za-z_]\w*`?)")
EXTENSION = re.compile(r"^" + ATTRIBUTES + r"(?:(?:public|package|internal|fileprivate|private)\s+)?extension\s+(?P<name>[A-Za-z_][\w.]*)")
MEMBER_DECL = re.compile(r"^\s{4}" + ATTRIBUTES + r"(?P<mods>(?:(?:public|package|internal|fileprivate|private|final|open|nonisolated|static|mutating|override|convenience|required|lazy|class)\s+)*)"
                         r"(?P<kind>func|var|let|struct|class|enum|typealias)\s+(?P<name>[A-Za-z_]\w*)")
ANY_DECL = re.compile(r"\b(?:func|var|let|case)\s+(?P<name>[A-Za-z_]\w*)")
STRING = re.compile(r'"(?:[^"\\\n]|\\.)*"')


def strip_code(text):
    """The text without comments, multi-line strings and string literals (line breaks kept)."""
    out = []
    i = 0
    n = len(text)
    while i < n:
        if text.startswith('"""', i):
            end = text.find('"""', i + 3)
            end = n if end < 0 else end + 3
            out.append("\n" * text.count("\n", i, end))
            i = end
        elif text.startswith("//", i):
            end = text.find("\n", i)
            i = n if end < 0 else end
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = n if end < 0 else end + 2
            out.append("\n" * text.count("\n", i, end))
            i = end
        elif text[i] == '"':
            match = STRING.match(text, i)
            if match:
                out.append('""')
                i = match.end()
            else:
                out.append(text[i])
                i += 1
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def folders(root):
    result = {}
    for entry in sorted(os.listdir(root)):
        path = os.path.join(root, entry)
        if not os.path.isdir(path):
            continue
        files = []
        for directory, _, names in os.walk(path):
            files += [os.path.join(directory, name) for name in sorted(names) if name.endswith(".swift")]
        result[entry] = {file: strip_code(open(file, encoding="utf-8").read()) for file in files}
    return result


def declarations(sources):
    """(top-level names, extension member names) one folder declares."""
    top, extended = set(), defaultdict(set)
    for text in sources.values():
        current_extension = None
        for line in text.split("\n"):
            if line and not line[0].isspace():
                current_extension = None
                match = TOP_DECL.match(line)
                if match and "private" not in match.group("mods"):
                    top.add(match.group("name").strip("`"))
                    continue
                match = EXTENSION.match(line)
                if match:
                    current_extension = match.group("name").split(".")[0]
                continue
            if current_extension:
                match = MEMBER_DECL.match(line)
                if match and "private" not in match.group("mods"):
                    extended[current_extension].add(match.group("name"))
    return top, extended


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "Sources", "AuthGateway"))
    parser.add_argument("--graph", action="store_true", help="also print every folder's uses")
    arguments = parser.parse_args()
    root = os.path.normpath(arguments.root)
    sources = folders(root)

    top, extended = {}, {}
    for folder, files in sources.items():
        top[folder], extended[folder] = declarations(files)
    owner = defaultdict(set)
    for folder, names in top.items():
        for name in names:
            owner[name].add(folder)
    # Extension members count for the extending folder only when the extended type is another folder's.
    members = {}
    for folder, by_type in extended.items():
        names = set()
        for type_name, member_names in by_type.items():
            if owner.get(type_name) and folder not in owner[type_name]:
                names |= member_names
        members[folder] = names - top[folder]
    # An extension member whose name another folder also declares (a member, a local: `bytes`)
    # cannot be told apart by name: it does not count.
    local = {folder: {m.group("name") for text in files.values() for m in ANY_DECL.finditer(text)} for folder, files in sources.items()}
    for folder in members:
        members[folder] = {name for name in members[folder] if not any(name in local[other] for other in sources if other != folder)}

    patterns = {}
    for folder in sources:
        parts = [re.escape(name) for name in sorted(top[folder], key=len, reverse=True)]
        member_parts = [re.escape(name) for name in sorted(members[folder], key=len, reverse=True)]
        alternatives = []
        if parts:
            alternatives.append(r"(?<![\w.])(?:" + "|".join(parts) + r")\b|(?<=[^\w.]\.)(?:" + "|".join(parts) + r")\b")
        if member_parts:
            alternatives.append(r"(?<=\.)(?:" + "|".join(member_parts) + r")\b")
        patterns[folder] = re.compile("|".join(alternatives)) if alternatives else None

    # uses[a][b]: names of b that a's files use.
    uses = defaultdict(lambda: defaultdict(set))
    for user, files in sources.items():
        for used, pattern in patterns.items():
            if used == user or pattern is None:
                continue
            for text in files.values():
                for match in pattern.finditer(text):
                    name = match.group(0)
                    # A name the user folder declares itself is its own (same-named declarations).
                    if name in top[user]:
                        continue
                    uses[user][used].add(name)

    if arguments.graph:
        for user in sorted(sources):
            print(f"{user} uses: " + (", ".join(sorted(uses[user])) or "nothing"))
        print()

    cycles = []
    names = sorted(sources)
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            if uses[a].get(b) and uses[b].get(a):
                cycles.append((a, b))
    for a, b in cycles:
        print(f"{a} <-> {b}")
        print(f"  {a} -> {b}: {', '.join(sorted(uses[a][b]))}")
        print(f"  {b} -> {a}: {', '.join(sorted(uses[b][a]))}")
    print(f"{len(cycles)} pair(s) of folders use each other" if cycles else "no pair of folders uses each other")
    return 1 if cycles else 0


if __name__ == "__main__":
    sys.exit(main())
