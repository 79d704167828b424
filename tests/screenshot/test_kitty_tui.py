#!/usr/bin/python3
"""The full-screen UI in kitty under Xvfb (kitty placements, moved and deleted by id): the
plot drawn, gone when scrolled away, cropped one page back, hidden under the help pager
(tuishot.py). Needs: xvfb kitty x11-apps imagemagick python3-pil; exits 77 without them.

    CELLBOX_BIN=build/tui/cellbox tests/screenshot/test_kitty_tui.py [SHOT-PREFIX]
"""
import sys

import tuishot

if __name__ == '__main__':
    sys.exit(tuishot.main('kitty', *sys.argv[1:2], marker=b'\x1b_Ga=p,'))
