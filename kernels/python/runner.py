"""cellbox runner: serves one persistent IPython session through a channel directory.

Usage: python3 runner.py CHANNEL_DIR

The host (cellbox) writes requests as CHANNEL_DIR/host/commands/<id>.json (the host's part of the
channel: read-only here) and reads the events of each request from
CHANNEL_DIR/kernel/results/<id>.jsonl (the kernel's part).  kernels/PROTOCOL.md (in the
cellbox sources) is the contract; this file is embedded into the cellbox executable and must stay a single
module using only the standard library and IPython (matplotlib is imported only by user code).

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
"""

import builtins
import codecs
import io
import json
import os
import select
import signal
import struct
import sys
import threading
import time
import traceback

PROTOCOL = 2
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
NO_STDIN_MSG = ("input() was called but this session cannot answer input requests "
                "(one-shot or batch run)")
PNG_SIG = b"\x89PNG\r\n\x1a\n"
PLOTLY_MIME = "application/vnd.plotly.v1+json"
MEMO_TEXT = 4096             # cells up to this long have their static transform and hash kept
MEMO_MAX = 256               # ... this many of them (then the memo starts again)
ARTIFACT_MAX = 256 << 20     # a saved figure bigger than this is not copied to the channel
# the kernelspec Jupyter writes for this kernel, and ipykernel's language_info
KERNELSPEC = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}

# inotify constants (linux/inotify.h)
IN_CLOSE_WRITE = 0x00000008
IN_MOVED_TO = 0x00000080
IN_DELETE_SELF = 0x00000400
IN_MOVE_SELF = 0x00000800
IN_UNMOUNT = 0x00002000
IN_Q_OVERFLOW = 0x00004000
IN_IGNORED = 0x00008000
IN_NONBLOCK = os.O_NONBLOCK
IN_CLOEXEC = os.O_CLOEXEC
_RESULTS_OPEN = os.O_WRONLY | os.O_APPEND | os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK

_monotonic = time.monotonic
_get_ident = threading.get_ident
_MAIN = _get_ident()
_enc = json.JSONEncoder(ensure_ascii=False, allow_nan=False, separators=(",", ":"))
_dumps = _enc.encode
_unpack_event = struct.Struct("iIII").unpack_from
try:
    from _signal import getsignal as _getsignal     # without signal.py's int-to-enum wrapping
except ImportError:
    _getsignal = signal.getsignal
_SIGINT = int(signal.SIGINT)
_decode_request = json.JSONDecoder().decode


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
    log_bytes = 0
    reserve = None           # RESERVE bytes, let go of when the runner itself runs out
    fifo_fd = -1             # host/wake, the FIFO, where neither inotify nor stdin wakes us
    pandas_width = None      # the display.width the runner gave pandas (from COLUMNS)
    zygote_fds = set()       # in a zygote: the descriptors its imports opened


# --------------------------------------------------------------------------------------------
# logging (the runner's own diagnostics go to the original stderr, i.e. <channel>/log)

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


# --------------------------------------------------------------------------------------------
# event output.  Everything that writes events holds _lock; the text of stdout/stderr is kept in
# one ordered list of segments so that the interleaving of the two streams survives batching.

_lock = threading.Lock()
_fdlock = threading.Lock()
_wake = threading.Event()
_segs = []                   # [[name, [text, ...]], ...] pending stream text, in order
_cap = {"pend": 0, "last": 0.0, "armed": False}


def _enter():
    if _get_ident() == _MAIN:
        _S.critical += 1
        return True
    return False


def _leave():
    _S.critical -= 1
    if _S.pending_int and not _S.critical:
        _S.pending_int = False
        if _S.executing:
            raise KeyboardInterrupt


def _flush_locked(now, tail=None):
    """Send all pending stream text, and then the event line `tail` when given, in one write
    (caller holds _lock): the host is woken once for them. Whether `tail` was written."""
    segs = _segs[:]
    del _segs[:]
    _cap["pend"] = 0
    _cap["last"] = now
    fd = _S.out_fd
    buf = []
    size = 0
    for name, parts in segs:
        text = "".join(parts)
        if not text:
            continue
        if fd < 0:
            _log(text)
            continue
        head = '{"type":"stream","name":"' + name + '","text":'
        for i in range(0, len(text), CHUNK):
            line = (head + _dumps(text[i:i + CHUNK]) + "}\n").encode("utf-8", "replace")
            if buf and size + len(line) > CHUNK:
                _write_all(fd, b"".join(buf))      # bulk text goes as it comes (the host
                buf = []                            # reads while we write)
                size = 0
            buf.append(line)
            size += len(line)
    if fd < 0:
        return False
    if tail:
        buf.append(tail)
    if buf:
        _write_all(fd, b"".join(buf) if len(buf) > 1 else buf[0])
    return True


def _add(name, text):
    """Queue stream text: sent at once if nothing was sent for FLUSH_DELAY, else by the flusher."""
    main = _enter()
    try:
        with _lock:
            if _segs and _segs[-1][0] == name:
                _segs[-1][1].append(text)
            else:
                _segs.append([name, [text]])
            _cap["pend"] += len(text)
            now = _monotonic()
            # At once when nothing was sent for a while and the text ends a line (print()
            # writes the text and its "\n" separately: keep them in one event).
            if _cap["pend"] >= CHUNK or (now - _cap["last"] >= FLUSH_DELAY
                                         and text[-1] == "\n"):
                _flush_locked(now)
            elif not _cap["armed"]:
                _cap["armed"] = True
                _wake.set()
    finally:
        if main:
            _leave()


