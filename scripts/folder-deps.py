#!/usr/bin/env python3
"""Which folders of Sources/AuthGateway use which, and every cycle among them.

For every folder `Sources/AuthGateway/<folder>` it collects the names the folder declares:
its top-level (non-private) `struct`, `class`, `enum`, `protocol`, `actor`, `typealias`,
`func`, `let` and `var` names, and the members it adds in an `extension` of a type declared
in another folder (`extension MetricKey { static func x }` in Auth makes `.x` an Auth name,
unless another folder declares something named `x` too: a name alone cannot tell them apart).
Then it looks for those names, as whole words (extension members as `.name`), in the other
folders' files, comments and string literals removed. A folder uses another when one of its
files names one of the other's declarations.

A cycle is any set of folders that reach each other through uses, however long the path
(a strongly connected component of the use graph, Tarjan's algorithm): `Auth -> Upstream ->
Forwarding -> Auth` is one, not only pairs that use each other. Prints every such component
with one cycle through it, each step naming the declarations behind the use. Exit status 1
when there is one, else 0.

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

    components = strongly_connected(sorted(sources), uses)
    for component in components:
        cycle = one_cycle(component, uses)
        print(" -> ".join(cycle + [cycle[0]]) + f"   (folders in the cycle: {', '.join(component)})")
        for a, b in zip(cycle, cycle[1:] + cycle[:1]):
            print(f"  {a} -> {b}: {', '.join(sorted(uses[a][b]))}")
    if components:
        print(f"{len(components)} cycle(s) among folders")
    else:
        print("no cycle among folders")
    return 1 if components else 0


def strongly_connected(nodes, uses):
    """The components of more than one folder (Tarjan), each sorted, in a stable order."""
    index, low, on_stack, stack, result = {}, {}, set(), [], []
    counter = [0]

    def visit(node):
        index[node] = low[node] = counter[0]
        counter[0] += 1
        stack.append(node)
        on_stack.add(node)
        for other in sorted(n for n, names in uses[node].items() if names):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                result.append(sorted(component))

    for node in nodes:
        if node not in index:
            visit(node)
    return sorted(result)


def one_cycle(component, uses):
    """A shortest cycle through the component's first folder (breadth first)."""
    members = set(component)
    start = component[0]
    previous = {start: None}
    queue = [start]
    while queue:
        node = queue.pop(0)
        for other in sorted(n for n, names in uses[node].items() if names and n in members):
            if other == start:
                path = [node]
                while previous[path[-1]] is not None:
                    path.append(previous[path[-1]])
                return list(reversed(path))
            if other not in previous:
                previous[other] = node
                queue.append(other)
    return component

if __name__ == "__main__":
    sys.exit(main())
