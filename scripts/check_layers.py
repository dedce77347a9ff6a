#!/usr/bin/env python3
"""Checks upskill's layering (docs/ARCHITECTURE.md): every #include in src/<module>/ and
include/upskill/<module>/ names only its own module or one the module declares it depends on
(src/CMakeLists.txt, upskill_module(... DEPENDS ...), written by CMake to a layers file), a
module's local includes stay in its folder (a subfolder may reach its siblings with ../, never
another module), the declared graph has no cycle, and the module table
in docs/ARCHITECTURE.md says exactly what is declared.

Usage: scripts/check_layers.py --root DIR --layers FILE [--doc FILE]

The layers file has one line a module: "eval: core config llm ...". Prints one line a violation,
"file:line: ..." and exits 1 when there is any; exits 0 when the layering holds, 2 on a usage
error. The build runs it before compiling (a wrong include fails the build) and ctest runs it on
the tree and on a fixture tree that breaks every rule (tests/data/layers).
"""
import argparse
import os
import pathlib
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s+(?:"([^"]+)"|<(upskill/[^>]+)>)')
DOC_BEGIN = "<!-- layers: the modules and what each may include"
DOC_END = "<!-- /layers -->"


def read_layers(path):
    layers = {}
    for n, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip():
            continue
        name, _, deps = line.partition(":")
        if not _:
            sys.exit(f"{path}:{n}: expected 'module: dependencies'")
        layers[name.strip()] = deps.split()
    return layers


def cycles(layers):
    """The first cycle in the declared graph, as a list of modules, else None."""
    state = {}

    def visit(m, path):
        state[m] = 1
        for d in layers.get(m, []):
            if state.get(d) == 1:
                return path[path.index(d):] + [d] if d in path else path + [d]
            if d not in state:
                found = visit(d, path + [d])
                if found:
                    return found
        state[m] = 2
        return None

    for m in layers:
        if m not in state:
            found = visit(m, [m])
            if found:
                return found
    return None


def module_of(root, path):
    rel = path.relative_to(root).parts
    if rel[0] == "src" and len(rel) > 2:
        return rel[1]
    if rel[:2] == ("include", "upskill") and len(rel) > 3:
        return rel[2]
    return None


def own_folder(root, path, module):
    """The folder a module's file belongs to: src/<module>/ or include/upskill/<module>/."""
    rel = path.relative_to(root).parts
    return root / "src" / module if rel[0] == "src" else root / "include" / "upskill" / module


def inside(folder, base, target):
    """Whether `target`, included from a file in `base`, names a file below `folder` (a module's
    subfolders may include one another's headers with ../)."""
    resolved = pathlib.Path(os.path.normpath(base / target))
    return resolved == folder or folder in resolved.parents


def check_files(root, layers):
    problems = []
    files = [p for base in ("src", "include") for p in sorted((root / base).rglob("*"))
             if p.is_file() and p.suffix in (".cpp", ".hpp", ".h", ".in")]
    for path in files:
        module = module_of(root, path)
        rel = path.relative_to(root)
        if module is None:
            problems.append(f"{rel}: outside every module's folder (src/<module>/, "
                            f"include/upskill/<module>/)")
            continue
        if module not in layers:
            problems.append(f"{rel}: module '{module}' is not declared in src/CMakeLists.txt "
                            f"(upskill_module)")
            continue
        allowed = set(layers[module]) | {module}
        for n, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            m = INCLUDE.match(line)
            if not m:
                continue
            target = m.group(1) or m.group(2)
            if target.startswith("upskill/"):
                parts = target.split("/")
                other = parts[1] if len(parts) > 2 else None
                if other is None or other not in layers:
                    problems.append(f"{rel}:{n}: includes {target}, which is in no module")
                elif other not in allowed:
                    declared = " ".join(layers[module]) or "nothing"
                    problems.append(f"{rel}:{n}: {module} includes {target}, but {module} does "
                                    f"not depend on {other} (declared: {declared})")
            elif ".." in pathlib.PurePosixPath(target).parts and \
                    not inside(own_folder(root, path, module), path.parent, target):
                problems.append(f"{rel}:{n}: includes {target}: a module's local includes stay "
                                f"in its folder; include another module as \"upskill/...\"")
    return problems


def check_doc(doc, layers):
    text = doc.read_text()
    begin, end = text.find(DOC_BEGIN), text.find(DOC_END)
    if begin < 0 or end < begin:
        return [f"{doc}: no module table between '{DOC_BEGIN} …' and '{DOC_END}'"]
    documented = {}
    for line in text[begin:end].splitlines()[1:]:
        m = re.match(r"^\|\s*`([a-z_]+)`\s*\|\s*(.*?)\s*\|$", line)
        if m:
            documented[m.group(1)] = re.findall(r"`([a-z_]+)`", m.group(2))
    problems = []
    for name in sorted(set(layers) | set(documented)):
        want, have = sorted(layers.get(name, [])), sorted(documented.get(name, []))
        if name not in documented:
            problems.append(f"{doc}: module '{name}' is missing from the module table")
        elif name not in layers:
            problems.append(f"{doc}: the module table lists '{name}', which is not declared")
        elif want != have:
            have_text, want_text = " ".join(have) or "nothing", " ".join(want) or "nothing"
            problems.append(f"{doc}: the module table says {name} may include {have_text}, the "
                            f"build declares {want_text}")
    return problems


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", required=True, type=pathlib.Path)
    ap.add_argument("--layers", required=True, type=pathlib.Path)
    ap.add_argument("--doc", type=pathlib.Path)
    args = ap.parse_args()
    root = args.root.resolve()
    layers = read_layers(args.layers)
    problems = []
    for name, deps in layers.items():
        for d in deps:
            if d not in layers:
                problems.append(f"{args.layers}: {name} depends on '{d}', which is not declared")
    cycle = cycles(layers)
    if cycle:
        problems.append(f"{args.layers}: the declared dependencies have a cycle: "
                        + " -> ".join(cycle))
    problems += check_files(root, layers)
    if args.doc:
        problems += check_doc(args.doc, layers)
    for p in problems:
        print(p)
    if problems:
        print(f"check_layers: {len(problems)} problem(s); modules may include only themselves and "
              f"what they declare (src/CMakeLists.txt, docs/ARCHITECTURE.md)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
