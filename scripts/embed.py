#!/usr/bin/env python3
"""Turn a file into a C array: embed.py INPUT OUTPUT SYMBOL [PROTOCOL_HEADER].

With PROTOCOL_HEADER, also write the runner protocol that INPUT (a runner) speaks, from its
`PROTOCOL = N` line, as CELLBOX_PROTOCOL and the kernel image tags CELLBOX_KERNEL_IMAGE(_R): the
runner is the one source of the protocol version.

embed.py INPUT OUTPUT SYMBOL --same-protocol-as RUNNER embeds another runner (runner.R) and
fails unless its `PROTOCOL <- N` line says the version of RUNNER's `PROTOCOL = N` (runner.py):
every runner of a build speaks the protocol the host was built for.
"""
import re
import sys


def python_protocol(data, src):
    m = re.search(rb'^PROTOCOL = (\d+)\s*$', data, re.M)
    if not m:
        sys.exit('embed.py: %s has no "PROTOCOL = N" line' % src)
    return int(m.group(1))


src, out, sym = sys.argv[1:4]
data = open(src, 'rb').read()
name = src.split('/')[-1]
if len(sys.argv) > 5 and sys.argv[4] == '--same-protocol-as':
    want = python_protocol(open(sys.argv[5], 'rb').read(), sys.argv[5])
    m = re.search(rb'^PROTOCOL <- (\d+)L?\s*$', data, re.M)
    if not m:
        sys.exit('embed.py: %s has no "PROTOCOL <- N" line' % src)
    if int(m.group(1)) != want:
        sys.exit('embed.py: %s speaks protocol %d, %s speaks %d: bring them to the same version'
                 % (src, int(m.group(1)), sys.argv[5], want))
with open(out, 'w') as f:
    f.write('/* Generated from %s by scripts/embed.py. */\n#include <stddef.h>\n' % name)
    f.write('const unsigned char %s[] = {\n' % sym)
    for i in range(0, len(data), 16):
        f.write('  ' + ', '.join('0x%02x' % b for b in data[i:i + 16]) + ',\n')
    f.write('};\nconst size_t %s_len = %d;\n' % (sym, len(data)))
if len(sys.argv) == 5:
    n = python_protocol(data, src)
    with open(sys.argv[4], 'w') as f:
        f.write('/* Generated from %s by scripts/embed.py: the runner protocol of this build. */\n'
                '#ifndef CELLBOX_PROTOCOL_H\n#define CELLBOX_PROTOCOL_H\n'
                '#define CELLBOX_PROTOCOL %d\n'
                '#define CELLBOX_KERNEL_IMAGE "cellbox-python:p%d"\n'
                '#define CELLBOX_KERNEL_IMAGE_R "cellbox-r:p%d"\n#endif\n' % (name, n, n, n))
