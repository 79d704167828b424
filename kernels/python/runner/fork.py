"""The fork request (PROTOCOL.md, its `fork` request kind): a copy of this kernel process, with
every variable, import and object it holds, made the kernel of another channel that the host
made for it. The copy is forked twice (the middle child leaves at once, so the copy is an
orphan its pid namespace's init reaps, in a process session and group of its own, which the
host that adopts it signals), lets go of everything of this channel's, makes its capture,
wake-up and channel state again for the new channel, writes that channel's ready and serves
it until it ends. The request's answer is done "ok" once the copy said its pid (the host
learns it as every host does: the new channel's ready file).
"""

import os
import sys
import threading
import warnings

from . import events as _ev
from .capture import _setup_capture
from .events import _Fd, _segs
from .plots import _init_plot_counter
from .state import RequestError, _S, _log_exc, _use_channel
from .waiting import _scan, _setup_wakeup

FORK_WAIT = 20.0             # seconds the copy has to say it serves (within the host's 30)


def _do_fork(req, ready, loop):
    """Serve a fork request. In the copy, `ready()` writes the new channel's ready file and
    `loop()` serves it (serve.py's): it never returns there."""
    channel = req.get("channel")
    if not isinstance(channel, str) or not os.path.isabs(channel) or "\0" in channel:
        raise RequestError("fork: 'channel' must be an absolute path")
    kernel_dir = os.path.join(channel, "kernel")
    if not os.path.isdir(kernel_dir) or not os.path.isdir(os.path.join(channel, "host")):
        raise RequestError("fork: %r is not a channel" % channel)
    r, w = os.pipe()
    old_out = _S.out_fd
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")         # (3.12: "fork() of a process with threads")
        pid = os.fork()
    if pid == 0:
        code = 1
        try:
            os.close(r)
            os.setsid()
            if os.fork() != 0:
                code = 0
            else:
                _become(channel, old_out)
                ready()
                os.write(w, b"%d\n" % os.getpid())
                os.close(w)
                loop()
                code = 0
        except BaseException:
            _log_exc("fork: the copy")
        os._exit(code)
    os.close(w)
    try:
        os.waitpid(pid, 0)
        said = _read_until_eof(r)
    finally:
        os.close(r)
    if not said.strip().isdigit():
        raise RequestError("fork: the copy did not start (its channel's log says why)")
    return "ok"


def _read_until_eof(fd):
    import select
    data = b""
    p = select.poll()
    p.register(fd, select.POLLIN)
    while len(data) < 64:
        if not p.poll(int(FORK_WAIT * 1000)):
            break
        chunk = os.read(fd, 64)
        if not chunk:
            break
        data += chunk
    return data.decode("ascii", "replace")


def _close(fd):
    try:
        if fd is not None and fd >= 0:
            os.close(fd)
    except OSError:
        pass


def _become(channel, old_out):
    """In the copy: this process made the kernel of `channel` (but for its ready file)."""
    # Nothing of the old channel's stays open: its directories, the fork request's results
    # file, the wake-up, the old capture pipes' read ends (their writers are the parent's).
    for fd in (_S.cmd_fd, _S.res_fd, old_out, _S.ino_fd, _S.fifo_fd, _S.log_fd):
        _close(fd)
    for fd in list(_Fd.fds):
        _close(fd)
    _Fd.fds.clear()
    _S.ino_fd = _S.fifo_fd = _S.log_fd = -1
    _S.out_fd = -1
    _S.req_id = None
    _S.executing = False
    # What _after_fork_child made for a child of user code: this one is a kernel again.
    _S.forked = False
    _ev._lock = threading.Lock()
    _ev._fdlock = threading.Lock()
    _ev._wake = threading.Event()
    del _segs[:]
    _ev._cap.update(pend=0, last=0.0, armed=False)
    _S.served.clear()               # (the same sets: the loop holds them)
    _S.pending.clear()
    _S.done_at = 0.0
    _S.log_bytes = 0
    if len(sys.argv) > 1:
        sys.argv[-1] = channel      # as a runner started on it has it (its /proc cmdline keeps
                                    # the old one's: no room to write it there)
    _use_channel(channel)
    log = os.open(os.path.join(_S.kernel_dir, "log"), os.O_WRONLY | os.O_APPEND | os.O_NOFOLLOW)
    os.dup2(log, 1)
    os.dup2(log, 2)
    os.close(log)
    _Fd.drain_poll = None
    _setup_capture()                # new pipes on fds 1 and 2, their threads, the log
    _setup_wakeup()
    _init_plot_counter()
    _scan()
