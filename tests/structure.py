#!/usr/bin/env python3
"""Checks of the tree's structure: structure.py CHECK, printing TAP.

  includes       the engine's modules include each other without a circle (a module is
                 name.c + name.h; an edge is one module including another's header)
  backend_names  no code outside engine/backend*.c decides by a backend's name
  folders        tui/ holds its entry point and one folder per part (cli, ui, mcp, kernel,
                 graphics);
                 no C file under tui/ or engine/ is over 700 lines
  floors         the floors cli -> {ui, mcp, kernel} -> graphics -> engine: no file includes a
                 header of a floor above its own, and ui, mcp and kernel never include each
                 other
  calls          no file calls a function defined on a floor above its own (or across ui, mcp
                 and kernel)
  parts          a module split into files (name.c and name_*.c in one folder) is a main file
                 that calls its parts: a part never calls a function defined in name.c
  names          every global function carries its file's prefix: in name_part.c, name_* or
                 name_part_* (alloc.c's x* wrappers, xmalloc ..., are git's names, kept)

A "floor" is a folder: tui/cli, tui/ui, tui/mcp, tui/kernel, tui/graphics, engine (tui/main.c
is above them all). The checks read the sources as text (comments and strings blanked first), so a
step back up fails CI before anyone reads the code.
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
    for rel in floor_sources():
        if os.path.basename(rel).startswith('backend'):
            continue
        for n, line in enumerate(read(rel).split('\n'), 1):
            if NAME_TEST.search(line):
                print('# %s:%d: %s' % (rel, n, line.strip()))
                ok = False
    return ok


# ---- folders and floors --------------------------------------------------------------------

PARTS = ('cli', 'ui', 'mcp', 'kernel', 'graphics')
# Rank of each floor: a file may use its own floor and those of lower rank; ui, mcp and kernel
# share a rank and may not use each other.
RANK = {'main': 5, 'cli': 4, 'ui': 3, 'mcp': 3, 'kernel': 3, 'graphics': 2, 'engine': 1}
MAX_LINES = 700


def floor_of(rel):
    parts = rel.split(os.sep)
    if parts[0] == 'engine':
        return 'engine'
    if parts[0] == 'tui' and len(parts) == 2:
        return 'main'
    if parts[0] == 'tui' and parts[1] in PARTS:
        return parts[1]
    return None


def floor_sources():
    for d in ['engine', 'tui'] + ['tui/' + p for p in PARTS]:
        if os.path.isdir(os.path.join(ROOT, d)):
            yield from sources(d)


def may_use(user, used):
    if user == used:
        return True
    if RANK[user] == RANK[used]:
        return False    # ui, mcp and kernel: side by side, never each other
    return RANK[used] < RANK[user]


def check_folders():
    ok = True
    for p in PARTS:
        if not os.path.isdir(os.path.join(ROOT, 'tui', p)):
            print('# tui/%s is missing' % p)
            ok = False
    for name in sorted(os.listdir(os.path.join(ROOT, 'tui'))):
        if name.endswith(('.c', '.h')) and name != 'main.c':
            print('# tui/%s: tui/ holds only its entry point (main.c); parts go in %s'
                  % (name, ', '.join('tui/' + p for p in PARTS)))
            ok = False
    for rel in floor_sources():
        if rel.endswith('.c'):
            n = read(rel).count('\n')
            if n > MAX_LINES:
                print('# %s: %d lines (over %d: split it)' % (rel, n, MAX_LINES))
                ok = False
    return ok


def header_floors():
    """Header name -> its floor."""
    out = {}
    for rel in floor_sources():
        if rel.endswith('.h'):
            out[os.path.basename(rel)] = floor_of(rel)
    return out


def check_floors():
    heads = header_floors()
    ok = True
    for rel in floor_sources():
        me = floor_of(rel)
        for n, line in enumerate(read(rel).split('\n'), 1):
            m = INCLUDE.match(line)
            if not m:
                continue
            used = heads.get(os.path.basename(m.group(1)) + '.h')
            if used and not may_use(me, used):
                print('# %s:%d: the %s floor includes %s.h of the %s floor'
                      % (rel, n, me, m.group(1), used))
                ok = False
    return ok


BLANK = re.compile(r'/\*.*?\*/|//[^\n]*|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', re.S)
DEFINITION = re.compile(r'^(?!static\b)[A-Za-z_][\w \t*]*?\b([A-Za-z_]\w*)\s*\([^;{]*\)\s*\{',
                        re.M)
CALL = re.compile(r'(?<![.>\w])([A-Za-z_]\w*)\s*\(')


def code_of(rel):
    """The file's text with comments, strings and characters blanked (lines kept)."""
    return BLANK.sub(lambda m: '\n' * m.group(0).count('\n'), read(rel))


