"""The security policy's runtime guard (request `policy`): imports by the user's code of the
policy's modules are refused, and, when the policy restricts a module that starts processes
(os, subprocess, ...) or ctypes, so is starting a process or loading foreign code, whoever asks.

The host checks every cell before sending it; this second layer catches what a reading of the
text cannot see:
- imports: `builtins.__import__`, `importlib.import_module` and `importlib.__import__` are
  wrapped, and an audit hook sees the import system's first load of a module (audit event
  `import`). Code is the user's or a library's by its code object's file (co_filename under the
  interpreter's library and site-packages directories, resolved when the guard starts, or the
  runner's own files), never by its globals: a code string a library runs (timeit, pdb, code,
  runpy) is the user's whatever namespace it runs in. The import system's own frames
  (importlib, imp) are skipped to find who imports.
- processes: an audit hook (sys.addaudithook, which Python code cannot remove) refuses the
  events that start one (os.system, os.exec, os.posix_spawn, os.spawn, os.fork, os.forkpty,
  subprocess.Popen, pty.spawn) from any caller: so a module's own reference to os
  (tempfile._os), posix, pty, pydoc's pagers, asyncio's subprocesses and the rest are refused
  alike; _posixsubprocess.fork_exec, which raises no event, is replaced.
- ctypes: the events ctypes.dlopen and ctypes.dlsym are refused from any caller.
  (These refusals are a PermissionError, an OSError, as a failure to start a process is.)
- code objects given a library's file name (compile, code.replace/CodeType, marshal.loads by
  the user) are refused, so that user code cannot pass for a library's.
A tripwire, not a wall: code in the kernel can still take it apart (ctypes through addresses it
already has, the gc and frames to reach the guard's own state); the container is the wall.
"""

import builtins
import errno
import os
import site
import sys
import sysconfig

from .events import _emit
from .state import RequestError


class SecurityViolation(ImportError):
    """An import that the session's security policy refuses."""


class _Refused(PermissionError):
    """A process or foreign code that the policy refuses: an OSError (EPERM), as a failure to
    start one is, so that a library which tries one and copes without it (platform's `uname
    -p`, which pandas' import asks for) goes on; shown as SecurityViolation too."""

    def __init__(self, why):
        super().__init__(errno.EPERM, why)

    def __str__(self):
        return self.strerror


_Refused.__name__ = _Refused.__qualname__ = "SecurityViolation"


class _Guard:
    modules = {}             # restricted name -> (description, severity)
    policy = ""
    trusted = False          # serving the host's own code (files in and out)
    real_import = None
    real_import_module = None


# The events that start a process, and those that load foreign code through ctypes.
_SPAWN_EVENTS = frozenset(("os.system", "os.exec", "os.posix_spawn", "os.spawn", "os.fork",
                           "os.forkpty", "subprocess.Popen", "pty.spawn", "os.startfile"))
_CTYPES_EVENTS = frozenset(("ctypes.dlopen", "ctypes.dlsym", "ctypes.dlsym/handle"))
# A policy that restricts one of these refuses processes; ctypes, foreign code.
_SPAWNERS = ("os", "posix", "subprocess", "pty", "multiprocessing", "_posixsubprocess")
_FOREIGN = ("ctypes", "_ctypes")
# The modules a restricted module stands for: os is posix, pty and _posixsubprocess by another
# name; ctypes is _ctypes.
_IMPLIED = {"os": ("posix", "pty", "_posixsubprocess"), "subprocess": ("_posixsubprocess",),
            "ctypes": ("_ctypes",)}

_HERE = sys._getframe().f_code.co_filename
_OWN_DIR = os.path.dirname(_HERE) + os.sep          # runner.zip/runner/: the runner's files
_IMPORTLIB_DIR = os.path.dirname(os.path.abspath(__import__("importlib").__file__)) + os.sep
_IMP_FILE = os.path.join(os.path.dirname(_IMPORTLIB_DIR.rstrip(os.sep)), "imp.py")


def _library_dirs():
    """The directories whose files are libraries: the standard library's, site-packages and
    dist-packages (sysconfig's, site's, those on sys.path now), each also as its real path."""
    dirs = set()
    paths = sysconfig.get_paths()
    for key in ("stdlib", "platstdlib", "purelib", "platlib"):
        if paths.get(key):
            dirs.add(paths[key])
    try:
        dirs.update(site.getsitepackages())
    except AttributeError:          # a venv's site module of old
        pass
    for p in sys.path:
        if isinstance(p, str) and os.path.basename(p.rstrip(os.sep)) in ("site-packages",
                                                                        "dist-packages"):
            dirs.add(p)
    out = set()
    for d in dirs:
        if os.path.isabs(d):
            out.add(os.path.normpath(d) + os.sep)
            out.add(os.path.realpath(d) + os.sep)
    return tuple(sorted(out))


_LIB_DIRS = _library_dirs()
_LIB_CACHE = {}


def _is_library(filename):
    """Whether code of `filename` (a co_filename) is a library's or the runner's."""
    if not isinstance(filename, str):
        return False
    hit = _LIB_CACHE.get(filename)
    if hit is None:
        hit = filename.startswith("<frozen ") or filename.startswith(_OWN_DIR) or (
            os.path.isabs(filename) and os.path.normpath(filename).startswith(_LIB_DIRS))
        if len(_LIB_CACHE) < 4096:
            _LIB_CACHE[filename] = hit
    return hit


def _machinery(filename):
    """Whether `filename` is the import system's (whose frames are skipped to find who
    imports) or this file's."""
    return (filename == _HERE or filename.startswith("<frozen importlib.")
            or filename.startswith(_IMPORTLIB_DIR) or filename == _IMP_FILE)


