#!/usr/bin/python3
"""`cellbox run` draws a plot in Debian's xterm as a VT340 (sixel) under Xvfb: the plot's
pixels checked on a screenshot (runshot.py). Needs: xvfb xterm x11-apps imagemagick
python3-pil (scripts/bootstrap --tests); exits 77 (a skip) without them.

    CELLBOX_BIN=build/tui/cellbox tests/screenshot/test_xterm_sixel.py [SHOT.png]
"""
import sys

import runshot

if __name__ == '__main__':
    sys.exit(runshot.main('xterm', *sys.argv[1:2]))
