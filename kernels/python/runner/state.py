"""The runner's settings, its mutable state (_S, one runner per process) and its log.

Every other module of the runner reads these; this one imports none of them.
"""

import os
import threading
import time
import traceback

CHUNK = 65536                # max characters of text in one stream event
FLUSH_DELAY = 0.02           # stream batching window (seconds)
CHANNEL_CHECK = 1.0          # how often an idle runner checks that its channel still exists
POLL_FALLBACK = 0.01         # command scan interval when inotify is not available
SPIN = 0.0003                # after a done, look for the next command this long awake ...
SPIN_GAP = 0.002             # ... while commands come this soon after the done before them
LOG_MAX = 1 << 20            # bytes of diagnostics the runner writes to its log
RESERVE = 8 << 20            # memory held back to get out of a MemoryError in the runner
INLINE = "module://matplotlib_inline.backend_inline"   # IPython's inline backend, as ipykernel
BACKEND = "module://cellbox_mpl"                        # fallback when matplotlib_inline is missing
# ipykernel's words, for a session that cannot answer input (a one-shot or batch run)
NO_STDIN_MSG = "raw_input was called, but this frontend does not support input requests."
PNG_SIG = b"\x89PNG\r\n\x1a\n"
PLOTLY_MIME = "application/vnd.plotly.v1+json"
MEMO_TEXT = 4096             # cells up to this long have their static transform and hash kept
MEMO_MAX = 256               # ... this many of them (then the memo starts again)
ARTIFACT_MAX = 256 << 20     # a saved figure bigger than this is not copied to the channel
# the kernelspec Jupyter writes for this kernel, and ipykernel's language_info
KERNELSPEC = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}

_monotonic = time.monotonic
_get_ident = threading.get_ident
_MAIN = _get_ident()


class _S:
    """Mutable runner state (one runner per process)."""
    channel = ""
    cmd_dir = ""
    res_dir = ""
    cmd_fd = -1                 # descriptors on the two: a name opened there is one lookup
    res_fd = -1
    plot_dir = ""
    channel_ino = None
    log_fd = 2
    out_fd = -1              # results/<id>.jsonl of the request being served, -1 when idle
    req_id = None
    allow_stdin = False
    executing = False        # SIGINT raises KeyboardInterrupt only while this is true
    forked = False           # true in a child made by os.fork() from user code
    critical = 0             # >0: the main thread is writing an event; defer KeyboardInterrupt
    pending_int = False
    plot_n = 0
    inline = False           # matplotlib uses IPython's inline backend (else cellbox_mpl)
    shell = None
    libc = None
    ino_fd = -1
    ino_poll = None
    wake_fd = -1             # stdin, when the host wakes us with a byte per command
    last_check = 0.0
    pending = set()          # command file names (<id>.json) waiting to be served
    done_at = 0.0            # when the last request was served (0: a command came since)
    spin = True              # the last command came within SPIN_GAP of the done before it
    served = set()           # ... and those served (the host removes them; we cannot)
    input_n = 0              # input requests of the request being served
    input_interrupted = False    # ... one of them, a debugger's, was interrupted
    log_bytes = 0
    reserve = None           # RESERVE bytes, let go of when the runner itself runs out
    fifo_fd = -1             # host/wake, the FIFO, where neither inotify nor stdin wakes us
    pandas_width = None      # the display.width the runner gave pandas (from COLUMNS)
    zygote_fds = set()       # in a zygote: the descriptors its imports opened


# --------------------------------------------------------------------------------------------
# logging (the runner's own diagnostics go to the original stderr, i.e. <channel>/log)


def _use_channel(channel):
    """Serve channel directory `channel` (kernels/PROTOCOL.md): its paths, the kernel part's
    results/ and plots/ made, the directories read from opened once."""
    _S.channel = channel
    _S.kernel_dir = os.path.join(channel, "kernel")
    _S.cmd_dir = os.path.join(channel, "host", "commands")
    _S.res_dir = os.path.join(_S.kernel_dir, "results")
    _S.plot_dir = os.path.join(_S.kernel_dir, "plots")
    for d in (_S.res_dir, _S.plot_dir):
        os.makedirs(d, exist_ok=True)
    _S.cmd_fd = os.open(_S.cmd_dir, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    _S.res_fd = os.open(_S.res_dir, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    _S.channel_ino = os.stat(_S.kernel_dir).st_ino


def _log(msg):
    """Write to the log, at most LOG_MAX bytes in all (then one line saying so)."""
    try:
        if _S.log_bytes >= LOG_MAX:
            return
        if not msg.endswith("\n"):
            msg += "\n"
        data = msg.encode("utf-8", "replace")
        if _S.log_bytes + len(data) >= LOG_MAX:
            data = data[:max(0, LOG_MAX - _S.log_bytes - 80)] + (
                b"\ncellbox runner: log capped at %d bytes; later diagnostics dropped\n" % LOG_MAX)
        _S.log_bytes += len(data)
        _write_all(_S.log_fd, data)
    except BaseException:
        pass


def _log_exc(context):
    _log("cellbox runner: %s\n%s" % (context, traceback.format_exc()))


def _write_all(fd, data):
    n = os.write(fd, data)
    while n < len(data):            # only on short writes (disk full, ...): rare
        data = data[n:]
        n = os.write(fd, data)


def _read_file(path, dir_fd=None):
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC, dir_fd=dir_fd)
    try:
        data = os.read(fd, 65536)       # (a bigger buffer costs an mmap + munmap)
        if len(data) == 65536:
            parts = [data]
            while True:
                more = os.read(fd, 1 << 20)
                if not more:
                    break
                parts.append(more)
            data = b"".join(parts)
    finally:
        os.close(fd)
    return data


class RequestError(ValueError):
    """A request the runner cannot serve (malformed, unknown kind, bad field)."""
