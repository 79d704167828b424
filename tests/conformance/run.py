"""Conformance with Jupyter: the same notebook run by Debian's nbclient and by cellbox.

    run.py CASE       (meson registers each case of CASES and R_CASES; exit 77 = skipped)

For a case, in one temporary directory:
1. the case's notebook is written with nbformat (and the same cells as a percent file);
2. nbclient (python3-nbclient) executes it: the reference, by ipykernel (python3-ipykernel)
   or, for a case of R_CASES, by IRkernel (r-cran-irkernel, with a kernelspec of the test's
   own: none need be installed);
3. `cellbox replay` executes the notebook, and the percent file, each to a notebook;
   compare.py compares each with the reference cell by cell: no difference may remain;
4. `cellbox replay --check` on nbclient's notebook must find nothing (exit 0), and must find
   a difference (exit 6) once the test changes one output of the reference.
"""
import base64
import copy
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import compare  # noqa: E402

BIN = os.environ.get('CELLBOX_BIN', 'cellbox')
PYTHON = os.environ.get('CELLBOX_TEST_PYTHON', '/usr/bin/python3')

CASES = {
    'figures': [
        'import matplotlib.pyplot as plt\nimport numpy as np\nplt.plot([1, 3, 2])\nplt.show()',
        'plt.plot([3, 2, 1])',
        'plt.figure(figsize=(3, 2))\nplt.bar(["a", "b"], [1, 2])\nplt.title("a title")',
        'fig = plt.figure()\nax = fig.add_subplot(projection="polar")\n'
        'ax.plot(np.linspace(0, 6, 50), np.linspace(0, 1, 50))',
        'plt.pie([1, 2, 3], labels=["a", "b", "c"])\nNone',
        'fig, axs = plt.subplots(2, 2, figsize=(8, 6))\nfor a in axs.flat:\n    a.plot([1, 2])',
        'fig, ax = plt.subplots()\nax.plot([1, 2])\nfig',
        'from matplotlib.figure import Figure\nF = Figure()\nF.add_subplot().plot([1, 2])\nF',
        'plt.figure()\nNone',
        'plt.ioff()\nplt.plot([1])\nNone',
        'plt.ion()\nplt.plot([1, 2])\nplt.savefig("saved.png")\nplt.close()',
        'import seaborn as sns\nsns.histplot([1, 2, 2, 3, 3, 3])',
        'plt.imshow(np.arange(12).reshape(3, 4))\nplt.colorbar()\nplt.show()\n'
        'plt.plot([1, 2])\nplt.show()',
    ],
    'formats': [
        'import matplotlib.pyplot as plt\n'
        '%config InlineBackend.figure_formats = ["retina"]\nplt.plot([1, 2])\nNone',
        '%config InlineBackend.figure_formats = ["jpeg"]\nplt.plot([1, 2])\nNone',
        '%config InlineBackend.figure_formats = ["svg"]\nplt.plot([1, 2])\nNone',
        '%config InlineBackend.figure_formats = ["png", "pdf"]\nplt.plot([1, 2])\nNone',
        '%config InlineBackend.figure_formats = ["png"]\n'
        '%config InlineBackend.print_figure_kwargs = {"bbox_inches": None}\nplt.plot([1, 2])\nNone',
        '%config InlineBackend.print_figure_kwargs = {"bbox_inches": "tight"}\n'
        'import matplotlib\nmatplotlib.rcParams["figure.dpi"] = 50\nplt.plot([1, 2])\nNone',
        'plt.rcParams["figure.dpi"] = 100\nplt.style.use("dark_background")\nplt.plot([1])\nNone',
    ],
    'rich': [
        'import pandas as pd\ndf = pd.DataFrame({"a": [1, 2], "b": [3.5, 4.25]})\ndf',
        'print(df)\ndf.describe()',
        'from IPython.display import display, Image, SVG, Markdown, Latex, JSON, Javascript, HTML\n'
        'import io\nfrom PIL import Image as P\nb = io.BytesIO()\n'
        'P.new("RGB", (20, 10), "red").save(b, "jpeg")\n'
        'display(Image(b.getvalue(), format="jpeg", width=40))\n'
        'b = io.BytesIO(); P.new("RGB", (7, 5), "blue").save(b, "png")\nImage(b.getvalue())',
        'display(SVG(\'<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10">'
        '<rect width="10" height="10"/></svg>\'))\ndisplay(Markdown("# hi"))\n'
        'display(Latex("$x^2$"))\ndisplay(JSON({"a": [1, 2]}))\n'
        'display(Javascript("console.log(1)"))\n'
        'display(HTML("<b>x</b>"), metadata={"isolated": True})',
        'class R:\n    def _repr_html_(self):\n        return "<i>r</i>"\n'
        '    def _repr_markdown_(self):\n        return "*r*"\nR()',
        'display({"application/vnd.custom+json": {"k": 1}, "text/plain": "c"}, raw=True)',
        'object()',
    ],
    'displays': [
        'from IPython.display import display, clear_output, update_display\n'
        'h = display("first", display_id="d1")\nprint("between")\nh.update("second")',
        'h.update("third")',
        'display("again", display_id="d1")\nupdate_display("fourth", display_id="d1")',
        'import time\nfor i in range(3):\n    clear_output(wait=True)\n    print(i)\n'
        '    time.sleep(0.05)',
        'print("a")\nclear_output()\nprint("b")',
        'print("kept")\nclear_output(wait=True)',
        'dh = display("x", display_id=True)\ndh.update("y")',
    ],
    'text': [
        'import warnings\nwarnings.warn("careful")',
        'def f():\n    warnings.warn("in f", DeprecationWarning)\nf()',
        '%timeit -n 10 -r 2 sum(range(100))',
        '%%timeit -n 5 -r 3\nsum(range(10))',
        'import sys, time\nfor i in range(3):\n    print(i)\n    sys.stdout.flush()\n    time.sleep(0.3)\n'
        'print("err", file=sys.stderr)',
        'import sys\nsys.stdout.write("x")\nsys.stderr.write("e\\n")\nprint("y")',
        'print("a\\rb")\nprint("c\\bd")',
        ('1/0', ['raises-exception']),
        ('def g():\n    raise ValueError("deep")\ng()', ['raises-exception']),
        ('print("before")\nraise KeyError("k")', ['raises-exception']),
        '%who_ls',
        'x = 1\nx',
        'None',
    ],
    # The environment ipykernel gives its process, which libraries and child processes read.
    'environment': [
        'import os\nfor k in ("TERM", "CLICOLOR", "CLICOLOR_FORCE", "PAGER", "GIT_PAGER",\n'
        '          "MPLBACKEND"):\n    print(k, os.environ.get(k))',
        'print("JPY_PARENT_PID" in os.environ)',
        'import subprocess\nprint(subprocess.run("echo $TERM $PAGER", shell=True,\n'
        '                     capture_output=True, text=True).stdout)',
        'ip = get_ipython()\nprint("IPKernelApp" in ip.config, type(ip).__name__)',
        'import sys\nprint(type(sys.stdout).__name__, type(sys.stderr).__name__)',
        '!echo from a shell; echo to stderr >&2',
        'import logging\nlogging.basicConfig()\nget_ipython().log.warning("for the log")\n'
        'logging.warning("root warned")',
        'try:\n    input("who? ")\nexcept Exception as e:\n    print(type(e).__name__, e)',
    ],
    'plotly': [
        'import plotly.graph_objects as go\nfig = go.Figure(go.Bar(y=[1, 2]))\nfig.show()',
        'fig.update_layout(title="t")\nfig.show()',
        'import plotly.express as px\npx.scatter(x=[1, 2, 3], y=[3, 1, 2])',
    ],
}


