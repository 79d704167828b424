#!/usr/bin/env python3
"""Turn a file into a C array: embed.py INPUT OUTPUT SYMBOL."""
import sys

src, out, sym = sys.argv[1:4]
data = open(src, 'rb').read()
with open(out, 'w') as f:
    f.write('/* Generated from %s by scripts/embed.py. */\n#include <stddef.h>\n' % src.split('/')[-1])
    f.write('const unsigned char %s[] = {\n' % sym)
    for i in range(0, len(data), 16):
        f.write('  ' + ', '.join('0x%02x' % b for b in data[i:i + 16]) + ',\n')
    f.write('};\nconst size_t %s_len = %d;\n' % (sym, len(data)))
