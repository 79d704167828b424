"""The main module: the runner's start-up, its main loop, and serving one request (its
command file read, its handler run, its done written). It calls the other modules; none of
them imports it.
"""

import builtins
import json
import os
import signal
import sys
import time
import traceback

from . import PROTOCOL
from . import egress
from . import events as _ev
from .capture import _setup_capture
from .events import _drain_fds, _emit, _flush_locked, _on_sigint, _segs
from .fork import _do_fork
from .plots import _ImportHooks, _choose_mpl_backend, _init_plot_counter
from .requests import _HANDLERS, _Stdin, _getpass, _input, _valid_id
from .shell import _PandasWidth, _guard_pip, _make_shell, _shell_here
from .state import CHANNEL_CHECK, KERNELSPEC, RESERVE, SPIN_GAP, \
    RequestError, _S, _log, _log_exc, _monotonic, _read_file, _use_channel, _write_all
from .waiting import _exit_now, _scan, _setup_wakeup, _wait, _woken
from .zygote import _zygote_warm

_RESULTS_OPEN = os.O_WRONLY | os.O_APPEND | os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK
try:
    from _signal import getsignal as _getsignal     # without signal.py's int-to-enum wrapping
except ImportError:
    _getsignal = signal.getsignal
_SIGINT = int(signal.SIGINT)
_decode_request = json.JSONDecoder().decode


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
    with _ev._lock:
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
    with _ev._lock:
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
# start-up and the main loop


def _write_ready(bridged=None):
    info = {"protocol": PROTOCOL, "pid": os.getpid(),
            "python": "%d.%d.%d" % sys.version_info[:3], "cwd": os.getcwd()}
    if bridged is not None:
        info.update(bridged)        # the bridged kernel's kernelspec and language_info
    else:
        from IPython.core.release import version as ipy_version
        info.update({"ipython": ipy_version, "kernelspec": KERNELSPEC,
                     "language_info": {"name": "python", "version": sys.version.split()[0],
                                       "mimetype": "text/x-python",
                                       "codemirror_mode": {"name": "ipython",
                                                           "version": sys.version_info[0]},
                                       "pygments_lexer": "ipython3",
                                       "nbconvert_exporter": "python",
                                       "file_extension": ".py"}})
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


def _start_ipython():
    _choose_mpl_backend()
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
    sys.stdin = _Stdin()        # (fd 0 is /dev/null or the host's wake pipe: not the user's)
    _scan()
    _write_ready()


def main(argv):
    if len(argv) != 2:
        sys.stderr.write("usage: runner.zip CHANNEL_DIR\n")
        return 2
    _use_channel(os.path.abspath(argv[1]))
    _S.last_check = _monotonic()
    # what tests and tools reach the runner by (its _S, _emit, _HANDLERS, _log, ...)
    sys.modules.setdefault("_cellbox_runner", sys.modules[__name__])

    signal.signal(signal.SIGINT, _on_sigint)
    _setup_capture()
    bridge = os.environ.pop("CELLBOX_BRIDGE", None)
    try:
        _S.reserve = _new_reserve()
        _setup_wakeup()
        _init_plot_counter()
        egress.start()          # an allow-list: 127.0.0.1 to the host's proxy
        if bridge:
            # Another Jupyter kernel, spoken to over ZMQ in here (runner.bridge).
            from .bridge import start
            bridged = start(bridge)
            _scan()
            _write_ready(bridged)
        else:
            _start_ipython()
    except BaseException:
        _log_exc("start-up failed")
        _exit_now(1)

    return _loop()


def _forked_loop():
    """The loop of a fork's copy (fork.py): it serves its new channel until the runner ends."""
    _loop()
    _exit_now(0)


# the fork request: served here, where the ready file and the loop are
_HANDLERS["fork"] = lambda req: _do_fork(req, _write_ready, _forked_loop)


def _loop():
    pending = _S.pending
    served = False
    build_completer = _S.shell is not None and hasattr(_S.shell, "Completer")
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