# R notebooks, as IRkernel 1.3.2 runs them (through the evaluate and repr packages). Left out,
# where cellbox differs on purpose: a traceback of deep recursion (IRkernel folds a run of
# calls into the calls' numbers, "1. 1 / 2. 2 / 3. ⋯", meaning the calls), and a print method
# that fails (IRkernel logs it to stderr and shows nothing; cellbox raises the error).
R_CASES = {
    'r-values': [
        'x <- c(3, 1, 2)\nx',
        '1:20',
        'c(a = 1.5, b = 2, c = NA)',
        'c("x", "y")',
        'TRUE',
        'factor(c("lo", "hi", "lo"))',
        'list(a = 1, b = "two", c = list(d = 3))',
        'list(1, 2)',
        'NULL',
        'invisible(5)',
        'y <- 3',
        '42L\n"a string"',
        'list()\ncharacter(0)\nNA',
        'setClass("P", representation(x = "numeric"))\nnew("P", x = 1)',
    ],
    'r-frames': [
        'df <- data.frame(a = 1:3, b = c(2.5, 3.25, 4), s = c("u", "v", "w"))\ndf',
        'm <- matrix(1:6, nrow = 2)\nm',
        'matrix(c(1.5, 2, 3, 4), 2, dimnames = list(c("r1", "r2"), c("A", "B")))',
        'head(mtcars)',
        'summary(c(1, 2, 3, 4))',
        'print(df)',
        'str(df)',
        'df[0, ]\ndata.frame()',
        'table(c("a", "b", "a"))',
        'matrix(1:300, 100)',
    ],
    'r-plots': [
        'plot(1:10)',
        'plot(1:10, main = "base plot")',
        'hist(c(1, 2, 2, 3, 3, 3))',
        'library(ggplot2)\nggplot(data.frame(x = 1:3, y = c(2, 1, 3)), aes(x, y)) + geom_point()',
        'library(lattice)\nxyplot(1:3 ~ 1:3)',
        'plot(1:3)\ntitle("added later")',
        'plot(1, main = "a")\nplot(2, main = "b")',
        'par(mfrow = c(1, 2))\nplot(1, main = "left")\nplot(2, main = "right")',
        'invisible(plot(1:2))',
        'options(repr.plot.width = 4, repr.plot.height = 3)\nplot(1:3)',
        'plot(1)\nplot(2)',
    ],
    'r-text': [
        'message("hello")',
        'message("a")\nmessage("b")',
        'message("no lf", appendLF = FALSE)',
        'warning("careful")',
        'f <- function() warning("in f")\nf()',
        'warning("plain", call. = FALSE)',
        'print("p")\ncat("c\\n")\ncat("no newline")',
        ('g <- function() stop("boom in g")\ng()', ['raises-exception']),
        ('stop("top")', ['raises-exception']),
        ('h <- function(x) g()\nk <- function() h(1)\nk()', ['raises-exception']),
        'cat("out\\n"); message("err"); cat("out2\\n")',
        ('print("before")\nlog(-1)\nsqrt("a")', ['raises-exception']),
        ('x <- 1 +', ['raises-exception']),
        'options(warn = 1)\nf <- function() { warning("w1"); cat("after\\n") }\nf()',
        ('e <- simpleCondition("custom msg")\nclass(e) <- c("myError", "error", "condition")\n'
         'stop(e)', ['raises-exception']),
    ],
}