def _clean(obj):
    """Make obj JSON-encodable (used only when the fast path fails)."""
    if isinstance(obj, dict):
        return {str(k): _clean(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_clean(v) for v in obj]
    if isinstance(obj, float):
        return obj if obj == obj and obj not in (float("inf"), float("-inf")) else None
    if obj is None or isinstance(obj, (str, int, bool)):
        return obj
    return repr(obj)


def _emit(obj):
    """Write one event line after the pending stream text (and what fds 1, 2 already got)."""
    try:
        line = _dumps(obj)
    except (TypeError, ValueError):
        line = _dumps(_clean(obj))
    data = (line + "\n").encode("utf-8", "replace")
    main = _enter()
    try:
        if main:
            _drain_fds()
        with _lock:
            if not (_segs and _flush_locked(_monotonic(), data)) and _S.out_fd >= 0:
                _write_all(_S.out_fd, data)
    finally:
        if main:
            _leave()


def _flusher():
    cap = _cap
    while True:
        _wake.wait()
        _wake.clear()
        try:
            delay = cap["last"] + FLUSH_DELAY - _monotonic()
            if delay > 0:
                time.sleep(delay)
            else:
                # Woken by text without its line end: print() writes the "\n" next; wait a
                # moment so a GIL switch in between does not send the two as separate events.
                time.sleep(0.001)
            with _lock:
                if _segs:
                    _flush_locked(_monotonic())
                cap["armed"] = False
        except Exception:
            _log_exc("stream flusher")


class _WriteOnly:
    """What sys.stdout and its .buffer answer alike: a write-only, never-closed stream."""

    def isatty(self):
        return False

    def readable(self):
        return False

    def writable(self):
        return True

    def seekable(self):
        return False

    def close(self):
        pass


class _Stream(_WriteOnly, io.TextIOBase):
    """sys.stdout / sys.stderr: text goes to stream events."""

    encoding = "utf-8"
    errors = "strict"
    line_buffering = False

    def __init__(self, name, fd):
        super().__init__()
        self._name = name
        self._fd = fd
        self.name = "<%s>" % name
        self.buffer = _BinaryStream(self)

    def write(self, s):
        if not isinstance(s, str):
            raise TypeError("write() argument must be str, not %s" % type(s).__name__)
        if not s:
            return 0
        if _S.forked:
            # a fork()ed child (multiprocessing...) has no flusher: write to the pipe at once
            _write_all(self._fd, s.encode("utf-8", "replace"))
            return len(s)
        main = _enter()
        try:
            # What child processes / C code wrote to fds 1 and 2 before this call goes first:
            # look at the pipes (one poll(0)), except for the "\n" that print() writes right
            # after its text.
            with _fdlock:
                now = _monotonic()
                if (s != "\n" or now - _Fd.last_write > 5e-5) and _Fd.drain_poll.poll(0):
                    _drain_locked()
                _Fd.last_write = now
                _add(self._name, s)
        finally:
            if main:
                _leave()
        return len(s)

    def writelines(self, lines):
        for s in lines:
            self.write(s)

    def flush(self):
        # flush() promises that the text has left the process: os._exit() or a crash may come
        # next. Send what is pending now, as a stream on a terminal would.
        if _S.forked:
            return
        main = _enter()
        try:
            with _lock:
                if _segs:
                    _flush_locked(_monotonic())
        finally:
            if main:
                _leave()

    def fileno(self):
        return self._fd


class _BinaryStream(_WriteOnly):
    """sys.stdout.buffer: bytes are decoded (UTF-8, invalid bytes -> U+FFFD)."""

    def __init__(self, text):
        self._text = text
        self._dec = codecs.getincrementaldecoder("utf-8")("replace")
        self.name = text.name

    def write(self, b):
        s = self._dec.decode(bytes(b))
        if s:
            self._text.write(s)
        return len(b)

    def writelines(self, lines):
        for b in lines:
            self.write(b)

    def flush(self):
        self._text.flush()

    def fileno(self):
        return self._text.fileno()

    @property
    def closed(self):
        return False


# --------------------------------------------------------------------------------------------
# fd capture: fds 1 and 2 are pipes; a thread turns what arrives into stream events.

class _Fd:
    fds = {}                 # read fd -> (stream name, incremental decoder)
    drain_poll = None
    last_write = 0.0         # time of the last sys.stdout / sys.stderr write


def _read_one(fd):
    """Read what is in pipe fd (caller holds _fdlock). Returns False when it was empty."""
    try:
        data = os.read(fd, CHUNK)
    except BlockingIOError:
        return False
    if not data:
        return False
    name, dec = _Fd.fds[fd]
    text = dec.decode(data)
    if text:
        _add(name, text)
    return True


def _fd_reader():
    p = select.poll()
    for fd in _Fd.fds:
        p.register(fd, select.POLLIN)
    while True:
        try:
            for fd, ev in p.poll():
                if ev & select.POLLIN:
                    with _fdlock:
                        _read_one(fd)
                elif ev & (select.POLLERR | select.POLLNVAL | select.POLLHUP):
                    p.unregister(fd)
        except Exception:
            _log_exc("fd reader")
            time.sleep(0.1)


def _after_fork_child():
    """In a child forked by user code: no threads here, so stream text goes straight to the
    inherited pipes (read by the parent's fd reader) and no event is ever written."""
    global _lock, _fdlock
    _lock = threading.Lock()
    _fdlock = threading.Lock()
    del _segs[:]
    _S.forked = True
    _S.out_fd = -1
    _S.critical = 0
    _S.pending_int = False


def _drain_fds():
    """At the end of a request: take what child processes / C code already wrote to fds 1, 2."""
    libc = _S.libc
    if libc is not None:
        try:
            libc.fflush(None)       # C stdio buffers of this process (printf from extensions)
        except Exception:
            pass
    p = _Fd.drain_poll
    if p is None:
        return
    with _fdlock:                   # (a poll object must not be used by two threads at once)
        if p.poll(0):
            _drain_locked()


def _drain_locked():
    for fd in _Fd.fds:
        while _read_one(fd):
            pass


def _setup_capture():
    _S.log_fd = os.dup(2)           # the host points fds 1 and 2 at <channel>/kernel/log
    try:
        if os.isatty(0):            # nobody may read the host's terminal: no stdin here
            null = os.open(os.devnull, os.O_RDONLY)
            os.dup2(null, 0)
            os.close(null)
    except OSError:
        pass
    _Fd.drain_poll = select.poll()
    for target, name in ((1, "stdout"), (2, "stderr")):
        r, w = os.pipe()
        try:
            import fcntl
            fcntl.fcntl(w, 1031, 1 << 20)       # F_SETPIPE_SZ: fewer wake-ups for bulk output
        except Exception:
            pass
        os.set_blocking(r, False)
        os.dup2(w, target)
        os.close(w)
        _Fd.fds[r] = (name, codecs.getincrementaldecoder("utf-8")("replace"))
        _Fd.drain_poll.register(r, select.POLLIN)
    sys.stdout = _Stream("stdout", 1)
    sys.stderr = _Stream("stderr", 2)
    for f in (sys.__stdout__, sys.__stderr__):      # still on fds 1, 2: now the pipes
        try:
            f.reconfigure(line_buffering=True, write_through=True)
        except Exception:
            pass
    os.register_at_fork(after_in_child=_after_fork_child)
    threading.Thread(target=_fd_reader, name="cellbox-fd-reader", daemon=True).start()
    threading.Thread(target=_flusher, name="cellbox-flusher", daemon=True).start()
    try:
        import faulthandler
        faulthandler.enable(file=_S.log_fd)
    except Exception:
        pass


# --------------------------------------------------------------------------------------------
# SIGINT

def _on_sigint(signum, frame):
    if not _S.executing:
        return
    if _S.critical:
        _S.pending_int = True
        return
    raise KeyboardInterrupt


# --------------------------------------------------------------------------------------------
# waiting for commands: inotify through ctypes, or a byte on stdin per command, else polling

_ino_buf = bytearray(65536)      # made once: reading events must not need memory (MemoryError)


def _setup_wakeup():
    _S.ino_poll = select.poll()
    if os.environ.get("CELLBOX_WAKE") == "stdin":
        # inotify here does not see the host's writes (gVisor's bind mounts): the host writes
        # a byte to our stdin after each command file (PROTOCOL.md, "Waking the runner").
        try:
            os.set_blocking(0, False)
            _S.wake_fd = 0
            _S.ino_poll.register(0, select.POLLIN)
        except OSError as e:
            _log("cellbox runner: no stdin to be woken on (%s); polling every %d ms"
                 % (e, POLL_FALLBACK * 1000))
        return
    if os.environ.get("CELLBOX_RUNNER_NO_INOTIFY"):       # for tests of the fallback
        if not _setup_wake():
            _log("cellbox runner: inotify disabled; polling every %d ms" % (POLL_FALLBACK * 1000))
        return
    try:
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        _S.libc = libc
        libc.inotify_add_watch.argtypes = (ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32)
        fd = libc.inotify_init1(IN_NONBLOCK | IN_CLOEXEC)
        if fd < 0:
            raise OSError(ctypes.get_errno(), "inotify_init1")
        # The host renames each command file into place (PROTOCOL.md): IN_MOVED_TO is the
        # one event a command makes. (IN_CLOSE_WRITE woke us a second time, for its temp file.)
        mask = IN_MOVED_TO | IN_DELETE_SELF | IN_MOVE_SELF
        if libc.inotify_add_watch(fd, os.fsencode(_S.cmd_dir), mask) < 0:
            err = ctypes.get_errno()
            os.close(fd)
            raise OSError(err, "inotify_add_watch")
        _S.ino_fd = fd
        _S.ino_poll.register(fd, select.POLLIN)
    except Exception as e:
        _S.ino_fd = -1
        if _setup_wake():
            _log("cellbox runner: inotify not available (%s); woken by the wake FIFO" % e)
        else:
            _log("cellbox runner: inotify not available (%s); polling every %d ms"
                 % (e, POLL_FALLBACK * 1000))


def _setup_wake():
    """Wait on the host's `host/wake` FIFO, which the host writes a byte to after each command
    (PROTOCOL.md, "Waking the runner"). False when there is none."""
    import stat
    try:
        fd = os.open(os.path.join(_S.channel, "host", "wake"),
                     os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOFOLLOW)
    except OSError:
        return False
    if not stat.S_ISFIFO(os.fstat(fd).st_mode):
        os.close(fd)
        return False
    _S.fifo_fd = fd
    _S.ino_poll.register(fd, select.POLLIN)
    return True


def _read_fifo():
    """Take the FIFO's wake-up bytes. When no host holds it (POLLHUP), open it again: a fresh
    reader is not woken until a host writes (no spinning while a pool keeps the kernel)."""
    try:
        if os.read(_S.fifo_fd, 4096):
            _scan()
            return
    except (BlockingIOError, InterruptedError):
        return
    try:
        _S.ino_poll.unregister(_S.fifo_fd)
    except (OSError, KeyError):
        pass
    os.close(_S.fifo_fd)
    _S.fifo_fd = -1
    _check_channel()
    _setup_wake()
    _scan()


def _woken():
    """Whether the runner has a way to be woken (inotify, stdin, the FIFO) rather than polling."""
    return _S.ino_fd >= 0 or _S.wake_fd >= 0 or _S.fifo_fd >= 0


def _scan():
    try:
        names = os.listdir(_S.cmd_dir)
    except OSError:
        return
    present = set()
    for n in names:
        if n.endswith(".json"):
            present.add(n)
            if n not in _S.served:
                _S.pending.add(n)
    _S.served &= present            # the host removed those: forget them


def _check_channel():
    _S.last_check = _monotonic()
    try:
        st = os.stat(_S.kernel_dir)
    except OSError:
        st = None
    if st is None or st.st_ino != _S.channel_ino:
        _exit_now(0)


def _exit_now(code):
    try:
        with _lock:
            if _segs:
                _S.out_fd = -1
                _flush_locked(_monotonic())
    except Exception:
        pass
    os._exit(code)


def _read_inotify():
    try:
        end = os.readv(_S.ino_fd, [_ino_buf])
    except (BlockingIOError, InterruptedError):
        return
    buf = _ino_buf
    off = 0
    lost = False
    while off + 16 <= end:
        wd, mask, cookie, ln = _unpack_event(buf, off)
        if ln:
            name = bytes(buf[off + 16:off + 16 + ln]).split(b"\0", 1)[0]
            if name.endswith(b".json"):
                n = name.decode("utf-8", "surrogateescape")
                if n not in _S.served:
                    _S.pending.add(n)
        if mask & IN_Q_OVERFLOW:
            _scan()
        if mask & (IN_IGNORED | IN_DELETE_SELF | IN_MOVE_SELF | IN_UNMOUNT):
            lost = True
        off += 16 + ln
    if lost:
        # commands/ went away: the channel is being removed (or moved). Serve by polling
        # from now on; the channel check ends the runner once the channel is gone.
        try:
            _S.ino_poll.unregister(_S.ino_fd)
            os.close(_S.ino_fd)
        except (OSError, KeyError):
            pass
        _S.ino_fd = -1
        time.sleep(0.05)
        _check_channel()


def _read_wake():
    """Take the wake-up bytes on stdin, then look for the command files they announce."""
    try:
        data = os.readv(0, [_ino_buf])
    except (BlockingIOError, InterruptedError):
        return
    if data == 0:                   # the host's end is gone: poll from now on
        try:
            _S.ino_poll.unregister(0)
        except (OSError, KeyError):
            pass
        _S.wake_fd = -1
    _scan()


def _spin():
    """The next command's events, looked for without sleeping for SPIN seconds after a done,
    or None. A host that sends cells back to back (a replay, a batch) has written it by then,
    and a sleeping runner would take 0.1-0.5 ms more to wake on an idle core."""
    end = _S.done_at + SPIN
    poll = _S.ino_poll.poll
    while _monotonic() < end:
        events = poll(0)
        if events:
            return events
        os.sched_yield()
    return None


def _wait(timeout):
    """Block until something happens in commands/ (or timeout seconds). Main thread only."""
    if _woken():
        events = _spin() if _S.spin and _S.done_at else None
        if not events:
            events = _S.ino_poll.poll(int(timeout * 1000))
        if events:
            main = _enter()
            try:
                for fd, _ev in events:
                    if fd == _S.ino_fd:
                        _read_inotify()
                    elif fd == _S.wake_fd:
                        _read_wake()
                    elif fd == _S.fifo_fd:
                        _read_fifo()
            finally:
                if main:
                    _leave()
        else:
            _check_channel()
            _scan()                 # safety net: never miss a command
            return
    else:
        time.sleep(min(timeout, POLL_FALLBACK))
        _scan()
    if _monotonic() - _S.last_check >= CHANNEL_CHECK:
        _check_channel()


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


# --------------------------------------------------------------------------------------------
# plots and artifacts: files plots/<n>.<ext>, n counting up across both (until clear_plots).
# A plot is an image shown as an output (a figure, any image/png); an artifact is a file the
# cell made (plt.savefig, a plotly figure's HTML) and is reported, not shown.

def _plot_index(name):
    """n of a plots/ entry `<n>.<ext>` (or its `.tmp`), else None."""
    if name.endswith(".tmp"):
        name = name[:-4]
    stem, dot, ext = name.partition(".")
    if dot and stem.isdigit() and stem.isascii() and ext.isalnum() and ext.isascii():
        return int(stem)
    return None


def _init_plot_counter():
    n = 0
    try:
        for name in os.listdir(_S.plot_dir):
            if not name.endswith(".tmp") and _plot_index(name) is not None:
                n = max(n, _plot_index(name))
    except OSError:
        pass
    _S.plot_n = n


def _clear_plots():
    cleared = 0
    try:
        names = os.listdir(_S.plot_dir)
    except OSError:
        names = []
    for name in names:
        if _plot_index(name) is None:
            continue
        try:
            os.unlink(os.path.join(_S.plot_dir, name))
            if not name.endswith(".tmp"):
                cleared += 1
        except OSError:
            pass
    _S.plot_n = 0
    return cleared


def _store_file(data, ext):
    """Write bytes to plots/<n>.<ext> (tmp + rename); returns (n, "plots/<n>.<ext>")."""
    n = _S.plot_n + 1
    name = "%d.%s" % (n, ext)
    path = os.path.join(_S.plot_dir, name)
    tmp = path + ".tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o644)
    try:
        _write_all(fd, data)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    _S.plot_n = n
    return n, "plots/" + name


def _image_size(data):
    """(width, height) of PNG or JPEG bytes, (0, 0) for anything else."""
    if data[:8] == PNG_SIG and data[12:16] == b"IHDR":
        return struct.unpack(">II", data[16:24])
    if data[:2] == b"\xff\xd8":
        i = 2
        while i + 9 < len(data) and data[i] == 0xFF:
            marker = data[i + 1]
            if marker == 0xFF:
                i += 1
                continue
            if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):
                h, w = struct.unpack(">HH", data[i + 5:i + 9])
                return w, h
            i += 2 + struct.unpack(">H", data[i + 2:i + 4])[0]
    return 0, 0


