#!/usr/bin/python3
"""`cellbox run` draws a plot in Debian's kitty (the kitty graphics protocol) under Xvfb with
Mesa's software OpenGL: the plot's pixels checked on a screenshot (runshot.py). Needs: xvfb
kitty x11-apps imagemagick python3-pil (scripts/bootstrap --tests); exits 77 without them.

    CELLBOX_BIN=build/tui/cellbox tests/screenshot/test_kitty.py [SHOT.png]
"""
import sys

import runshot

if __name__ == '__main__':
    sys.exit(runshot.main('kitty', *sys.argv[1:2]))
