"""Output capture: sys.stdout / sys.stderr as streams whose text becomes stream events, and
fds 1 and 2 as pipes whose reader thread does the same for child processes and C code.

Both feed events.py's one ordered buffer; a Python-level write first takes what is already in
the pipes, so `print(); os.system(); print()` keeps its order.
"""

import codecs
import io
import os
import select
import sys
import threading
import time

from . import events as _ev
from .events import _Fd, _add, _drain_locked, _enter, _flush_locked, _flusher, _leave, \
    _read_one, _segs
from .state import _S, _log_exc, _monotonic, _write_all


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


class OutStream(_WriteOnly, io.TextIOBase):
    """sys.stdout / sys.stderr: text goes to stream events. (ipykernel's class name: a library
    that asks type(sys.stdout).__name__ whether it writes to a notebook gets its answer.)"""

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
            with _ev._fdlock:
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
            with _ev._lock:
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


def _take_prompt():
    """The text written to sys.stdout after its last newline, when still unsent: taken out of
    the stream to be the prompt of a read of sys.stdin (as a terminal shows it). '' else."""
    with _ev._lock:
        if not _segs or _segs[-1][0] != "stdout":
            return ""
        texts = _segs[-1][1]
        whole = "".join(texts)
        cut = whole.rfind("\n") + 1
        prompt = whole[cut:]
        if not prompt:
            return ""
        if cut:
            texts[:] = [whole[:cut]]
        else:
            del _segs[-1]
        _ev._cap["pend"] -= len(prompt)
        return prompt


def _fd_reader():
    p = select.poll()
    for fd in _Fd.fds:
        p.register(fd, select.POLLIN)
    while True:
        try:
            for fd, ev in p.poll():
                if ev & select.POLLIN:
                    with _ev._fdlock:
                        _read_one(fd)
                elif ev & (select.POLLERR | select.POLLNVAL | select.POLLHUP):
                    p.unregister(fd)
        except Exception:
            _log_exc("fd reader")
            time.sleep(0.1)


def _after_fork_child():
    """In a child forked by user code: no threads here, so stream text goes straight to the
    inherited pipes (read by the parent's fd reader) and no event is ever written."""
    _ev._lock = threading.Lock()        # (every module takes them as _ev._lock, _ev._fdlock)
    _ev._fdlock = threading.Lock()
    del _segs[:]
    _S.forked = True
    _S.out_fd = -1
    _S.critical = 0
    _S.pending_int = False


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
    sys.stdout = OutStream("stdout", 1)
    sys.stderr = OutStream("stderr", 2)
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