def _store_png(png):
    """Write png bytes to a plot file and return the plot description."""
    n, rel = _store_file(png, "png")
    w, h = _image_size(png)
    return {"index": n, "path": rel, "format": "png", "width": w, "height": h}


def _artifact(data, fmt, ext, name=None):
    """Store a file the cell made and report it with an artifact event."""
    n, rel = _store_file(data, ext)
    w, h = _image_size(data)
    ev = {"type": "artifact", "index": n, "path": rel, "format": fmt, "width": w, "height": h}
    if name is not None:
        ev["name"] = name
    _emit(ev)


def _png_bytes(value):
    if isinstance(value, (bytes, bytearray, memoryview)):
        value = bytes(value)
        if value[:8] == PNG_SIG:
            return value
    import base64
    try:
        png = base64.b64decode(value)
    except Exception:
        return None
    return png if png[:8] == PNG_SIG else None


def _saved_figure(fname, kwargs):
    """After Figure.savefig(fname): copy the file it wrote into plots/ as an artifact."""
    if _S.out_fd < 0 or not isinstance(fname, (str, os.PathLike)):
        return                      # a file object (print_figure, BytesIO), or no request
    path = os.fsdecode(os.fspath(fname))
    fmt = kwargs.get("format")
    ext = os.path.splitext(path)[1][1:]
    if fmt is None:
        if not ext:                 # matplotlib appends the default format's extension
            import matplotlib
            fmt = matplotlib.rcParams["savefig.format"]
            path = path.rstrip(".") + "." + fmt
        else:
            fmt = ext
    fmt = str(fmt).lower()
    fmt = {"jpg": "jpeg", "tif": "tiff"}.get(fmt, fmt)
    ext = ext.lower() if ext.isalnum() and ext.isascii() and len(ext) <= 8 else "bin"
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        size = os.fstat(fd).st_size
        if size > ARTIFACT_MAX:
            _log("cellbox runner: %s is %d bytes: not copied as an artifact" % (path, size))
            return
        data = b"".join(iter(lambda: os.read(fd, 1 << 20), b""))
    finally:
        os.close(fd)
    _artifact(data, fmt, ext, os.fsdecode(os.fspath(fname)))


def _patch_savefig(module):
    """Report what Figure.savefig (and so plt.savefig) writes to a file."""
    import functools
    figure = getattr(module, "Figure", None)
    orig = getattr(figure, "savefig", None)
    if orig is None or getattr(orig, "_cellbox", False):
        return

    @functools.wraps(orig)
    def savefig(self, fname, *args, **kwargs):
        result = orig(self, fname, *args, **kwargs)
        try:
            _saved_figure(fname, kwargs)
        except Exception:
            _log_exc("reporting a saved figure")
        return result

    savefig._cellbox = True
    figure.savefig = savefig


def _plotly_artifacts(fig):
    """A plotly figure was shown: its stand-alone HTML as an artifact, and a PNG where the
    kaleido exporter is installed."""
    try:
        import plotly.io as pio
        html = pio.to_html(fig, include_plotlyjs=True, full_html=True, validate=False)
        _artifact(html.encode("utf-8"), "html", "html")
    except Exception:
        _log_exc("saving a plotly figure as HTML")
        return
    import importlib.util
    if importlib.util.find_spec("kaleido") is None:
        return
    try:
        png = pio.to_image(fig, format="png", engine="kaleido", validate=False)
    except Exception:
        _log_exc("exporting a plotly figure as PNG")
        return
    _artifact(png, "png", "png")


class _HookedLoader:
    """A module's loader that runs a hook after the module is executed."""

    def __init__(self, loader, hook):
        self._loader = loader
        self._hook = hook

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        self._loader.exec_module(module)
        try:
            self._hook(module)
        except Exception:
            _log_exc("import hook of %s" % module.__name__)

    def __getattr__(self, name):
        return getattr(self._loader, name)


class _ImportHooks:
    """sys.meta_path entry that patches modules as they are imported (matplotlib.figure)."""

    hooks = {"matplotlib.figure": _patch_savefig}

    @classmethod
    def find_spec(cls, fullname, path=None, target=None):
        hook = cls.hooks.get(fullname)
        if hook is None:
            return None
        import importlib.machinery
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        spec.loader = _HookedLoader(spec.loader, hook)
        return spec


def _bundle(data):
    """A mime bundle for an event: image/png goes to a plot file, every other mime is kept
    (JSON mimes as JSON, bytes as base64, the rest as text). Returns (data, plot or None)."""
    out = {}
    plot = None
    for mime, value in data.items():
        mime = str(mime)
        if mime == "image/png" and plot is None:
            png = _png_bytes(value)
            if png is not None:
                plot = _store_png(png)
                continue
        if isinstance(value, (bytes, bytearray, memoryview)):
            import base64
            value = base64.b64encode(bytes(value)).decode("ascii")
        elif not isinstance(value, str) and not (mime == "application/json"
                                                 or mime.endswith("+json")):
            value = str(value)
        out[mime] = value
    return out, plot


def _rich_event(kind, data, metadata, **extra):
    """Emit a display or result event for a mime bundle (and the artifacts of a plotly one)."""
    out, plot = _bundle(data)
    ev = {"type": kind}
    ev.update(extra)
    ev["data"] = out
    if metadata:
        ev["metadata"] = metadata
    if plot is not None:
        ev["plot"] = plot
    _emit(ev)
    if PLOTLY_MIME in out and not extra.get("update"):
        _plotly_artifacts(out[PLOTLY_MIME])


