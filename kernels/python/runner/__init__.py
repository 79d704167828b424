"""cellbox runner: serves one persistent IPython session through a channel directory.

Usage: python3 runner.zip CHANNEL_DIR

The host (cellbox) writes requests as CHANNEL_DIR/host/commands/<id>.json (the host's part of the
channel: read-only here) and reads the events of each request from
CHANNEL_DIR/kernel/results/<id>.jsonl (the kernel's part).  kernels/PROTOCOL.md (in the
cellbox sources) is the contract.  This package is embedded into the cellbox executable as one
zip (scripts/embed.py: its __main__.py, then runner/*.py), which the kernel's python runs; it
uses only the standard library and IPython (matplotlib is imported only by user code).

How it works:
- The main thread serves requests one at a time (inotify on commands/ through ctypes, or a byte on
  stdin per command where inotify does not see the host's writes (gVisor), polling when neither
  is available) and runs cells with InteractiveShell.run_cell.  While commands come within
  SPIN_GAP of the done before them, it looks for the next one awake for SPIN after a done.
- sys.stdout / sys.stderr are replaced by writers that batch text into stream events.  Fds 1
  and 2 are pipes (the original stderr is kept as the log fd); a reader thread turns what child
  processes and C code write there into stream events too.  Both paths feed one ordered buffer,
  and a Python-level write first takes what is already in the pipes, so `print(); os.system();
  print()` keeps its order.  A flusher thread sends batched text within FLUSH_DELAY.
- SIGINT raises KeyboardInterrupt only while a request runs user code, and never in the middle
  of writing an event (it is deferred to the end of that write): no half lines, no lost done.

The modules, one job each (none imports serve, which calls them all):
    __main__  the entry point, at the top of the zip: a runner, or the pool's zygote
    serve     the main module: start-up, the main loop, serving a request up to its done
    state     the settings, the runner's state (_S) and its log
    events    writing events: the ordered stream buffer, the flusher, SIGINT held off
    capture   sys.stdout / sys.stderr and fds 1, 2 captured as stream events
    waiting   waiting for commands: inotify, stdin, the wake FIFO, polling; the channel check
    plots     plots and artifacts: images, matplotlib's fallback backend, savefig, plotly
    shell     IPython's shell as the runner runs cells in it; pandas' width
    requests  the request kinds (execute, complete, ...) and input()
    guard     the security policy's import hook
    zygote    the pool's zygote, which forks kernels
    bridge    another Jupyter kernel served through the channel (CELLBOX_BRIDGE=NAME)
"""

# The runner protocol this runner speaks: the one source of the version (scripts/embed.py makes
# protocol.h from this line and checks runner.R's against it).
PROTOCOL = 2
