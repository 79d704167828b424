"""The bridge: any installed Jupyter kernel served through the channel (`--kernel jupyter:NAME`).

    CELLBOX_BRIDGE=NAME python3 runner.zip CHANNEL_DIR

The runner starts the kernelspec NAME with jupyter_client where the runner runs (in the
sandbox), speaks ZMQ to it on that side's loopback (messages signed with a key of this run's),
and serves the host's requests as the IPython runner does, through serve.py's loop: an execute becomes an
execute_request, and the kernel's iopub messages for it become the channel's events (stream,
display with its plot written to plots/, result, error, clear_output); its input_request asks
the host as input() does; complete, inspect and is_complete are the kernel's replies. SIGINT
during a cell is passed on as the kernelspec says (a signal or an interrupt_request). ZMQ never
leaves the sandbox: the host sees files, as from any runner. A kernel that dies ends the runner,
so the host sees the death as a kernel's. With "existing:FILE" (--existing) it joins the
running kernel of connection file FILE instead, and leaves it running.
"""

import os
import queue
import signal

from .events import _emit
from .plots import _rich_event
from .requests import _HANDLERS, _ask
from .state import RequestError, _S, _log, _log_exc
from .waiting import _exit_now

_POLL = 0.05            # seconds between looks at the kernel while a cell runs
_REPLY_TIMEOUT = 30.0   # a reply of the kernel's to complete, inspect, is_complete, info


class _Count:
    """What serve._finish reads: execution_count, one past the last cell's count."""
    execution_count = 1


class _B:
    km = None
    kc = None
    name = ""
    interrupt = False   # SIGINT came while a cell ran: passed on at the next look
    in_input = False    # waiting for the host's answer to an input request: SIGINT raises


def _on_sigint(signum, frame):
    """SIGINT while a cell runs. Never raised inside jupyter_client's calls (its event loop
    would be left broken): noted, and passed on by the loop that waits for the cell."""
    _B.interrupt = True
    if _B.in_input:
        raise KeyboardInterrupt


def _pass_interrupt():
    _B.interrupt = False
    try:
        if _B.km is None:           # --existing: not our child; the control channel's message
            _B.kc.control_channel.send(_B.kc.session.msg("interrupt_request", {}))
        else:
            _B.km.interrupt_kernel()
    except Exception:
        _log_exc("interrupting the bridged kernel")


def _alive_or_exit():
    """A kernel that died ends the runner with its exit code: the host sees its death."""
    if _B.km is None:               # --existing: not ours; its heartbeat says
        if _B.kc.is_alive():
            return
        _log("cellbox runner: the existing kernel stopped answering its heartbeat")
        _exit_now(1)
    if _B.km.is_alive():
        return
    code = None
    try:
        code = _B.km.provisioner.process.poll()
    except Exception:
        pass
    _log("cellbox runner: the Jupyter kernel %r died (%s)" % (
        _B.name, "exit code %s" % code if code is not None and code >= 0 else
        "signal %s" % -code if code is not None else "exit status unknown"))
    _exit_now(code if isinstance(code, int) and 0 < code < 126 else 1)


def _reply(msg_id, timeout=_REPLY_TIMEOUT):
    """The shell reply to `msg_id` (others, late ones of earlier requests, are dropped)."""
    while True:
        try:
            msg = _B.kc.get_shell_msg(timeout=timeout)
        except queue.Empty:
            _alive_or_exit()
            raise RequestError("the kernel did not answer in %d s" % timeout)
        if msg["parent_header"].get("msg_id") == msg_id:
            return msg["content"]