def source_tags(cell):
    """A case's cell: its source and tags (a cell is a string, or (source, tags))."""
    return (cell, []) if isinstance(cell, str) else cell


def percent(cells):
    """The cells as a percent-format script."""
    out = []
    for cell in cells:
        src, tags = source_tags(cell)
        out.append('# %%%%%s\n%s\n\n' % (' tags=%s' % json.dumps(tags) if tags else '', src))
    return ''.join(out)


NBCLIENT = r'''
import sys
import nbformat
from nbclient import NotebookClient
nb = nbformat.read(sys.argv[1], as_version=4)
NotebookClient(nb, kernel_name=sys.argv[3], timeout=300, allow_errors=True).execute()
nbformat.write(nb, sys.argv[2])
'''

RSCRIPT = os.environ.get('CELLBOX_TEST_RSCRIPT') or shutil.which('Rscript') or '/usr/bin/Rscript'


def irkernel_spec(tmp):
    """A JUPYTER_PATH with IRkernel's kernelspec (`ir`) on this machine's R, or the reason
    there can be none."""
    if not os.access(RSCRIPT, os.X_OK):
        return None, 'needs R (r-base-core)'
    p = run([RSCRIPT, '-e', 'for (p in c("IRkernel", "repr", "jsonlite")) '
             'if (!requireNamespace(p, quietly = TRUE)) { cat(p); quit(status = 1) }\n'
             'cat(file.path(R.home("bin"), "R"))'])
    if p.returncode:
        return None, 'needs the R package %s (Debian: r-cran-irkernel, r-cran-repr)' % p.stdout
    spec = os.path.join(tmp, 'jupyter', 'kernels', 'ir')
    os.makedirs(spec)
    with open(os.path.join(spec, 'kernel.json'), 'w') as f:
        json.dump({'argv': [p.stdout, '--slave', '-e', 'IRkernel::main()', '--args',
                            '{connection_file}'], 'display_name': 'R', 'language': 'R'}, f)
    return os.path.join(tmp, 'jupyter'), None


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=600, **kw)