# The fallback backend (no matplotlib_inline): figures saved as the inline backend would, on
# plt.show() and for those still open at the end of a cell.

def _save_figures(managers=None):
    """Save figures (default: every open pyplot figure) as plots and close them."""
    from matplotlib._pylab_helpers import Gcf
    if managers is None:
        managers = Gcf.get_all_fig_managers()
    for manager in managers:
        fig = manager.canvas.figure
        try:
            text = repr(fig)
            buf = io.BytesIO()
            if fig.axes or fig.lines:
                fig.canvas.print_figure(buf, format="png", bbox_inches="tight")
        finally:
            Gcf.destroy(manager)
        if buf.getvalue():
            _emit({"type": "display", "data": {"text/plain": text},
                   "plot": _store_png(buf.getvalue())})
        else:
            _emit({"type": "display", "data": {"text/plain": text}})


def _capture_open_figures():
    """End of a cell (fallback backend): figures left open are shown like plt.show() would."""
    plt = sys.modules.get("matplotlib.pyplot")
    if plt is None or _S.inline:
        return
    try:
        from matplotlib._pylab_helpers import Gcf
        if Gcf.figs:
            _save_figures()
    except KeyboardInterrupt:
        raise
    except Exception:
        _S.shell.showtraceback()
        return False
    return True


class _MplFinder:
    """sys.meta_path entry that creates the fallback matplotlib backend module `cellbox_mpl`."""

    @classmethod
    def find_spec(cls, fullname, path=None, target=None):
        if fullname != "cellbox_mpl":
            return None
        import importlib.machinery
        return importlib.machinery.ModuleSpec(fullname, cls, origin="cellbox runner")

    @staticmethod
    def create_module(spec):
        return None

    @staticmethod
    def exec_module(module):
        from matplotlib.backend_bases import FigureManagerBase
        from matplotlib.backends.backend_agg import FigureCanvasAgg

        def show(*args, **kwargs):
            """Save every open figure to the channel's plots/ and close it."""
            _save_figures()

        module.__doc__ = "cellbox: Agg figures captured as PNG plots on show()"
        module.backend_version = "cellbox"
        module.FigureCanvas = FigureCanvasAgg
        module.FigureManager = FigureManagerBase
        module.show = show


def _murmur2(text, seed=0xC70F6907):
    """ipykernel's murmur2_x86 hash of a cell, which names the cell's file."""
    m = 0x5BD1E995
    b = text.encode("utf-8")
    n = len(b)
    h = seed ^ n
    end = n & ~3
    for (k,) in struct.iter_unpack("<I", b[:end]):
        k = (k * m) & 0xFFFFFFFF
        k ^= k >> 24
        k = (k * m) & 0xFFFFFFFF
        h = ((h * m) & 0xFFFFFFFF) ^ k
    rest = n & 3
    if rest:
        k = b[end]
        if rest > 1:
            k |= b[end + 1] << 8
        if rest > 2:
            k |= b[end + 2] << 16
        h = ((h ^ k) * m) & 0xFFFFFFFF
    h ^= h >> 13
    h = (h * m) & 0xFFFFFFFF
    return h ^ (h >> 15)


_hashes = {}                 # cell text -> _murmur2(text), for cells run again


def _cell_file_name(raw_code, transformed_code, number):
    """A cell's file name as ipykernel makes it (warnings and tracebacks print it)."""
    import tempfile
    code = raw_code if raw_code is not None else transformed_code
    h = _hashes.get(code)
    if h is None:
        h = _murmur2(code)
        if len(code) <= MEMO_TEXT:
            if len(_hashes) >= MEMO_MAX:
                _hashes.clear()
            _hashes[code] = h
    return "%s%sipykernel_%d%s%d.py" % (tempfile.gettempdir(), os.sep, os.getpid(), os.sep, h)


def _memo_static_transforms(tm):
    """IPython's static input transforms (prompts, `%magic`, `!cmd`, `x?`) again for a cell
    text seen before give the same text: keep it, while the transformer lists are the ones
    this memo was made with (a user's own transformers, added later, run as always)."""
    real = tm.transform_cell
    lists = (tm.cleanup_transforms, tm.line_transforms, tm.token_transformers)
    made = tuple(tuple(x) for x in lists)
    memo = {}

    def transform_cell(cell):
        if tuple(tuple(x) for x in lists) != made or len(cell) > MEMO_TEXT:
            return real(cell)
        out = memo.get(cell)
        if out is None:
            out = real(cell)
            if len(memo) >= MEMO_MAX:
                memo.clear()
            memo[cell] = out
        return out

    tm.transform_cell = transform_cell


class _Delegate:
    """A loader that runs `after()` once its module is executed; everything else as `real`."""

    def __init__(self, real, after):
        self._real, self._after = real, after

    def __getattr__(self, name):
        return getattr(self._real, name)

    def create_module(self, spec):
        return self._real.create_module(spec)

    def exec_module(self, module):
        self._real.exec_module(module)
        self._after()


class _PandasWidth:
    """sys.meta_path entry: pandas, when imported, draws at the front end's width (COLUMNS)."""
    busy = False

    @classmethod
    def find_spec(cls, fullname, path=None, target=None):
        if fullname != "pandas" or cls.busy:
            return None
        import importlib.util
        cls.busy = True
        try:
            spec = importlib.util.find_spec(fullname)
        finally:
            cls.busy = False
        if spec is not None and spec.loader is not None:
            spec.loader = _Delegate(spec.loader, _apply_width)
        return spec


# --------------------------------------------------------------------------------------------
# IPython

def _import_ipython():
    """Import IPython's core without running IPython/__init__.py until something needs it.

    The package __init__ pulls in the terminal front end (prompt_toolkit), about a third of the
    start-up time, which a runner never uses.  The package module gets a module __getattr__
    that runs the real __init__ the first time an attribute it defines is asked for.
    """
    if "IPython" not in sys.modules:
        try:
            import importlib.util
            spec = importlib.util.find_spec("IPython")
            if spec is not None and spec.submodule_search_locations and spec.loader:
                mod = importlib.util.module_from_spec(spec)
                state = {"loading": False}

                def __getattr__(name, mod=mod, spec=spec, state=state):
                    if state["loading"] or (name.startswith("__") and name not in (
                            "__version__", "__author__", "__license__", "__patched_cves__")):
                        raise AttributeError("module 'IPython' has no attribute %r" % name)
                    state["loading"] = True
                    try:
                        d = mod.__dict__
                        d.pop("__getattr__", None)
                        exec(spec.loader.get_code("IPython"), d)
                    except BaseException:
                        d["__getattr__"] = __getattr__
                        raise
                    finally:
                        state["loading"] = False
                    try:
                        return d[name]
                    except KeyError:
                        raise AttributeError(
                            "module 'IPython' has no attribute %r" % name) from None

                mod.__getattr__ = __getattr__
                sys.modules["IPython"] = mod
                from IPython.core.getipython import get_ipython
                mod.get_ipython = get_ipython
        except Exception:
            _log_exc("lazy IPython import failed; importing normally")
            sys.modules.pop("IPython", None)
    from IPython.core.interactiveshell import InteractiveShell
    return InteractiveShell


def _guard_pip():
    """In a container without a network, make %pip say so instead of retrying for minutes."""
    network = os.environ.get("CELLBOX_NETWORK")
    if network != "none":
        return
    pip = _S.shell.find_line_magic("pip")

    def pip_without_network(line):
        if line.split()[:1] in (["install"], ["download"]):
            print("cellbox: %pip {} needs the network, and this sandbox has no network "
                  "(network = none); start cellbox with --network bridge to allow it"
                  .format(line.split()[0]), file=sys.stderr)
            return None
        return pip(line) if pip else None

    _S.shell.register_magic_function(pip_without_network, "line", "pip")