def _event_of(msg):
    """One iopub message of the running cell as the channel's event(s); True at its idle."""
    t, c = msg["msg_type"], msg["content"]
    if t == "stream":
        name = c.get("name") if c.get("name") in ("stdout", "stderr") else "stdout"
        _emit({"type": "stream", "name": name, "text": str(c.get("text", ""))})
    elif t in ("display_data", "update_display_data"):
        extra = {}
        did = (c.get("transient") or {}).get("display_id")
        if did is not None:
            extra["display_id"] = str(did)
        if t == "update_display_data":
            extra["update"] = True
        _rich_event("display", c.get("data") or {}, c.get("metadata") or {}, **extra)
    elif t == "execute_result":
        count = c.get("execution_count")
        _rich_event("result", c.get("data") or {}, c.get("metadata") or {},
                    execution_count=count if isinstance(count, int) else -1)
    elif t == "error":
        _emit({"type": "error", "ename": str(c.get("ename", "")),
               "evalue": str(c.get("evalue", "")),
               "traceback": [str(x) for x in c.get("traceback") or []]})
    elif t == "clear_output":
        _emit({"type": "clear_output", "wait": bool(c.get("wait"))})
    elif t == "status" and c.get("execution_state") == "idle":
        return True
    return False


def _answer_input(msg):
    """The kernel's input_request: asked of the host as input() asks; an interrupt while it
    waits is the kernel's (its input() raises), and no answer goes."""
    c = msg["content"]
    _B.in_input = True
    try:
        value = _ask(str(c.get("prompt", "")), bool(c.get("password")))
    except (KeyboardInterrupt, EOFError):
        _pass_interrupt()
        return
    finally:
        _B.in_input = False
    _B.kc.input(value)


def _stdin_requests():
    """The kernel's input_requests waiting now, each asked of the host."""
    while True:
        try:
            msg = _B.kc.get_stdin_msg(timeout=0)
        except queue.Empty:
            return
        if msg["msg_type"] == "input_request":
            _answer_input(msg)


def _do_execute(req):
    code = req.get("code", "")
    if not isinstance(code, str):
        raise RequestError("execute: 'code' must be a string")
    silent = bool(req.get("silent", False))
    _S.allow_stdin = bool(req.get("allow_stdin", False))
    msg_id = _B.kc.execute(code, silent=silent, store_history=not silent,
                           allow_stdin=_S.allow_stdin)
    interrupted = False
    _B.interrupt = False
    signal.signal(signal.SIGINT, _on_sigint)    # serve._finish puts the runner's back
    while True:
        if _B.interrupt:
            # The host's SIGINT (Ctrl-C, a timeout): passed on; the kernel ends the cell.
            interrupted = True
            _pass_interrupt()
        try:
            if _S.allow_stdin:
                _stdin_requests()
            msg = _B.kc.get_iopub_msg(timeout=_POLL)
        except queue.Empty:
            _alive_or_exit()
            continue
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        if _event_of(msg):
            break
    content = _reply(msg_id)
    count = content.get("execution_count")
    if isinstance(count, int) and not silent:
        _S.shell.execution_count = count + 1
    status = content.get("status")
    if interrupted and status != "ok":
        return "aborted"
    return "ok" if status == "ok" else "error"


def _code_and_cursor(req):
    code = req.get("code", "")
    if not isinstance(code, str):
        raise RequestError("'code' must be a string")
    pos = req.get("cursor_pos")
    return code, len(code) if not isinstance(pos, int) else pos


def _do_complete(req):
    code, pos = _code_and_cursor(req)
    c = _reply(_B.kc.complete(code, pos))
    # Empty ones dropped: metakernel's (Octave's) come with two "" first.
    matches = [str(m) for m in c.get("matches") or [] if m]
    start, end = c.get("cursor_start", pos), c.get("cursor_end", pos)
    _emit({"type": "reply", "matches": matches,
           "cursor_start": start if isinstance(start, int) else pos,
           "cursor_end": end if isinstance(end, int) else pos})
    return "ok"


def _do_inspect(req):
    code, pos = _code_and_cursor(req)
    c = _reply(_B.kc.inspect(code, pos, 1 if req.get("detail_level") else 0))
    data = c.get("data") or {}
    found = bool(c.get("found")) and "text/plain" in data
    _emit({"type": "reply", "found": found,
           "data": {"text/plain": str(data["text/plain"])} if found else {}})
    return "ok"


def _do_is_complete(req):
    code = req.get("code", "")
    if not isinstance(code, str):
        raise RequestError("'code' must be a string")
    c = _reply(_B.kc.is_complete(code))
    status = c.get("status")
    if status not in ("complete", "incomplete", "invalid"):
        status = "complete"         # "unknown": a line runs as it is
    indent = c.get("indent", "") if status == "incomplete" else ""
    _emit({"type": "reply", "status": status, "indent": indent if isinstance(indent, str) else ""})
    return "ok"


