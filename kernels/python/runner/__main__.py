"""The runner's entry point, __main__.py at the top of runner.zip:

    python3 runner.zip CHANNEL_DIR                serve a session (runner.serve)
    python3 runner.zip --zygote FD MODULES        the pool's zygote (runner.zygote): returns
                                                  only in a kernel it forked, which serves
"""

import sys

from runner import serve

if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == "--zygote":
        from runner import zygote
        zygote._zygote(int(sys.argv[2]), sys.argv[3])
    sys.exit(serve.main(sys.argv))