def _make_shell():
    InteractiveShell = _import_ipython()
    from traitlets import Type
    from traitlets.config import Config
    from IPython.core.displayhook import DisplayHook
    from IPython.core.displaypub import DisplayPublisher
    from IPython.core.history import HistoryManager

    # IPython sets nine traits a cell: the last inputs (_i00, _i, _ii, _iii), the execution
    # count, the last result and whether it succeeded, the display hook's result (twice).
    # Nothing observes them, and each set goes through traitlets' validation and change
    # notification: a third of run_cell("pass"). Here they are plain attributes.
    class CellboxHistory(HistoryManager):
        _i00 = _i = _ii = _iii = ""

        def store_inputs(self, line_num, source, source_raw=None):
            # IPython's, less the SQLite write-behind: with the history in memory nothing
            # reads its cache, and its save flag (a threading.Event set a cell) wakes no thread.
            if self.enabled:
                return HistoryManager.store_inputs(self, line_num, source, source_raw)
            if source_raw is None:
                source_raw = source
            source = source.rstrip("\n")
            source_raw = source_raw.rstrip("\n")
            if self._exit_re.match(source_raw.strip()):
                return
            self.input_hist_parsed.append(source)
            self.input_hist_raw.append(source_raw)
            self._iii, self._ii, self._i, self._i00 = self._ii, self._i, self._i00, source_raw
            if self.shell is not None:
                self.shell.push({"_i": self._i, "_ii": self._ii, "_iii": self._iii,
                                 "_i%s" % line_num: source_raw}, interactive=False)

    class CellboxDisplayHook(DisplayHook):
        exec_result = None

        def start_displayhook(self):
            pass

        def write_output_prompt(self):
            pass

        def write_format_data(self, format_dict, md_dict=None):
            _rich_event("result", format_dict, md_dict, execution_count=self.prompt_count)

        def finish_displayhook(self):
            pass

    class CellboxDisplayPublisher(DisplayPublisher):
        def publish(self, data, metadata=None, source=None, *, transient=None, update=False,
                    **kwargs):
            extra = {}
            display_id = transient.get("display_id") if isinstance(transient, dict) else None
            if display_id is not None:
                extra["display_id"] = str(display_id)
            if update:
                extra["update"] = True
            _rich_event("display", data, metadata, **extra)

        def clear_output(self, wait=False):
            _emit({"type": "clear_output", "wait": bool(wait)})

    class CellboxShell(InteractiveShell):
        displayhook_class = Type(CellboxDisplayHook)
        display_pub_class = Type(CellboxDisplayPublisher)
        execution_count = 1                 # (plain attributes: see CellboxHistory)
        last_execution_succeeded = True
        last_execution_result = None

        def init_history(self):
            self.history_manager = CellboxHistory(shell=self, parent=self)
            self.configurables.append(self.history_manager)

        def should_run_async(self, raw_cell, *, transformed_cell=None,
                             preprocessing_exc_tuple=None):
            # Top-level await takes the word: a cell without "await" or "async" in it is not
            # one, and IPython's own test compiles the whole cell once more to say so.
            cell = raw_cell if transformed_cell is None else transformed_cell
            if "await" not in cell and "async" not in cell:
                return False
            return InteractiveShell.should_run_async(
                self, raw_cell, transformed_cell=transformed_cell,
                preprocessing_exc_tuple=preprocessing_exc_tuple)

        # `!cmd` runs with fds 1 and 2 on the capture pipes, like os.system and subprocess.
        system = InteractiveShell.system_raw

        # The completer is built on first use of shell.Completer, or when the runner is idle
        # after its first request: importing jedi is a fifth of the start-up time, and a
        # one-shot run never completes anything.
        def init_completer(self):
            self.__dict__["_cb_completer"] = None

        @property
        def Completer(self):
            c = self.__dict__.get("_cb_completer")
            if c is None and not self.__dict__.get("_cb_completer_busy"):
                self.__dict__["_cb_completer_busy"] = True
                try:
                    InteractiveShell.init_completer(self)
                finally:
                    self.__dict__["_cb_completer_busy"] = False
                c = self.__dict__["_cb_completer"]
            return c

        @Completer.setter
        def Completer(self, value):
            self.__dict__["_cb_completer"] = value

        def showtraceback(self, exc_tuple=None, *args, **kwargs):
            # A KeyboardInterrupt raised by _on_sigint carries the handler's own frame; drop
            # it so the traceback ends in the user's code, as with Python's own handler.
            try:
                etype, value, tb = exc_tuple if exc_tuple else sys.exc_info()
                if etype is KeyboardInterrupt:
                    prev, node = None, tb
                    while node is not None:
                        if node.tb_frame.f_code is _on_sigint.__code__:
                            if prev is not None:
                                prev.tb_next = None
                            break
                        prev, node = node, node.tb_next
                    # One that landed in IPython's own steps (compiling the next statement)
                    # has no frame of a cell; IPython's formatter fails on those frames and
                    # prints its fallback. As Python's REPL does, the name alone.
                    cells = self.compile._filename_map
                    node = tb
                    while node is not None and node.tb_frame.f_code.co_filename not in cells:
                        node = node.tb_next
                    if node is None:
                        self._showtraceback(etype, value, ["\x1b[0;31mKeyboardInterrupt\x1b[0m"])
                        return None
            except Exception:
                pass
            return InteractiveShell.showtraceback(self, exc_tuple, *args, **kwargs)

        def _showtraceback(self, etype, evalue, stb):
            try:
                evalue_s = str(evalue)
            except Exception:
                evalue_s = "<unprintable %s object>" % etype.__name__
            if isinstance(stb, str):
                stb = [stb]
            _emit({"type": "error", "ename": etype.__name__, "evalue": evalue_s,
                   "traceback": list(stb)})

        def show_usage_error(self, exc):
            _emit({"type": "error", "ename": "UsageError", "evalue": str(exc),
                   "traceback": ["\x1b[0;31mUsageError\x1b[0m: %s" % exc]})

        def set_next_input(self, s, replace=False):
            # `%load FILE` and the like: the front end puts the text in its editor
            _emit({"type": "set_next_input", "text": str(s), "replace": bool(replace)})

        def ask_exit(self):
            # `exit` / `quit`: the host owns the session's life time (PROTOCOL.md)
            print("cellbox: exit() and quit() do not end this session; the session ends "
                  "when cellbox closes it", file=sys.stderr)

        def enable_gui(self, gui=None):
            if gui not in (None, "inline", "agg", "auto"):
                print("cellbox: GUI event loops are not available; matplotlib figures are "
                      "captured as PNG plots", file=sys.stderr)

        def enable_matplotlib(self, gui=None):
            """`%matplotlib [gui]`: IPython's inline backend (or a non-GUI one, as asked);
            a GUI backend is not available and falls back to inline."""
            from IPython.core import pylabtools as pt
            if gui not in (None, "inline", "auto") and gui in pt.backend2gui.values():
                print("cellbox: GUI backend %r is not available; figures are shown inline"
                      % gui, file=sys.stderr)
                gui = "inline"
            if not _S.inline:
                pt.activate_matplotlib(BACKEND)
                self.magics_manager.registry["ExecutionMagics"].default_runner = \
                    pt.mpl_runner(self.safe_execfile)
                return gui, BACKEND
            return InteractiveShell.enable_matplotlib(
                self, "inline" if gui in (None, "auto") else gui)

    cfg = Config()
    cfg.HistoryManager.enabled = False      # no SQLite; In/Out/_i/%history still in memory
    cfg.HistoryManager.hist_file = ":memory:"
    cfg.InteractiveShell.colors = "Linux"
    shell = CellboxShell.instance(config=cfg)

    def show_in_pager(self, data, start=0, screen_lines=0, pager_cmd=None):
        text = data.get("text/plain", "") if isinstance(data, dict) else data
        if not isinstance(text, str):
            text = str(text)
        if start and start > 0:
            text = "\n".join(text.split("\n")[start:])
        _emit({"type": "display", "data": {"text/plain": text}, "pager": True})

    shell.set_hook("show_in_pager", show_in_pager)

    # `%config IPCompleter...` must find the (lazily built) completer among the configurables
    line_magics = shell.magics_manager.magics["line"]
    config_magic = line_magics.get("config")
    if config_magic is not None:
        import functools

        @functools.wraps(config_magic)
        def config(*args, **kwargs):
            shell.Completer
            if _S.inline and "InlineBackend" in " ".join(map(str, args)):
                # ipykernel has it from the start; importing it here costs matplotlib's import
                from matplotlib_inline.config import InlineBackend
                backend = InlineBackend.instance(parent=shell)
                if backend not in shell.configurables:
                    shell.configurables.append(backend)
            return config_magic(*args, **kwargs)
        line_magics["config"] = config
    # IPython leaves `exit` / `quit` cells out of In[] (a terminal session ends there); here the
    # session goes on, so keep In[n] in step with the execution counts.
    import re
    shell.history_manager._exit_re = re.compile(r"(?!)")
    # cells are named as ipykernel names them (warnings print the name)
    shell.compile.get_code_name = _cell_file_name
    _memo_static_transforms(shell.input_transformer_manager)
    return shell


def _shell_here(shell):
    """A shell the zygote made, in a kernel forked from it: what it took from the zygote's
    process (the directory it started in: `_dh`, `%dhist`) is the kernel's."""
    from pathlib import Path
    shell.starting_dir = os.getcwd()
    shell.history_manager.dir_hist[:] = [Path.cwd()]


# --------------------------------------------------------------------------------------------
# input()

def _input(prompt=""):
    if not _S.allow_stdin or _S.req_id is None:
        from IPython.core.error import StdinNotImplementedError
        raise StdinNotImplementedError(NO_STDIN_MSG)
    return _ask(str(prompt), False)


def _getpass(prompt="Password: ", stream=None):
    if not _S.allow_stdin or _S.req_id is None:
        from IPython.core.error import StdinNotImplementedError
        raise StdinNotImplementedError(NO_STDIN_MSG)
    return _ask(str(prompt), True)


def _ask(prompt, password):
    _emit({"type": "input_request", "prompt": prompt, "password": password})
    # The k-th answer of a request has a name of its own: the host removes the files (its part
    # of the channel is read-only here), so an answer already read must never be read again.
    _S.input_n += 1
    path = os.path.join(_S.cmd_dir, "%s.%d.input" % (_S.req_id, _S.input_n))
    while True:
        try:
            data = _read_file(path)
        except FileNotFoundError:
            _wait(CHANNEL_CHECK)
            continue
        try:
            obj = json.loads(data)
            value = obj.get("value", "") if isinstance(obj, dict) else obj
        except ValueError:
            _log("cellbox runner: malformed input answer %r" % data[:200])
            value = data.decode("utf-8", "replace").rstrip("\n")
        if value is None:
            value = ""
        return value if isinstance(value, str) else str(value)


# --------------------------------------------------------------------------------------------
# security policy: the import hook. The host checks every cell before sending it; this second
# layer refuses the policy's modules when code imports them by a name only known at run time
# (__import__('o' + 's')). A tripwire, not a wall: code in the kernel can take it apart.

