#!/usr/bin/python3
"""The full-screen UI in xterm -ti vt340 (sixel) under Xvfb: the plot drawn, gone when
scrolled away, cropped one page back, hidden under the help pager (tuishot.py). Needs: xvfb
xterm x11-apps imagemagick python3-pil; exits 77 without them.

    CELLBOX_BIN=build/tui/cellbox tests/screenshot/test_xterm_sixel_tui.py [SHOT-PREFIX]
"""
import sys

import tuishot

if __name__ == '__main__':
    sys.exit(tuishot.main('xterm', *sys.argv[1:2], marker=b'\x1bPq'))