def _do_clear_plots(req):
    from .plots import _clear_plots
    _emit({"type": "reply", "cleared": _clear_plots()})
    return "ok"


def _do_shutdown(req):
    try:
        if _B.km is None:
            _B.kc.stop_channels()   # --existing: someone else's kernel runs on
        else:
            _B.km.shutdown_kernel(now=False)
    except Exception:
        _log_exc("shutting the bridged kernel down")
    return "ok"


def _do_policy(req):
    raise RequestError("a security policy reads Python only: not a bridged kernel's cells")


def _connect(path):
    """--existing: a client of the kernel whose connection file is `path` (not started here,
    not ended here)."""
    from jupyter_client.blocking import BlockingKernelClient
    kc = BlockingKernelClient()
    try:
        kc.load_connection_file(path)
    except (OSError, ValueError, KeyError, TypeError) as e:
        _log("cellbox runner: --existing %s: not a connection file (%s)" % (path, e))
        _exit_now(1)
    kc.start_channels()
    try:
        kc.wait_for_ready(timeout=30)
    except RuntimeError as e:
        _log("cellbox runner: --existing %s: the kernel does not answer (%s)" % (path, e))
        _exit_now(1)
    return kc


def start(name):
    """Start kernelspec `name` (or connect to the kernel of "existing:FILE") and take the
    runner's handlers over; the ready file's extra."""
    if name.startswith("existing:"):
        return _take_over(None, _connect(name[len("existing:"):]), name)
    try:
        from jupyter_client.kernelspec import NoSuchKernel
        from jupyter_client.manager import KernelManager
    except ImportError:
        _log("cellbox runner: no jupyter_client here to start the Jupyter kernel %r with" % name)
        _exit_now(1)
    # On loopback (in a container, its own: --network none keeps it): not every kernel
    # takes ipc sockets (xeus's do not). The messages are signed with a key of this run's.
    km = KernelManager(kernel_name=name, transport="tcp", ip="127.0.0.1")
    try:
        km.kernel_spec
    except NoSuchKernel:
        _log("cellbox runner: no Jupyter kernel named %r where the kernel runs "
             "(jupyter kernelspec list)" % name)
        _exit_now(1)
    log = _S.log_fd if getattr(_S, "log_fd", -1) >= 0 else 2
    # The kernel has no terminal: TERM=dumb says so (the kernelspec's own env still wins). A
    # kernel that drives its language's REPL on a pty (Octave's, bash's: pexpect) otherwise
    # gets readline's bracketed-paste escapes and an echoed line in every stream.
    env = dict(os.environ, TERM="dumb")
    with open(os.devnull) as null:
        km.start_kernel(stdout=log, stderr=log, stdin=null, cwd=os.getcwd(), env=env)
    kc = km.client()
    kc.start_channels()
    try:
        kc.wait_for_ready(timeout=60)
    except RuntimeError as e:
        km.shutdown_kernel(now=True)
        raise RuntimeError("the kernel %r did not start: %s" % (name, e))
    return _take_over(km, kc, name)


def _take_over(km, kc, name):
    _B.km, _B.kc, _B.name = km, kc, name
    info = _reply(kc.kernel_info(), timeout=60)
    _S.shell = _Count()
    _HANDLERS.clear()
    _HANDLERS.update(execute=_do_execute, complete=_do_complete, inspect=_do_inspect,
                     is_complete=_do_is_complete, clear_plots=_do_clear_plots,
                     shutdown=_do_shutdown, policy=_do_policy)
    lang = info.get("language_info") or {}
    if km is not None:
        spec = {"name": name, "display_name": km.kernel_spec.display_name,
                "language": km.kernel_spec.language}
    else:
        spec = {"name": str(info.get("implementation", "existing")),
                "display_name": str(info.get("implementation", "existing")),
                "language": str(lang.get("name", ""))}
    return {"bridge": name, "language_info": lang,
            "implementation": str(info.get("implementation", "")),
            "version": str(lang.get("version", "")), "kernelspec": spec}