class SecurityViolation(ImportError):
    """An import that the session's security policy refuses."""


class _Guard:
    modules = {}             # restricted name -> (description, severity)
    policy = ""
    trusted = False          # serving the host's own code (files in and out)
    real_import = None
    real_import_module = None


_RUNNER_GLOBALS = globals()


def _from_user(frame):
    """Whether `frame` runs the user's code (a cell, exec'd text) rather than a library's."""
    g = frame.f_globals
    if g is _RUNNER_GLOBALS:
        return False
    name = g.get("__name__")
    if not isinstance(name, str) or name == "__main__":
        return True
    return getattr(sys.modules.get(name), "__dict__", None) is not g


def _refused(name, fromlist, level, frame):
    """Why the policy refuses this import by the code of `frame`, or None."""
    if _Guard.trusted or level or not isinstance(name, str) or not _from_user(frame):
        return None
    names = [name]
    if fromlist:
        names += ["%s.%s" % (name, f) for f in fromlist if isinstance(f, str)]
    for full in names:
        part = full
        while part:
            if part in _Guard.modules:
                desc, sev = _Guard.modules[part]
                return ("import of %r refused by the security policy %r (module %s: %s, %s)"
                        % (full, _Guard.policy, part, desc, sev))
            part = part.rpartition(".")[0]
    return None


def _guarded_import(name, globals=None, locals=None, fromlist=(), level=0):
    why = _refused(name, fromlist, level, sys._getframe(1))
    if why:
        raise SecurityViolation(why, name=name)
    return _Guard.real_import(name, globals, locals, fromlist, level)


def _guarded_import_module(name, package=None):
    why = _refused(name, (), 0, sys._getframe(1)) if not str(name).startswith(".") else None
    if why:
        raise SecurityViolation(why, name=name)
    return _Guard.real_import_module(name, package)


def _do_policy(req):
    mods = req.get("modules")
    if not isinstance(mods, list):
        raise RequestError("policy: 'modules' must be a list")
    table = {}
    for m in mods:
        if not isinstance(m, dict) or not isinstance(m.get("name"), str):
            raise RequestError("policy: each module needs a 'name'")
        table[m["name"]] = (str(m.get("description", "")), str(m.get("severity", "")))
    _Guard.modules = table
    _Guard.policy = str(req.get("policy", ""))
    if _Guard.real_import is None:
        import importlib
        _Guard.real_import = builtins.__import__
        _Guard.real_import_module = importlib.import_module
        builtins.__import__ = _guarded_import
        importlib.import_module = _guarded_import_module
        importlib.__import__ = _guarded_import
    _emit({"type": "reply", "modules": sorted(table)})
    return "ok"


# --------------------------------------------------------------------------------------------
# requests

def _valid_id(rid):
    return (isinstance(rid, str) and 0 < len(rid) <= 200 and rid.isascii() and rid[0] != "."
            and "/" not in rid and "\0" not in rid and rid.isprintable())


def _do_execute(req):
    shell = _S.shell
    code = req.get("code", "")
    if not isinstance(code, str):
        raise RequestError("execute: 'code' must be a string")
    silent = bool(req.get("silent", False))
    _S.allow_stdin = bool(req.get("allow_stdin", False))
    if req.get("clear_plots"):
        _clear_plots()
    _S.executing = True
    _Guard.trusted = bool(req.get("trusted", False))
    _apply_width()
    try:
        res = shell.run_cell(code, store_history=not silent, silent=silent)
    finally:
        _Guard.trusted = False
    _apply_width()
    plots_ok = None if _S.inline else _capture_open_figures()
    _S.executing = False
    # An interrupt that lands between IPython's steps (compiling a node, between two) is
    # its error_before_exec: aborted all the same.
    if isinstance(res.error_in_exec or res.error_before_exec, KeyboardInterrupt):
        return "aborted"
    if not res.success or plots_ok is False:
        return "error"
    return "ok"


def _apply_width():
    """pandas draws at the width the front end said (COLUMNS), unless the user set another."""
    pd = sys.modules.get("pandas")
    if pd is None:
        return
    cols = os.environ.get("COLUMNS", "")
    if not cols.isdigit():
        return
    try:
        width = pd.get_option("display.width")
        if width in (80, _S.pandas_width) and width != int(cols):
            pd.set_option("display.width", int(cols))
            _S.pandas_width = int(cols)
    except Exception:
        pass


def _do_complete(req):
    from IPython.core.completer import provisionalcompleter, rectify_completions
    code = req.get("code", "")
    pos = req.get("cursor_pos")
    if pos is None:
        pos = len(code)
    shell = _S.shell
    _S.executing = True
    with provisionalcompleter():
        comps = list(rectify_completions(code, shell.Completer.completions(code, pos)))
    _S.executing = False
    if comps:
        start, end = comps[0].start, comps[0].end
        matches = [c.text for c in comps]
    else:
        start = end = pos
        matches = []
    _emit({"type": "reply", "matches": matches, "cursor_start": start, "cursor_end": end})
    return "ok"


def _do_inspect(req):
    from IPython.utils.tokenutil import token_at_cursor
    code = req.get("code", "")
    pos = req.get("cursor_pos")
    if pos is None:
        pos = len(code)
    level = 1 if req.get("detail_level") else 0
    name = token_at_cursor(code, pos)
    _S.executing = True
    try:
        bundle = _S.shell.object_inspect_mime(name, detail_level=level)
        found = True
    except KeyError:
        bundle = {}
        found = False
    _S.executing = False
    data = {"text/plain": bundle["text/plain"]} if found and "text/plain" in bundle else {}
    _emit({"type": "reply", "found": found, "data": data})
    return "ok"


def _do_is_complete(req):
    code = req.get("code", "")
    tm = _S.shell.input_transformer_manager
    status, indent = tm.check_complete(code)
    _emit({"type": "reply", "status": status,
           "indent": " " * (indent or 0) if status == "incomplete" else ""})
    return "ok"


def _do_clear_plots(req):
    _emit({"type": "reply", "cleared": _clear_plots()})
    return "ok"


def _do_shutdown(req):
    return "ok"


_HANDLERS = {
    "execute": _do_execute,
    "complete": _do_complete,
    "inspect": _do_inspect,
    "is_complete": _do_is_complete,
    "clear_plots": _do_clear_plots,
    "shutdown": _do_shutdown,
    "policy": _do_policy,
}


class RequestError(ValueError):
    """A request the runner cannot serve (malformed, unknown kind, bad field)."""


def _internal_error(exc, context):
    _log_exc(context)
    tb = traceback.format_exception(type(exc), exc, exc.__traceback__)
    _emit({"type": "error", "ename": type(exc).__name__, "evalue": str(exc),
           "traceback": ["cellbox runner: %s\n" % context] + tb})


def _serve(fname):
    try:
        data = _read_file(fname, _S.cmd_fd)
    except FileNotFoundError:
        return                      # stale event: already served
    except OSError:
        _log_exc("cannot read %s" % fname)
        data = None
    # The host removes the command file once the request is done; a restarted runner gets an
    # empty queue. Until then, this name is never served again.
    _S.served.add(fname)
    req = None
    bad = None
    if data is not None:
        try:
            req = _decode_request(data.decode("utf-8"))
            if not isinstance(req, dict):
                raise ValueError("a request must be a JSON object")
        except ValueError as e:
            req = None
            bad = e
    else:
        bad = OSError("cannot read the command file")
    rid = req.get("id") if req is not None else None
    if not _valid_id(rid):
        stem = fname[:-5]
        if req is not None and rid is not None:
            _log("cellbox runner: %s: invalid id %r, using %r" % (fname, rid, stem))
        rid = stem if _valid_id(stem) else None
    if rid is None:
        _log("cellbox runner: dropped command file %r (%s)" % (fname, bad or "no usable id"))
        return

    # The host made the results file (PROTOCOL.md); make it only when it did not. Not through
    # a link, and not waiting on a FIFO some code of the kernel's put there (O_NONBLOCK).
    try:
        # (without O_CREAT first: opening a file that is there takes no lock of the directory,
        # where the host is making the next request's file)
        try:
            out = os.open(rid + ".jsonl", _RESULTS_OPEN, dir_fd=_S.res_fd)
        except FileNotFoundError:
            out = os.open(rid + ".jsonl", _RESULTS_OPEN | os.O_CREAT, 0o600, dir_fd=_S.res_fd)
    except OSError as e:
        _log("cellbox runner: %s: cannot open its results file: %s" % (rid, e))
        return
    with _lock:
        _S.out_fd = out
    _S.req_id = rid
    _S.input_n = 0
    t0 = _monotonic()
    status = "error"
    kind = None
    try:
        try:
            try:
                if req is None:
                    raise RequestError("malformed command file %s: %s" % (fname, bad))
                kind = req.get("kind")
                handler = _HANDLERS.get(kind)
                if handler is None:
                    raise RequestError("unknown request kind %r" % (kind,))
                status = handler(req)
            finally:
                _S.executing = False
        except KeyboardInterrupt:
            _S.executing = False
            status = "aborted"
        except RequestError as e:
            _S.executing = False
            status = "error"
            _log("cellbox runner: bad request %s: %s" % (rid, e))
            _emit({"type": "error", "ename": "RequestError", "evalue": str(e),
                   "traceback": [str(e)]})
        except MemoryError:
            _S.executing = False
            status = "error"
            _out_of_memory("request %s (%s)" % (rid, kind))
            _emit({"type": "error", "ename": "MemoryError",
                   "evalue": "the kernel ran out of memory", "traceback": []})
        except Exception as e:
            _S.executing = False
            status = "error"
            try:
                _internal_error(e, "request %s (%s) failed" % (rid, kind))
            except Exception:
                _log_exc("reporting an internal error")
    except MemoryError:
        status = "error"            # reporting it failed too (no memory): done must still go
    _finish(out, status, t0)
    if kind == "shutdown":
        _shutdown()


