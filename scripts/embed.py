#!/usr/bin/env python3
"""Turn a file into a C array: embed.py INPUT OUTPUT SYMBOL [PROTOCOL_HEADER].

embed.py --zip ZIP OUTPUT SYMBOL PROTOCOL_HEADER FILE...  embeds the Python runner, a package:
its FILEs (kernels/python/runner/*.py) zipped into ZIP, the package's __main__.py at the top
(`python3 runner.zip CHANNEL` runs it) and the others as runner/<name>.py, and that zip as
the C array. The zip is made the same from the same files (entries sorted, fixed times and
modes, stored): a build is reproducible.

With PROTOCOL_HEADER, also write the runner protocol the runner speaks, from its `PROTOCOL = N`
line (the package's __init__.py), as CELLBOX_PROTOCOL and the kernel image tags
CELLBOX_KERNEL_IMAGE(_R): the runner is the one source of the protocol version.

embed.py INPUT OUTPUT SYMBOL --same-protocol-as RUNNER embeds another runner and fails unless
its `PROTOCOL <- N` line says the version of RUNNER's `PROTOCOL = N` (the Python runner's
__init__.py): every runner of a build speaks the protocol the host was built for.

embed.py --join JOINED OUTPUT SYMBOL --same-protocol-as RUNNER FILE...  does the same for a
runner written in parts (kernels/r/runner/NN-name.R): the FILEs joined in the order of their
names into JOINED (runner.R, one script, as it runs), and that embedded. Every part in the
FILEs' directory must be among them.
"""
import io
import os
import re
import sys
import zipfile

ZIP_TIME = (1980, 1, 1, 0, 0, 0)        # the earliest a zip can say


def python_protocol(data, src):
    m = re.search(rb'^PROTOCOL = (\d+)\s*$', data, re.M)
    if not m:
        sys.exit('embed.py: %s has no "PROTOCOL = N" line' % src)
    return int(m.group(1))


def zip_entries(files):
    """(name in the zip, path) of a runner package's files: __main__.py at the top, the rest
    under the package's name (its directory's), sorted."""
    out = []
    for path in files:
        base = os.path.basename(path)
        if not base.endswith('.py'):
            sys.exit('embed.py: %s: the runner package holds .py files only' % path)
        package = os.path.basename(os.path.dirname(os.path.abspath(path)))
        out.append((base if base == '__main__.py' else package + '/' + base, path))
    names = [n for n, _ in out]
    if len(set(names)) != len(names) or '__main__.py' not in names:
        sys.exit('embed.py: the runner package needs one __main__.py and distinct files')
    return sorted(out)


def make_zip(files):
    """The bytes of the runner's zip, the same for the same files."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, 'w', zipfile.ZIP_STORED) as z:
        for name, path in zip_entries(files):
            info = zipfile.ZipInfo(name, ZIP_TIME)
            info.external_attr = 0o100644 << 16
            info.create_system = 3          # unix, whichever system builds it
            with open(path, 'rb') as f:
                z.writestr(info, f.read())
    return buf.getvalue()


def join_parts(parts):
    """A runner written in parts, as one script: the parts in the order of their names."""
    data = b''
    for p in sorted(parts, key=os.path.basename):
        with open(p, 'rb') as f:
            data += f.read()
    return data


def write_c(out, sym, name, data):
    with open(out, 'w') as f:
        f.write('/* Generated from %s by scripts/embed.py. */\n#include <stddef.h>\n' % name)
        f.write('const unsigned char %s[] = {\n' % sym)
        for i in range(0, len(data), 16):
            f.write('  ' + ', '.join('0x%02x' % b for b in data[i:i + 16]) + ',\n')
        f.write('};\nconst size_t %s_len = %d;\n' % (sym, len(data)))


def write_protocol(path, name, n):
    with open(path, 'w') as f:
        f.write('/* Generated from %s by scripts/embed.py: the runner protocol of this build. */\n'
                '#ifndef CELLBOX_PROTOCOL_H\n#define CELLBOX_PROTOCOL_H\n'
                '#define CELLBOX_PROTOCOL %d\n'
                '#define CELLBOX_KERNEL_IMAGE "cellbox-python:p%d"\n'
                '#define CELLBOX_KERNEL_IMAGE_R "cellbox-r:p%d"\n#endif\n' % (name, n, n, n))


def main(argv):
    if len(argv) >= 6 and argv[1] == '--zip':
        zip_path, out, sym, header = argv[2:6]
        files = argv[6:]
        inits = [p for p in files if os.path.basename(p) == '__init__.py']
        if len(inits) != 1:
            sys.exit('embed.py: the runner package needs its __init__.py (PROTOCOL = N)')
        # every module of the package is an input (kernels/meson.build lists them): one left
        # out would be missing from the zip, and its changes would not rebuild it
        package = os.path.dirname(os.path.abspath(inits[0]))
        listed = {os.path.abspath(p) for p in files}
        missing = sorted(n for n in os.listdir(package)
                         if n.endswith('.py') and os.path.join(package, n) not in listed)
        if missing:
            sys.exit('embed.py: %s not among the inputs: list them in kernels/meson.build'
                     % ', '.join(missing))
        with open(inits[0], 'rb') as f:
            n = python_protocol(f.read(), inits[0])
        data = make_zip(files)
        with open(zip_path, 'wb') as f:
            f.write(data)
        name = os.path.basename(zip_path)
        write_c(out, sym, name, data)
        write_protocol(header, name, n)
        return
    if len(argv) >= 8 and argv[1] == '--join' and argv[5] == '--same-protocol-as':
        joined, parts = argv[2], argv[7:]
        part_dir = os.path.dirname(os.path.abspath(parts[0]))
        ext = os.path.splitext(parts[0])[1]
        listed = {os.path.abspath(p) for p in parts}
        missing = sorted(n for n in os.listdir(part_dir)
                         if n.endswith(ext) and os.path.join(part_dir, n) not in listed)
        if missing:
            sys.exit('embed.py: %s not among the parts: list them in kernels/meson.build'
                     % ', '.join(missing))
        data = join_parts(parts)
        with open(joined, 'wb') as f:
            f.write(data)
        argv = [argv[0], joined] + argv[3:7]
    src, out, sym = argv[1:4]
    with open(src, 'rb') as f:
        data = f.read()
    name = src.split('/')[-1]
    if len(argv) > 5 and argv[4] == '--same-protocol-as':
        with open(argv[5], 'rb') as f:
            want = python_protocol(f.read(), argv[5])
        m = re.search(rb'^PROTOCOL <- (\d+)L?\s*$', data, re.M)
        if not m:
            sys.exit('embed.py: %s has no "PROTOCOL <- N" line' % src)
        if int(m.group(1)) != want:
            sys.exit('embed.py: %s speaks protocol %d, %s speaks %d: bring them to the same version'
                     % (src, int(m.group(1)), argv[5], want))
    write_c(out, sym, name, data)
    if len(argv) == 5:
        write_protocol(argv[4], name, python_protocol(data, src))


if __name__ == '__main__':
    main(sys.argv)