def _from_user(frame):
    """Whether the code that asks, from `frame` outward past the import system's functions, is
    the user's (a cell, a code string, a file of theirs) rather than a library's. (The body of
    importlib's or imp's own modules imports for itself: a library.)"""
    while frame is not None and _machinery(frame.f_code.co_filename) \
            and frame.f_code.co_name != "<module>":
        frame = frame.f_back
    return frame is not None and not _is_library(frame.f_code.co_filename)


def _restricted(full):
    """The restricted module `full` falls under, as (name, description, severity), or None."""
    part = full
    while part:
        if part in _Guard.modules:
            desc, sev = _Guard.modules[part]
            return part, desc, sev
        part = part.rpartition(".")[0]
    return None


def _refused(name, fromlist, level, frame):
    """Why the policy refuses this import by the code of `frame`, or None."""
    if _Guard.trusted or level or not isinstance(name, str) or not _from_user(frame):
        return None
    names = [name]
    if fromlist:
        names += ["%s.%s" % (name, f) for f in fromlist if isinstance(f, str)]
    for full in names:
        hit = _restricted(full)
        if hit:
            return ("import of %r refused by the security policy %r (module %s: %s, %s)"
                    % ((full, _Guard.policy) + hit))
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


def _refused_fork_exec(*args, **kwargs):
    raise _Refused("starting a process refused by the security policy %r" % _Guard.policy)


def _make_audit_hook():
    """The audit hook, and the function that turns its refusals on. Its switches live in its
    closure and only ever turn on (a second policy request adds, never removes)."""
    on = {"spawn": False, "ctypes": False}

    def hook(event, args):
        if event in _SPAWN_EVENTS:
            if on["spawn"]:
                raise _Refused("starting a process (%s) refused by the security policy %r"
                               % (event, _Guard.policy))
        elif event in _CTYPES_EVENTS:
            if on["ctypes"]:
                raise _Refused("loading foreign code (%s) refused by the security policy %r"
                               % (event, _Guard.policy))
        elif event == "import":
            if args and not _Guard.trusted:
                hit = isinstance(args[0], str) and _restricted(args[0])
                if hit and _from_user(sys._getframe(1)):
                    raise SecurityViolation(
                        "import of %r refused by the security policy %r (module %s: %s, %s)"
                        % ((args[0], _Guard.policy) + hit), name=args[0])
        elif event in ("compile", "code.__new__", "marshal.loads", "marshal.load"):
            if on["spawn"] or on["ctypes"]:
                _check_code_event(event, args, sys._getframe(1))

    def turn_on(spawn, ctypes_):
        on["spawn"] = on["spawn"] or spawn
        on["ctypes"] = on["ctypes"] or ctypes_

    return hook, turn_on


def _check_code_event(event, args, caller):
    """Refuse code objects that would pass for a library's: compiled by the user with a
    library's file name, built or replaced with one (CodeType, code.replace), or unmarshalled
    by the user (a .pyc is the import system's to load)."""
    if _Guard.trusted:
        return
    if event == "compile":
        name = args[1] if len(args) > 1 else None
        if (isinstance(name, str) and _is_library(name) and caller is not None
                and not _machinery(caller.f_code.co_filename)
                and not _is_library(caller.f_code.co_filename)):
            raise SecurityViolation("code compiled under a library's name (%r) refused by the "
                                    "security policy %r" % (name, _Guard.policy))
    elif event == "code.__new__":
        name = args[1] if len(args) > 1 else None
        if isinstance(name, str) and _is_library(name) and _from_user(caller):
            raise SecurityViolation("a code object under a library's name (%r) refused by the "
                                    "security policy %r" % (name, _Guard.policy))
    elif caller is not None and not _is_library(caller.f_code.co_filename):
        raise SecurityViolation("marshal.loads refused by the security policy %r"
                                % _Guard.policy)


_AUDIT = [None]          # the turn_on of the installed hook (installed once: hooks stay)


def _install(table):
    """Put the import wrappers and the audit hook in place; turn on the refusals `table`
    calls for."""
    if _Guard.real_import is None:
        import importlib
        _Guard.real_import = builtins.__import__
        _Guard.real_import_module = importlib.import_module
        builtins.__import__ = _guarded_import
        importlib.import_module = _guarded_import_module
        importlib.__import__ = _guarded_import
    if _AUDIT[0] is None:
        hook, _AUDIT[0] = _make_audit_hook()
        sys.addaudithook(hook)
    spawn = any(m in table for m in _SPAWNERS)
    foreign = any(m in table for m in _FOREIGN)
    _AUDIT[0](spawn, foreign)
    if spawn:
        # fork_exec starts a process without an audit event: nobody may call it now.
        for mod in ("_posixsubprocess", "subprocess"):
            m = sys.modules.get(mod)
            for attr in ("fork_exec", "_fork_exec"):
                if m is not None and hasattr(m, attr):
                    setattr(m, attr, _refused_fork_exec)


def _do_policy(req):
    mods = req.get("modules")
    if not isinstance(mods, list):
        raise RequestError("policy: 'modules' must be a list")
    table = {}
    for m in mods:
        if not isinstance(m, dict) or not isinstance(m.get("name"), str):
            raise RequestError("policy: each module needs a 'name'")
        table[m["name"]] = (str(m.get("description", "")), str(m.get("severity", "")))
    names = sorted(table)
    for name in names:
        for alias in _IMPLIED.get(name, ()):
            table.setdefault(alias, (table[name][0] + " (as %s)" % name, table[name][1]))
    _Guard.modules = table
    _Guard.policy = str(req.get("policy", ""))
    _install(table)
    _emit({"type": "reply", "modules": names})
    return "ok"
