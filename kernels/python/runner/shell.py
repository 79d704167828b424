"""The shell: IPython's InteractiveShell as cellbox runs cells in it (its outputs as events,
the history in memory, cells named as ipykernel names them, the lazy completer), IPython
imported without its terminal front end, and pandas drawn at the front end's width.
"""

import os
import struct
import sys

from .events import _emit
from .plots import _rich_event
from .state import BACKEND, MEMO_MAX, MEMO_TEXT, _S, _log, _log_exc

# The runner's own files (a directory, or runner.zip/runner): no frame of a cell.
_RUNNER_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep


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


def _keep_traitlets_log():
    """traitlets' log (the shell's and its configurables' warnings) goes to the kernel's log,
    where ipykernel's application log goes, never to a cell: with no Application running, its
    logger is "traitlets", which propagates to the root logger a cell may give a handler
    (logging.basicConfig())."""
    import logging

    class ToKernelLog(logging.Handler):
        def emit(self, record):
            try:
                _log("%s: %s" % (record.name, self.format(record)))
            except Exception:
                pass

    log = logging.getLogger("traitlets")
    log.propagate = False
    log.addHandler(ToKernelLog())


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

    # ipykernel's shell class name: libraries ask get_ipython().__class__.__name__ whether they
    # run in a Jupyter kernel (and then give notebook outputs, as they do under ipykernel).
    class ZMQInteractiveShell(InteractiveShell):
        displayhook_class = Type(CellboxDisplayHook)
        display_pub_class = Type(CellboxDisplayPublisher)
        execution_count = 1                 # (plain attributes: see CellboxHistory)
        last_execution_succeeded = True
        last_execution_result = None

        def init_environment(self):
            # ipykernel's (ZMQInteractiveShell.init_environment), and jupyter_client's
            # JPY_PARENT_PID: what libraries and child processes look at to tell a Jupyter
            # kernel, and pagers that would wait for keys nobody can press.
            env = os.environ
            env["TERM"] = "xterm-color"
            env["CLICOLOR"] = "1"
            env["PAGER"] = "cat"
            env["GIT_PAGER"] = "cat"
            env.setdefault("JPY_PARENT_PID", str(os.getppid()))

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

        # `!cmd` is IPython's system_piped, as in ipykernel: the command runs on a pseudo-
        # terminal (pexpect) whose output, stdout and stderr together with "\r\n" line ends,
        # is printed to the cell's stdout. (os.system and subprocess write to the capture
        # pipes.)

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
            # A KeyboardInterrupt carries the runner's own frames below the cell's: the
            # handler's (_on_sigint), or the write, input or display call that deferred it to
            # the end of its critical section (events._leave). Drop them, so the traceback
            # ends in the user's code, as with Python's own handler.
            try:
                etype, value, tb = exc_tuple if exc_tuple else sys.exc_info()
                if etype is KeyboardInterrupt:
                    cells = self.compile._filename_map
                    prev, node, in_cell = None, tb, False
                    while node is not None:
                        name = node.tb_frame.f_code.co_filename
                        in_cell = in_cell or name in cells
                        if in_cell and name.startswith(_RUNNER_DIR):
                            if prev is not None:
                                prev.tb_next = None
                            break
                        prev, node = node, node.tb_next
                    # One that landed in IPython's own steps (compiling the next statement)
                    # has no frame of a cell; IPython's formatter fails on those frames and
                    # prints its fallback. As Python's REPL does, the name alone.
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

    _keep_traitlets_log()
    cfg = Config()
    cfg.HistoryManager.enabled = False      # no SQLite; In/Out/_i/%history still in memory
    cfg.HistoryManager.hist_file = ":memory:"
    cfg.InteractiveShell.colors = "Linux"
    cfg.IPKernelApp = Config()              # "IPKernelApp" in config: tqdm.auto and others ask
    shell = ZMQInteractiveShell.instance(config=cfg)

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