_DONE_ERROR = b'{"type":"done","status":"error","execution_count":-1,"duration":0}\n'


def _finish(out, status, t0):
    _S.executing = False
    _S.allow_stdin = False
    if _getsignal(_SIGINT) is not _on_sigint:
        # user code replaced the handler: between requests SIGINT must stay harmless
        signal.signal(signal.SIGINT, _on_sigint)
    try:
        _drain_fds()
    except Exception:
        _log_exc("draining fds")
    try:
        shell = _S.shell
        count = shell.execution_count - 1 if shell is not None else 0
        done = ('{"type":"done","status":"%s","execution_count":%d,"duration":%.6f}\n'
                % (status, count, _monotonic() - t0)).encode()
    except MemoryError:
        done = _DONE_ERROR          # made at start-up: a done goes out without memory
    with _lock:
        sent = False
        try:
            if _segs:
                sent = _flush_locked(_monotonic(), done)
        except Exception:
            _log_exc("flushing streams")
        try:
            if not sent:
                _write_all(out, done)
        except Exception:
            _log_exc("writing done")
        _S.out_fd = -1
        _S.req_id = None
        try:
            os.close(out)
        except OSError:
            pass


def _out_of_memory(where):
    """The runner itself ran out of memory: let go of the reserve, say so once, do not spin."""
    had = _S.reserve is not None
    try:
        _S.reserve.close()
    except BaseException:
        pass
    _S.reserve = None
    try:
        import gc
        gc.collect()
    except BaseException:
        pass
    _S.oom_count = getattr(_S, "oom_count", 0) + 1
    if had or _S.oom_count in (1, 10, 100, 1000):
        _log("cellbox runner: out of memory in %s (%d time(s)); the reserve was %s"
             % (where, _S.oom_count, "let go" if had else "already gone"))
    if not had:
        time.sleep(min(1.0, 0.01 * _S.oom_count))     # nothing to free: wait, do not spin


def _new_reserve():
    """Address space held back, not touched (it costs no resident memory)."""
    import mmap
    return mmap.mmap(-1, RESERVE)


def _refill_reserve():
    """Idle and there is memory again: hold the reserve for the next time."""
    if _S.reserve is None:
        try:
            _S.reserve = _new_reserve()
        except (MemoryError, OSError):
            pass


def _shutdown():
    try:
        import atexit
        atexit._run_exitfuncs()
    except Exception:
        _log_exc("atexit handlers")
    _exit_now(0)


# --------------------------------------------------------------------------------------------