def change_one_output(nb):
    """A copy of nb with one output changed: the first stream's text, else an image's size,
    else a text/plain, else a text/html."""
    nb = copy.deepcopy(nb)
    for cell in nb['cells']:
        for o in cell.get('outputs', []):
            if o['output_type'] == 'stream':
                o['text'] = 'changed by the test\n'
                return nb, 'a stream'
    for cell in nb['cells']:
        for o in cell.get('outputs', []):
            png = o.get('data', {}).get('image/png')
            if png:
                from PIL import Image
                img = Image.open(io.BytesIO(base64.b64decode(png)))
                img = img.resize((img.width + 10, img.height))
                b = io.BytesIO()
                img.save(b, 'png')
                o['data']['image/png'] = base64.b64encode(b.getvalue()).decode()
                return nb, 'an image 10 px wider'
    for cell in nb['cells']:
        for o in cell.get('outputs', []):
            if 'text/plain' in o.get('data', {}):
                o['data']['text/plain'] = 'changed by the test'
                return nb, 'a text/plain'
    for cell in nb['cells']:
        for o in cell.get('outputs', []):
            if 'text/html' in o.get('data', {}):
                o['data']['text/html'] = '<p>changed by the test</p>'
                return nb, 'a text/html'
    raise AssertionError('no output to change')


