"""The security policy's import hook (request `policy`): imports by the user's code of the
policy's modules are refused; the runner's own modules and libraries import freely.

The host checks every cell before sending it; this second layer refuses the policy's modules
when code imports them by a name only known at run time (__import__('o' + 's')). A tripwire,
not a wall: code in the kernel can take it apart.
"""

import builtins
import sys

from .events import _emit
from .state import RequestError


class SecurityViolation(ImportError):
    """An import that the session's security policy refuses."""


class _Guard:
    modules = {}             # restricted name -> (description, severity)
    policy = ""
    trusted = False          # serving the host's own code (files in and out)
    real_import = None
    real_import_module = None


# The globals of the runner's own modules, every module of this package (runner.*, in the zip:
# files runner.zip/runner/<module>.py): code there is the runner's, never the user's. Held, so
# that their ids stay theirs; taken at start-up, before any user code (serve.main).
_OWN = [globals()]
_OWN_IDS = frozenset(map(id, _OWN))


def _own_modules():
    """Take every module of this package imported by now as the runner's own."""
    global _OWN_IDS
    package = __name__.rpartition(".")[0]
    for name, module in list(sys.modules.items()):
        g = getattr(module, "__dict__", None)
        if (name == package or name.startswith(package + ".")) and isinstance(g, dict) \
                and all(g is not own for own in _OWN):
            _OWN.append(g)
    _OWN_IDS = frozenset(map(id, _OWN))


def _from_user(frame):
    """Whether `frame` runs the user's code (a cell, exec'd text) rather than a library's."""
    g = frame.f_globals
    if id(g) in _OWN_IDS:
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
