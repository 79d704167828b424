"""Plots and artifacts: mime bundles' images as files in plots/, the figures of matplotlib's
fallback backend (cellbox_mpl), what Figure.savefig writes, plotly figures as HTML (and PNG).
"""

import io
import os
import struct
import sys

from .events import _emit
from .state import ARTIFACT_MAX, BACKEND, INLINE, PLOTLY_MIME, PNG_SIG, _S, _log, _log_exc, \
    _write_all


# --------------------------------------------------------------------------------------------
# plots and artifacts: files plots/<n>.<ext>, n counting up across both (until clear_plots).
# A plot is an image shown as an output (a figure, any image/png); an artifact is a file the
# cell made (plt.savefig, a plotly figure's HTML) and is reported, not shown.


def _plot_index(name):
    """n of a plots/ entry `<n>.<ext>` (or its `.tmp`), else None."""
    if name.endswith(".tmp"):
        name = name[:-4]
    stem, dot, ext = name.partition(".")
    if dot and stem.isdigit() and stem.isascii() and ext.isalnum() and ext.isascii():
        return int(stem)
    return None


def _init_plot_counter():
    n = 0
    try:
        for name in os.listdir(_S.plot_dir):
            if not name.endswith(".tmp") and _plot_index(name) is not None:
                n = max(n, _plot_index(name))
    except OSError:
        pass
    _S.plot_n = n


def _clear_plots():
    cleared = 0
    try:
        names = os.listdir(_S.plot_dir)
    except OSError:
        names = []
    for name in names:
        if _plot_index(name) is None:
            continue
        try:
            os.unlink(os.path.join(_S.plot_dir, name))
            if not name.endswith(".tmp"):
                cleared += 1
        except OSError:
            pass
    _S.plot_n = 0
    return cleared


def _store_file(data, ext):
    """Write bytes to plots/<n>.<ext> (tmp + rename); returns (n, "plots/<n>.<ext>")."""
    n = _S.plot_n + 1
    name = "%d.%s" % (n, ext)
    path = os.path.join(_S.plot_dir, name)
    tmp = path + ".tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o644)
    try:
        _write_all(fd, data)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    _S.plot_n = n
    return n, "plots/" + name


def _image_size(data):
    """(width, height) of PNG or JPEG bytes, (0, 0) for anything else."""
    if data[:8] == PNG_SIG and data[12:16] == b"IHDR":
        return struct.unpack(">II", data[16:24])
    if data[:2] == b"\xff\xd8":
        i = 2
        while i + 9 < len(data) and data[i] == 0xFF:
            marker = data[i + 1]
            if marker == 0xFF:
                i += 1
                continue
            if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):
                h, w = struct.unpack(">HH", data[i + 5:i + 9])
                return w, h
            i += 2 + struct.unpack(">H", data[i + 2:i + 4])[0]
    return 0, 0


def _store_png(png):
    """Write png bytes to a plot file and return the plot description."""
    n, rel = _store_file(png, "png")
    w, h = _image_size(png)
    return {"index": n, "path": rel, "format": "png", "width": w, "height": h}


def _artifact(data, fmt, ext, name=None):
    """Store a file the cell made and report it with an artifact event."""
    n, rel = _store_file(data, ext)
    w, h = _image_size(data)
    ev = {"type": "artifact", "index": n, "path": rel, "format": fmt, "width": w, "height": h}
    if name is not None:
        ev["name"] = name
    _emit(ev)


def _png_bytes(value):
    if isinstance(value, (bytes, bytearray, memoryview)):
        value = bytes(value)
        if value[:8] == PNG_SIG:
            return value
    import base64
    try:
        png = base64.b64decode(value)
    except Exception:
        return None
    return png if png[:8] == PNG_SIG else None


def _saved_figure(fname, kwargs):
    """After Figure.savefig(fname): copy the file it wrote into plots/ as an artifact."""
    if _S.out_fd < 0 or not isinstance(fname, (str, os.PathLike)):
        return                      # a file object (print_figure, BytesIO), or no request
    path = os.fsdecode(os.fspath(fname))
    fmt = kwargs.get("format")
    ext = os.path.splitext(path)[1][1:]
    if fmt is None:
        if not ext:                 # matplotlib appends the default format's extension
            import matplotlib
            fmt = matplotlib.rcParams["savefig.format"]
            path = path.rstrip(".") + "." + fmt
        else:
            fmt = ext
    fmt = str(fmt).lower()
    fmt = {"jpg": "jpeg", "tif": "tiff"}.get(fmt, fmt)
    ext = ext.lower() if ext.isalnum() and ext.isascii() and len(ext) <= 8 else "bin"
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        size = os.fstat(fd).st_size
        if size > ARTIFACT_MAX:
            _log("cellbox runner: %s is %d bytes: not copied as an artifact" % (path, size))
            return
        data = b"".join(iter(lambda: os.read(fd, 1 << 20), b""))
    finally:
        os.close(fd)
    _artifact(data, fmt, ext, os.fsdecode(os.fspath(fname)))


def _patch_savefig(module):
    """Report what Figure.savefig (and so plt.savefig) writes to a file."""
    import functools
    figure = getattr(module, "Figure", None)
    orig = getattr(figure, "savefig", None)
    if orig is None or getattr(orig, "_cellbox", False):
        return

    @functools.wraps(orig)
    def savefig(self, fname, *args, **kwargs):
        result = orig(self, fname, *args, **kwargs)
        try:
            _saved_figure(fname, kwargs)
        except Exception:
            _log_exc("reporting a saved figure")
        return result

    savefig._cellbox = True
    figure.savefig = savefig