def main(argv):
    name = argv[1]
    r = name in R_CASES
    cells = R_CASES[name] if r else CASES[name]
    try:
        subprocess.run([PYTHON, '-c', 'import nbclient, ipykernel, nbformat'], check=True,
                       capture_output=True)
    except subprocess.CalledProcessError:
        print('SKIP: needs python3-nbclient, python3-ipykernel, python3-nbformat')
        return 77
    if name == 'plotly' and run([PYTHON, '-c', 'import plotly']).returncode:
        print('SKIP: needs python3-plotly')
        return 77
    tmp = tempfile.mkdtemp(prefix='cellbox-conformance-')
    failures = []
    if r:
        jupyter_path, why = irkernel_spec(tmp)
        if why:
            shutil.rmtree(tmp, ignore_errors=True)
            print('SKIP: ' + why)
            return 77
    try:
        env = {k: v for k, v in os.environ.items() if not k.startswith('CELLBOX_')}
        env.update(XDG_STATE_HOME=os.path.join(tmp, 'state'),
                   XDG_CONFIG_HOME=os.path.join(tmp, 'config'),
                   CELLBOX_RUNTIME_DIR=os.path.join(tmp, 'run'), CELLBOX_PYTHON=PYTHON,
                   PYDEVD_DISABLE_FILE_VALIDATION='1', MPLBACKEND='')
        env.pop('MPLBACKEND')
        if r:
            env['JUPYTER_PATH'] = jupyter_path
        with open(os.path.join(tmp, 'cells.json'), 'w') as f:
            json.dump([source_tags(c) for c in cells], f)
        made = run([PYTHON, '-c', 'import sys, json, nbformat\n'
                    'from nbformat.v4 import new_notebook, new_code_cell\n'
                    'cells = json.load(open(sys.argv[1]))\n'
                    'nb = new_notebook(cells=[new_code_cell(s, metadata={"tags": t} if t'
                    ' else {}) for s, t in cells])\n'
                    'if sys.argv[3] == "ir":\n'
                    '    nb.metadata["kernelspec"] = {"display_name": "R", "language": "R",'
                    ' "name": "ir"}\n'
                    'nbformat.write(nb, sys.argv[2])', 'cells.json', 'case.ipynb',
                    'ir' if r else 'python3'], cwd=tmp, env=env)
        assert made.returncode == 0, made.stderr
        ext = 'R' if r else 'py'
        with open(os.path.join(tmp, 'case.' + ext), 'w') as f:
            f.write(percent(cells))
        ref_dir = os.path.join(tmp, 'nbclient')
        os.mkdir(ref_dir)
        p = run([PYTHON, '-c', NBCLIENT, '../case.ipynb', '../reference.ipynb',
                 'ir' if r else 'python3'], cwd=ref_dir, env=env)
        assert p.returncode == 0, 'nbclient failed:\n' + p.stderr[-3000:]
        with open(os.path.join(tmp, 'reference.ipynb'), encoding='utf-8') as f:
            ref = json.load(f)

        for src in ('case.ipynb', 'case.' + ext):
            out = os.path.join(tmp, 'cellbox-%s.ipynb' % src.split('.')[1])
            work = os.path.join(tmp, 'work-' + src.split('.')[1])
            os.mkdir(work)
            p = run([BIN, 'replay', '../' + src, '-o', out, '-k', '--no-progress'], cwd=work,
                    env=env)
            if not os.path.exists(out):
                failures.append('replay %s wrote no notebook (exit %d):\n%s'
                                % (src, p.returncode, p.stderr[-2000:]))
                continue
            with open(out, encoding='utf-8') as f:
                got = json.load(f)
            for d in compare.compare(ref, got):
                failures.append('%s: %s' % (src, d))

        work = os.path.join(tmp, 'work-check')
        os.mkdir(work)
        p = run([BIN, 'replay', '../reference.ipynb', '--check', '-k', '--no-progress'],
                cwd=work, env=env)
        if p.returncode != 0 or 'outputs match' not in p.stderr:
            failures.append('replay --check of nbclient\'s notebook: exit %d, expected 0\n%s\n%s'
                            % (p.returncode, p.stdout[-3000:], p.stderr[-1000:]))
        changed, what = change_one_output(ref)
        with open(os.path.join(tmp, 'changed.ipynb'), 'w', encoding='utf-8') as f:
            json.dump(changed, f)
        shutil.rmtree(work)
        os.mkdir(work)
        p = run([BIN, 'replay', '../changed.ipynb', '--check', '-k', '--no-progress'],
                cwd=work, env=env)
        if p.returncode != 6 or '--- check: cell' not in p.stdout:
            failures.append('replay --check with %s changed: exit %d, expected 6 and a diff\n%s'
                            % (what, p.returncode, p.stdout[-2000:]))
        if os.path.isdir(os.path.join(tmp, 'run')) and os.listdir(os.path.join(tmp, 'run')):
            failures.append('channel directories left behind')
    finally:
        if os.environ.get('CELLBOX_KEEP'):
            print('kept', tmp)
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    for f in failures:
        print('FAIL: ' + f)
    if failures:
        return 1
    print('case %s: %d cells, no difference from nbclient; --check passes, and finds %s'
          % (name, len(cells), what))
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
