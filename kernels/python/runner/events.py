"""Writing events to the results file of the request being served.

The text of sys.stdout / sys.stderr (capture.py) and of fds 1 and 2 goes into one ordered list
of segments, sent as stream events in batches (the flusher thread sends them within
FLUSH_DELAY) and always before the next event; _emit() writes an event line. The main thread
writing an event is a critical section: SIGINT (_on_sigint) is deferred to its end.
"""

import json
import os
import threading
import time

from .state import CHUNK, FLUSH_DELAY, _MAIN, _S, _get_ident, _log, _log_exc, _monotonic, \
    _write_all

_enc = json.JSONEncoder(ensure_ascii=False, allow_nan=False, separators=(",", ":"))
_dumps = _enc.encode


# --------------------------------------------------------------------------------------------
# event output.  Everything that writes events holds _lock; the text of stdout/stderr is kept in
# one ordered list of segments so that the interleaving of the two streams survives batching.

_lock = threading.Lock()     # (made again in a forked child: other modules say _ev._lock)
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


# --------------------------------------------------------------------------------------------
# fd capture: fds 1 and 2 are pipes (capture.py); what they hold joins the same ordered text.


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


# --------------------------------------------------------------------------------------------
# SIGINT


def _on_sigint(signum, frame):
    if not _S.executing:
        return
    if _S.critical:
        _S.pending_int = True
        return
    raise KeyboardInterrupt

