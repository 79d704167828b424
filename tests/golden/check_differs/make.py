"""check_same's notebook with its first stored output changed: --check must see it differ."""
import os, subprocess, sys

subprocess.run([sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..',
                                             'check_same', 'make.py'), sys.argv[1], 'differs'],
               check=True)