def _plotly_artifacts(fig):
    """A plotly figure was shown: its stand-alone HTML as an artifact, and a PNG where the
    kaleido exporter is installed."""
    try:
        import plotly.io as pio
        html = pio.to_html(fig, include_plotlyjs=True, full_html=True, validate=False)
        _artifact(html.encode("utf-8"), "html", "html")
    except Exception:
        _log_exc("saving a plotly figure as HTML")
        return
    import importlib.util
    if importlib.util.find_spec("kaleido") is None:
        return
    try:
        png = pio.to_image(fig, format="png", engine="kaleido", validate=False)
    except Exception:
        _log_exc("exporting a plotly figure as PNG")
        return
    _artifact(png, "png", "png")


class _HookedLoader:
    """A module's loader that runs a hook after the module is executed."""

    def __init__(self, loader, hook):
        self._loader = loader
        self._hook = hook

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        self._loader.exec_module(module)
        try:
            self._hook(module)
        except Exception:
            _log_exc("import hook of %s" % module.__name__)

    def __getattr__(self, name):
        return getattr(self._loader, name)


class _ImportHooks:
    """sys.meta_path entry that patches modules as they are imported (matplotlib.figure)."""

    hooks = {"matplotlib.figure": _patch_savefig}

    @classmethod
    def find_spec(cls, fullname, path=None, target=None):
        hook = cls.hooks.get(fullname)
        if hook is None:
            return None
        import importlib.machinery
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        spec.loader = _HookedLoader(spec.loader, hook)
        return spec


def _bundle(data):
    """A mime bundle for an event: image/png goes to a plot file, every other mime is kept
    (JSON mimes as JSON, bytes as base64, the rest as text). Returns (data, plot or None)."""
    out = {}
    plot = None
    for mime, value in data.items():
        mime = str(mime)
        if mime == "image/png" and plot is None:
            png = _png_bytes(value)
            if png is not None:
                plot = _store_png(png)
                continue
        if isinstance(value, (bytes, bytearray, memoryview)):
            import base64
            value = base64.b64encode(bytes(value)).decode("ascii")
        elif not isinstance(value, str) and not (mime == "application/json"
                                                 or mime.endswith("+json")):
            value = str(value)
        out[mime] = value
    return out, plot


def _rich_event(kind, data, metadata, **extra):
    """Emit a display or result event for a mime bundle (and the artifacts of a plotly one)."""
    out, plot = _bundle(data)
    ev = {"type": kind}
    ev.update(extra)
    ev["data"] = out
    if metadata:
        ev["metadata"] = metadata
    if plot is not None:
        ev["plot"] = plot
    _emit(ev)
    if PLOTLY_MIME in out and not extra.get("update"):
        _plotly_artifacts(out[PLOTLY_MIME])


# The fallback backend (no matplotlib_inline): figures saved as the inline backend would, on
# plt.show() and for those still open at the end of a cell.


def _save_figures(managers=None):
    """Save figures (default: every open pyplot figure) as plots and close them."""
    from matplotlib._pylab_helpers import Gcf
    if managers is None:
        managers = Gcf.get_all_fig_managers()
    for manager in managers:
        fig = manager.canvas.figure
        try:
            text = repr(fig)
            buf = io.BytesIO()
            if fig.axes or fig.lines:
                fig.canvas.print_figure(buf, format="png", bbox_inches="tight")
        finally:
            Gcf.destroy(manager)
        if buf.getvalue():
            _emit({"type": "display", "data": {"text/plain": text},
                   "plot": _store_png(buf.getvalue())})
        else:
            _emit({"type": "display", "data": {"text/plain": text}})


def _capture_open_figures():
    """End of a cell (fallback backend): figures left open are shown like plt.show() would."""
    plt = sys.modules.get("matplotlib.pyplot")
    if plt is None or _S.inline:
        return
    try:
        from matplotlib._pylab_helpers import Gcf
        if Gcf.figs:
            _save_figures()
    except KeyboardInterrupt:
        raise
    except Exception:
        _S.shell.showtraceback()
        return False
    return True


_mpl_chosen = False


def _choose_mpl_backend():
    """matplotlib's backend, chosen before anything imports matplotlib (a pool's zygote
    imports it before any kernel runs): IPython's inline backend, as ipykernel's, else the
    fallback cellbox_mpl.  Once per process; a forked kernel keeps its zygote's choice."""
    global _mpl_chosen
    if _mpl_chosen:
        return
    _mpl_chosen = True
    import importlib.util
    _S.inline = importlib.util.find_spec("matplotlib_inline") is not None
    if _S.inline:
        os.environ["MPLBACKEND"] = INLINE       # children too, as ipykernel does
    else:
        os.environ["MPLBACKEND"] = BACKEND
        # Only this process has the cellbox_mpl module: do not hand the setting to
        # children (a `!python script.py` using matplotlib could not import it).
        os.unsetenv("MPLBACKEND")
        sys.meta_path.append(_MplFinder)


class _MplFinder:
    """sys.meta_path entry that creates the fallback matplotlib backend module `cellbox_mpl`."""

    @classmethod
    def find_spec(cls, fullname, path=None, target=None):
        if fullname != "cellbox_mpl":
            return None
        import importlib.machinery
        return importlib.machinery.ModuleSpec(fullname, cls, origin="cellbox runner")

    @staticmethod
    def create_module(spec):
        return None

    @staticmethod
    def exec_module(module):
        from matplotlib.backend_bases import FigureManagerBase
        from matplotlib.backends.backend_agg import FigureCanvasAgg

        def show(*args, **kwargs):
            """Save every open figure to the channel's plots/ and close it."""
            _save_figures()

        module.__doc__ = "cellbox: Agg figures captured as PNG plots on show()"
        module.backend_version = "cellbox"
        module.FigureCanvas = FigureCanvasAgg
        module.FigureManager = FigureManagerBase
        module.show = show

