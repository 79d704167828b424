"""The request kinds the runner serves (execute, complete, inspect, is_complete, clear_plots,
shutdown; policy is guard.py's) and input() / getpass() / sys.stdin answered through input
requests.

A debugger (pdb, IPython's ipdb: %debug, %pdb, breakpoint()) reads its commands through
input(), so its prompt is an input request too. An interrupt while it waits for one leaves the
debugger (as end of input does) and ends the cell as interrupted: pdb's own answer to Ctrl-C at
its prompt is to ask again, which would keep the cell running until the host kills the kernel.
"""

import io
import json
import os
import sys

from .capture import _take_prompt
from .events import _emit
from .guard import _Guard, _do_policy
from .plots import _capture_open_figures, _clear_plots
from .shell import _apply_width
from .state import CHANNEL_CHECK, NO_STDIN_MSG, RequestError, _S, _log, _read_file
from .waiting import _wait


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


class _Stdin(io.TextIOBase):
    """sys.stdin: each read asks the front end for one line (an input request whose prompt is
    the text the cell wrote to stdout just before, when it is still here to take)."""

    encoding = "utf-8"
    errors = "strict"
    name = "<stdin>"

    def readable(self):
        return True

    def isatty(self):
        return False

    def close(self):
        pass

    def fileno(self):
        # fd 0, as before (/dev/null or the host's wake pipe): code that asks os.isatty() or
        # termios about it still learns that there is no terminal; reads come here.
        return 0

    def readline(self, size=-1):
        if not _S.allow_stdin or _S.req_id is None:
            from IPython.core.error import StdinNotImplementedError
            raise StdinNotImplementedError(NO_STDIN_MSG)
        try:
            line = _ask(_take_prompt(), False) + "\n"
        except EOFError:
            return ""                   # (a debugger reading sys.stdin: interrupted, it ends)
        return line if size is None or size < 0 else line[:max(size, 1)]

    def read(self, size=-1):
        return self.readline(size)      # a terminal's read() too ends at the line's end

    def readlines(self, hint=-1):
        return [self.readline()]


def _debugger_prompt():
    """Whether input() was called by a debugger's command loop (cmd.Cmd.cmdloop of a Bdb)."""
    import bdb
    f = sys._getframe(2)
    for _ in range(6):
        if f is None:
            return False
        if f.f_code.co_name == "cmdloop" and isinstance(f.f_locals.get("self"), bdb.Bdb):
            return True
        f = f.f_back
    return False


def _ask(prompt, password):
    try:
        return _wait_answer(prompt, password)
    except KeyboardInterrupt:
        if not _debugger_prompt():
            raise
        # Leave the debugger as end of input does (pdb's do_EOF: it quits); the cell then
        # ends as interrupted (_do_execute).
        _S.input_interrupted = True
        raise EOFError


def _wait_answer(prompt, password):
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
    _S.input_interrupted = False
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
    if _S.input_interrupted:
        # Ctrl-C at a debugger's prompt: the debugger quit; say so as an interrupt does.
        shell._showtraceback(KeyboardInterrupt, KeyboardInterrupt(),
                             ["\x1b[0;31mKeyboardInterrupt\x1b[0m"])
        return "aborted"
    if not res.success or plots_ok is False:
        return "error"
    return "ok"


def _code_and_cursor(req):
    """A complete or inspect request's code and cursor (the end of the code when not given)."""
    code = req.get("code", "")
    pos = req.get("cursor_pos")
    return code, len(code) if pos is None else pos


def _do_complete(req):
    from IPython.core.completer import provisionalcompleter, rectify_completions
    code, pos = _code_and_cursor(req)
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
    code, pos = _code_and_cursor(req)
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