def _write_ready():
    from IPython.core.release import version as ipy_version
    info = {"protocol": PROTOCOL, "pid": os.getpid(),
            "python": "%d.%d.%d" % sys.version_info[:3], "ipython": ipy_version,
            "cwd": os.getcwd(), "kernelspec": KERNELSPEC,
            "language_info": {"name": "python", "version": sys.version.split()[0],
                              "mimetype": "text/x-python",
                              "codemirror_mode": {"name": "ipython",
                                                  "version": sys.version_info[0]},
                              "pygments_lexer": "ipython3", "nbconvert_exporter": "python",
                              "file_extension": ".py"}}
    # The host made kernel/ready (the top of the kernel part is not ours to write): one line
    # in one write, which the host takes once it ends with a newline.
    if _S.fifo_fd >= 0:
        info["wake"] = "fifo"
    fd = os.open(os.path.join(_S.kernel_dir, "ready"),
                 os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
    try:
        _write_all(fd, (json.dumps(info, ensure_ascii=False) + "\n").encode("utf-8"))
    finally:
        os.close(fd)


def main(argv):
    if len(argv) != 2:
        sys.stderr.write("usage: runner.py CHANNEL_DIR\n")
        return 2
    _S.channel = os.path.abspath(argv[1])
    _S.kernel_dir = os.path.join(_S.channel, "kernel")
    _S.cmd_dir = os.path.join(_S.channel, "host", "commands")
    _S.res_dir = os.path.join(_S.kernel_dir, "results")
    _S.plot_dir = os.path.join(_S.kernel_dir, "plots")
    for d in (_S.res_dir, _S.plot_dir):
        os.makedirs(d, exist_ok=True)
    _S.cmd_fd = os.open(_S.cmd_dir, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    _S.res_fd = os.open(_S.res_dir, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    _S.channel_ino = os.stat(_S.kernel_dir).st_ino
    _S.last_check = _monotonic()
    sys.modules.setdefault("_cellbox_runner", sys.modules[__name__])

    signal.signal(signal.SIGINT, _on_sigint)
    _setup_capture()
    try:
        _S.reserve = _new_reserve()
        _setup_wakeup()
        _init_plot_counter()
        import importlib.util
        _S.inline = importlib.util.find_spec("matplotlib_inline") is not None
        if _S.inline:
            os.environ["MPLBACKEND"] = INLINE       # children too, as ipykernel does
        else:
            os.environ["MPLBACKEND"] = BACKEND
            # Only this process has the cellbox_mpl module: do not hand the setting to
            # children (a `!python script.py` using matplotlib could not import it).
            os.unsetenv("MPLBACKEND")
            sys.meta_path.append(_MplFinder)
        sys.meta_path.insert(0, _ImportHooks)
        sys.meta_path.insert(0, _PandasWidth)
        if _S.shell is None:
            _S.shell = _make_shell()
        else:
            _shell_here(_S.shell)   # the zygote made it, before the fork
            _zygote_warm(_S.shell)  # its pages, shared with the zygote, copied now: not in
                                    # the first cell of the client that leases this kernel
        _guard_pip()
        import getpass
        builtins.input = _input
        getpass.getpass = _getpass
        _scan()
        _write_ready()
    except BaseException:
        _log_exc("start-up failed")
        _exit_now(1)

    pending = _S.pending
    served = False
    build_completer = True
    while True:
        try:
            if pending:
                name = min(pending)
                pending.discard(name)
                if _S.done_at:
                    _S.spin = _monotonic() - _S.done_at <= SPIN_GAP
                    _S.done_at = 0.0
                try:
                    _serve(name)
                    _S.done_at = _monotonic()
                except MemoryError:
                    if name not in _S.served:
                        pending.add(name)   # not read yet: again, once memory is back
                    raise
                served = True
            elif served and build_completer and not (_woken() and _S.ino_poll.poll(0)):
                build_completer = False
                _S.shell.Completer          # idle after the first request: build it now
            else:
                _refill_reserve()
                _wait(CHANNEL_CHECK)
        except KeyboardInterrupt:
            pass
        except MemoryError:
            _out_of_memory("the main loop")
        except Exception:
            _log_exc("main loop")


# --------------------------------------------------------------------------------------------
# the pool's zygote (runner.py --zygote FD MODULES): a runner that imported IPython and the
# pool's modules, ran no user code and started no threads, and forks kernels (engine/zygote.h)

def _zygote(fd, preimport):
    """Serve fork requests from FD, a socket only the daemon holds.  Returns only in a forked
    kernel, with sys.argv set to its own; the zygote itself exits when the daemon goes."""
    import ctypes
    import importlib
    import socket
    libc = ctypes.CDLL(None, use_errno=True)
    sock = socket.socket(fileno=fd)
    _import_ipython()
    # what a kernel's start-up imports (the shell's, the completer's, jedi's)
    for name in ("traitlets", "traitlets.config", "IPython.core.displayhook",
                 "IPython.core.displaypub", "IPython.core.release", "IPython.core.completer",
                 "jedi", "getpass", "importlib.util", "fcntl", "faulthandler", "resource"):
        try:
            importlib.import_module(name)
        except Exception:
            pass
    for name in filter(None, (n.strip() for n in preimport.split(","))):
        try:
            importlib.import_module(name)
        except Exception:
            _log_exc("zygote: import %s" % name)    # the kernel's warm-up says so too
    # The kernels' shell, made once: no user code ran in it and it started no thread (its
    # history is in memory); a kernel takes it over in main().  It makes the user's module
    # sys.modules["__main__"]: the runner's own is kept under its other name first.
    sys.modules.setdefault("_cellbox_runner", sys.modules[__name__])
    try:
        _S.shell = _make_shell()
        _zygote_warm(_S.shell)
    except BaseException:
        _log_exc("zygote: the shell")               # the kernels make their own
        _S.shell = None
    for name in _zygote_learn():
        try:
            importlib.import_module(name)
        except BaseException:
            pass
    try:
        import jedi                 # its caches (the grammar, the module index), not a shell's
        jedi.Interpreter("import o", [{}]).complete(1, 8)
    except BaseException:
        pass
    _S.zygote_fds = _open_fds() - {0, 1, 2, fd}     # the modules' own (IPython's devnull)
    threads = len(os.listdir("/proc/self/task"))
    if threads != 1:
        sock.send(json.dumps({"error": "the imports started %d threads" % (threads - 1)})
                  .encode())
        os._exit(3)
    import gc
    gc.collect()
    gc.freeze()     # the kernels' collections leave what they share alone: no page copied
    sock.send(b'{"ready": true}')
    while True:
        try:
            msg = sock.recv(65536)
        except InterruptedError:
            continue
        if not msg:
            os._exit(0)             # the daemon let go
        try:
            req = json.loads(msg)
            pid = _zygote_fork(req, sock, libc)
            if pid == 0:
                sock.detach()       # (closed already: the number is another's now)
                return              # the kernel: on to main()
            answer = {"pid": pid}
        except Exception as e:
            answer = {"error": "%s: %s" % (type(e).__name__, e)}
        sock.send(json.dumps(answer).encode())


def _zygote_warm(shell):
    """What a kernel's first cell does once and caches, done here: IPython's input transforms
    (tokenize compiles its large pattern: 5 ms), the temporary directory's name (tempfile
    tries a file there), and the rest of a first run_cell (its lazy imports and first calls:
    a forked kernel's first cell 6.6 -> 2.8 ms) by a silent `pass`, which enters neither the
    history nor the execution count; its source is dropped from the caches it went into."""
    import linecache
    import tempfile
    shell.transform_cell("pass\n")
    tempfile.gettempdir()
    known = set(linecache.cache)
    shell.run_cell("pass", store_history=False, silent=True)
    for name in set(linecache.cache) - known:
        linecache.cache.pop(name, None)
        getattr(linecache, "_ipython_cache", {}).pop(name, None)
        shell.compile._filename_map.pop(name, None)


def _zygote_learn():
    """The modules a kernel's first completion imports (and its shell's, when the zygote has
    none), learnt in a throwaway child: the zygote imports them, so that no kernel has to."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(r)
            before = set(sys.modules)
            if _S.shell is None:
                _S.shell = _make_shell()
            from IPython.core.completer import provisionalcompleter
            with provisionalcompleter():
                list(_S.shell.Completer.completions("import o", 8))
            _write_all(w, "\n".join(sorted(set(sys.modules) - before)).encode())
        finally:
            os._exit(0)
    os.close(w)
    data = b""
    while True:
        chunk = os.read(r, 65536)
        if not chunk:
            break
        data += chunk
    os.close(r)
    os.waitpid(pid, 0)
    return [n for n in data.decode("utf-8", "replace").split() if not n.startswith("__")]


def _open_fds():
    fds = set()
    for name in os.listdir("/proc/self/fd"):
        try:
            os.fstat(int(name))
            fds.add(int(name))
        except OSError:
            pass                    # (the listing's own)
    return fds


def _zygote_private_fds():
    """Close what is not a module's; give each regular file a module holds an offset of its own."""
    import stat
    for f in _open_fds() - _S.zygote_fds - {0, 1, 2}:
        try:
            os.close(f)
        except OSError:
            pass
    for f in _S.zygote_fds:
        try:
            st = os.fstat(f)
            if not stat.S_ISREG(st.st_mode):
                continue
            import fcntl
            flags = fcntl.fcntl(f, fcntl.F_GETFL) & ~(os.O_CREAT | os.O_TRUNC | os.O_EXCL)
            pos = os.lseek(f, 0, os.SEEK_CUR)
            inheritable = os.get_inheritable(f)
            nf = os.open("/proc/self/fd/%d" % f, flags)
            os.lseek(nf, pos, os.SEEK_SET)
            os.dup2(nf, f, inheritable=inheritable)
            os.close(nf)
        except OSError:
            pass


def _zygote_fork(req, sock, libc):
    """Clone a kernel's init as a child of the daemon (CLONE_PARENT) in namespaces of its own:
    its pid here, or 0 in the runner it forks."""
    import ctypes
    flags = (0x00008000 | 0x20000000 | 0x00020000 |        # CLONE_PARENT, _NEWPID, _NEWNS
             (0x10000000 if os.geteuid() else 0) | signal.SIGCHLD)  # CLONE_NEWUSER
    r, w = os.pipe()
    libc.syscall.restype = ctypes.c_long
    pid = libc.syscall(56, ctypes.c_ulong(flags), None, None, None, None)   # SYS_clone
    if pid < 0:
        err = ctypes.get_errno()
        os.close(r)
        os.close(w)
        raise OSError(err, "clone: %s" % os.strerror(err))
    if pid == 0:
        os.close(w)
        _zygote_init(req, r, libc)
        return 0                    # the runner
    os.close(r)
    try:
        if os.geteuid():
            # our own ids in its user namespace, as the local backend maps them
            for name, text in (("setgroups", "deny"), ("uid_map", "%d %d 1\n" % (
                    os.geteuid(), os.geteuid())), ("gid_map", "%d %d 1\n" % (
                    os.getegid(), os.getegid()))):
                with open("/proc/%d/%s" % (pid, name), "w") as f:
                    f.write(text)
        os.write(w, b"g")
    finally:
        os.close(w)
    return pid


def _zygote_init(req, go, libc):
    """The kernel's init, pid 1 of its namespace, as backend_local.c's kernel_init: /proc of
    its own, signals passed on to the runner, orphans reaped, the runner's status its own.
    Returns only in the runner it forks."""
    try:
        if os.read(go, 1) != b"g":
            os._exit(127)
        _zygote_private_fds()       # the zygote's socket and everything else of its
        os.setpgid(0, 0)
        libc.prctl(1, signal.SIGKILL, 0, 0, 0)     # PR_SET_PDEATHSIG: dies with the daemon
        if libc.mount(None, b"/", None, 1 << 14 | 1 << 19, None) == 0:   # MS_REC | MS_SLAVE
            libc.mount(b"proc", b"/proc", b"proc", 2 | 8 | 4, None)     # NOSUID NOEXEC NODEV
        passed = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT,
                  signal.SIGUSR1, signal.SIGUSR2)
        caught = passed + (signal.SIGCHLD,)
        for sig in caught:          # pid 1 gets only the signals it handles
            signal.signal(sig, lambda *a: None)
        signal.pthread_sigmask(signal.SIG_BLOCK, caught)
        runner = os.fork()
    except BaseException:
        _log_exc("zygote: kernel init")
        os._exit(127)
    if runner == 0:
        for sig in caught:
            signal.signal(sig, signal.default_int_handler if sig == signal.SIGINT
                          else signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_SETMASK, ())
        _zygote_kernel(req, libc)
        return
    while True:
        try:
            info = signal.sigwaitinfo(caught)
            if info.si_signo != signal.SIGCHLD:
                os.kill(runner, info.si_signo)
                continue
            while True:
                pid, status = os.waitpid(-1, os.WNOHANG)
                if pid == 0:
                    break
                if pid == runner:
                    code = os.waitstatus_to_exitcode(status)
                    os._exit(128 - code if code < 0 else code)
        except ChildProcessError:
            pass
        except BaseException:
            pass


def _zygote_cmdline(runner, channel):
    """/proc/self/cmdline as a cold runner's: the zygote's arguments (which left room for it)
    rewritten in place, "PYTHON RUNNER CHANNEL", the room taken up by slashes in RUNNER."""
    import ctypes
    with open("/proc/self/stat", "rb") as f:
        fields = f.read().rsplit(b")", 1)[1].split()
    start, end = int(fields[45]), int(fields[46])      # arg_start, arg_end (fields 48, 49)
    with open("/proc/self/cmdline", "rb") as f:
        python = f.read().split(b"\0", 1)[0]
    head, tail = os.path.split(os.fsencode(runner))
    room = (end - start) - (len(python) + len(head) + len(tail) + len(os.fsencode(channel)) + 4)
    if room < 0:
        return
    data = b"\0".join((python, head + b"/" * (1 + room) + tail, os.fsencode(channel), b""))
    ctypes.memmove(start, data, len(data))


def _zygote_kernel(req, libc):
    """In the runner forked by a kernel's init: become what a cold runner is before main()."""
    import ctypes
    import random
    try:
        if os.geteuid() != 0:
            # a cold runner is exec'd by a uid that is not root in the namespace: no capabilities
            class Header(ctypes.Structure):
                _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]

            class Data(ctypes.Structure):
                _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32),
                            ("inheritable", ctypes.c_uint32)]
            if libc.capset(ctypes.byref(Header(0x20080522, 0)), (Data * 2)()) != 0:
                raise OSError(ctypes.get_errno(), "capset")
        os.chdir(req["cwd"])
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.close(null)
        try:
            log = os.open(os.path.join(req["channel"], "kernel", "log"),
                          os.O_WRONLY | os.O_APPEND | os.O_NOFOLLOW)
            os.dup2(log, 1)
            os.dup2(log, 2)
            os.close(log)
        except OSError:
            pass
        if req.get("memory"):
            import resource
            m = int(req["memory"])
            resource.setrlimit(resource.RLIMIT_AS, (m, m))
        _S.log_bytes = 0
        random.seed()               # nothing the zygote drew repeats in two kernels
        if "numpy.random" in sys.modules:
            sys.modules["numpy.random"].seed()
        host = os.path.dirname(req["runner"])
        sys.argv[:] = [req["runner"], req["channel"]]
        sys.orig_argv[:] = [sys.executable, req["runner"], req["channel"]]
        sys.path[0] = host
        _zygote_cmdline(req["runner"], req["channel"])
    except BaseException:
        _log_exc("zygote: kernel set-up")
        os._exit(127)


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == "--zygote":
        _zygote(int(sys.argv[2]), sys.argv[3])
    sys.exit(main(sys.argv))
