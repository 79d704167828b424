"""Waiting for commands: inotify on commands/ through ctypes, or a byte on stdin per command
where inotify does not see the host's writes (gVisor), or the host's wake FIFO, else polling;
the spin after a done; the channel check that ends a runner whose channel is gone.
"""

import os
import select
import struct
import time

from . import events as _ev
from .events import _enter, _flush_locked, _leave, _segs
from .state import CHANNEL_CHECK, POLL_FALLBACK, SPIN, _S, _log, _monotonic

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
_unpack_event = struct.Struct("iIII").unpack_from


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
        with _ev._lock:
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