def definitions():
    """Global function -> the file that defines it."""
    out = {}
    for rel in floor_sources():
        if rel.endswith('.c'):
            for m in DEFINITION.finditer(code_of(rel)):
                out.setdefault(m.group(1), rel)
    return out


STATIC = re.compile(r'^static\b[\w \t*]*?\b([A-Za-z_]\w*)\s*\(', re.M)


def calls_of(rel):
    """(line, name) of each call in a file of a function it does not define itself."""
    text = code_of(rel)
    own = set(STATIC.findall(text)) | {m.group(1) for m in DEFINITION.finditer(text)}
    for m in CALL.finditer(text):
        if m.group(1) not in own:
            yield text.count('\n', 0, m.start()) + 1, m.group(1)


def check_calls():
    defs = definitions()
    ok = True
    for rel in floor_sources():
        if not rel.endswith('.c'):
            continue
        me = floor_of(rel)
        for n, name in calls_of(rel):
            where = defs.get(name)
            if where and not may_use(me, floor_of(where)):
                print('# %s:%d: the %s floor calls %s() of %s' % (rel, n, me, name, where))
                ok = False
    return ok


def check_parts():
    defs = definitions()
    ok = True
    for rel in floor_sources():
        d, base = os.path.split(rel)
        if not rel.endswith('.c') or '_' not in base:
            continue
        main = None
        stem = base[:-2]
        while '_' in stem:	# the longest name.c this part belongs to
            stem = stem.rsplit('_', 1)[0]
            if os.path.exists(os.path.join(ROOT, d, stem + '.c')):
                main = os.path.join(d, stem + '.c')
                break
        if not main:
            continue
        for n, name in calls_of(rel):
            if defs.get(name) == main:
                print('# %s:%d: a part of %s calls %s() back in it' % (rel, n, main, name))
                ok = False
    return ok


# alloc.c's wrappers keep the names every C programmer reads as "allocate or abort".
NAME_EXCEPTIONS = {'engine/alloc.c': re.compile(r'^x[a-z]+$')}


def check_names():
    ok = True
    for rel in floor_sources():
        if not rel.endswith('.c'):
            continue
        parts = os.path.basename(rel)[:-2].split('_')
        prefixes = ['_'.join(parts[:i]) for i in range(1, len(parts) + 1)]
        allowed = NAME_EXCEPTIONS.get(rel)
        for m in DEFINITION.finditer(code_of(rel)):
            name = m.group(1)
            if name == 'main' or (allowed and allowed.match(name)):
                continue
            if not any(name == p or name.startswith(p + '_') for p in prefixes):
                print('# %s: %s() is global but does not start with %s_' %
                      (rel, name, ' or '.join(prefixes[::-1])))
                ok = False
    return ok


CHECKS = {'includes': check_includes, 'backend_names': check_backend_names,
          'folders': check_folders, 'floors': check_floors, 'calls': check_calls,
          'parts': check_parts, 'names': check_names}

if __name__ == '__main__':
    names = sys.argv[1:] or sorted(CHECKS)
    ok = True
    for i, name in enumerate(names, 1):
        good = CHECKS[name]()
        print('%sok %d - %s' % ('' if good else 'not ', i, name))
        ok &= good
    print('1..%d' % len(names))
    sys.exit(0 if ok else 1)
