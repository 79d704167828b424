#!/usr/bin/env python3
"""Checks of the tree's structure: structure.py CHECK, printing TAP.

  includes       the engine's modules include each other without a circle (a module is
                 name.c + name.h; an edge is one module including another's header)
  backend_names  no code outside engine/backend*.c decides by a backend's name
"""
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)\.h"', re.M)


def sources(*dirs):
    for d in dirs:
        for name in sorted(os.listdir(os.path.join(ROOT, d))):
            if name.endswith(('.c', '.h')):
                yield os.path.join(d, name)


def read(rel):
    with open(os.path.join(ROOT, rel), encoding='utf-8') as f:
        return f.read()


def module_graph():
    """Module -> the modules whose headers it includes (engine/ only)."""
    graph = {}
    for rel in sources('engine'):
        mod = os.path.splitext(os.path.basename(rel))[0]
        deps = graph.setdefault(mod, set())
        for dep in INCLUDE.findall(read(rel)):
            dep = os.path.basename(dep)
            if dep != mod and os.path.exists(os.path.join(ROOT, 'engine', dep + '.h')):
                deps.add(dep)
    return graph


def cycles(graph):
    """The strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def check_includes():
    found = cycles(module_graph())
    for comp in found:
        print('# circle: ' + ' <-> '.join(comp))
    return not found


NAME_TEST = re.compile(r'str(?:n?case)?n?cmp\s*\([^;]*"(local|docker|podman)"')


def check_backend_names():
    ok = True
    for rel in sources('engine', 'tui'):
        if os.path.basename(rel).startswith('backend'):
            continue
        for n, line in enumerate(read(rel).split('\n'), 1):
            if NAME_TEST.search(line):
                print('# %s:%d: %s' % (rel, n, line.strip()))
                ok = False
    return ok


CHECKS = {'includes': check_includes, 'backend_names': check_backend_names}

if __name__ == '__main__':
    names = sys.argv[1:] or sorted(CHECKS)
    ok = True
    for i, name in enumerate(names, 1):
        good = CHECKS[name]()
        print('%sok %d - %s' % ('' if good else 'not ', i, name))
        ok &= good
    print('1..%d' % len(names))
    sys.exit(0 if ok else 1)
