"""Tests of the Python runner's plots and rich outputs against kernels/PROTOCOL.md: figures
as PNG files the host takes (plots/<n>.png), their sizes as IPython's inline backend gives
them, clear_plots, figure formats, display data of every kind, display ids, artifacts, plotly,
and the names ipykernel gives. The runner and its helpers are test_runner.py's.

    /usr/bin/python3 -m unittest kernels/python/test_runner_plots.py
"""

import base64
import os
import subprocess
import unittest

from test_runner import PYTHON, RunnerCase, tiny_png   # (puts runner_harness on the path)
from runner_harness import of_type, text


def inline_size(code):
    """The pixel size IPython's inline backend gives the figure `code` draws (a fresh python)."""
    ref = ("import matplotlib\nmatplotlib.use('Agg')\nimport matplotlib.pyplot as plt\n" + code +
           "\nfrom IPython.core.pylabtools import print_figure\nimport struct\n"
           "png = print_figure(plt.gcf(), 'png')\nprint(*struct.unpack('>II', png[16:24]))")
    return tuple(int(v) for v in subprocess.check_output([PYTHON, "-c", ref], text=True).split())


class PlotsTest(RunnerCase):
    """Plots and rich outputs, on one runner."""

    def test_plots(self):
        r = self.r
        evs = r.request("clear_plots")
        self.assertIn("cleared", of_type(evs, "reply")[0])
        plots = os.path.join(r.channel, "kernel", "plots")

        def plot_of(evs, kind="display"):
            disp = [e for e in of_type(evs, kind) if "plot" in e]
            self.assertEqual(len(disp), 1, evs)
            plot = disp[0]["plot"]
            self.assertEqual(plot["format"], "png")
            self.assertEqual(plot["path"], "plots/%d.png" % plot["index"])
            with open(os.path.join(r.channel, "kernel", plot["path"]), "rb") as f:
                self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n")
            return disp[0], plot

        # saved as IPython's inline backend saves them: cropped to the content
        code = "import matplotlib.pyplot as plt\nplt.plot([1, 3, 2])\n"
        evs = self.run_ok(code + "plt.show()")
        disp, plot = plot_of(evs)
        self.assertEqual(plot["index"], 1)
        self.assertEqual((plot["width"], plot["height"]), inline_size(code))
        self.assertNotEqual((plot["width"], plot["height"]), (640, 480))
        self.assertEqual(disp["data"]["text/plain"], "<Figure size 640x480 with 1 Axes>")
        self.assertNotIn("image/png", disp["data"])

        evs = self.run_ok("import seaborn as sns\nsns.histplot([1, 2, 2, 3, 3, 3])\nplt.show()")
        self.assertEqual(plot_of(evs)[1]["index"], 2)

        evs = r.request("clear_plots")
        self.assertEqual(of_type(evs, "reply")[0]["cleared"], 2)
        self.assertEqual([n for n in os.listdir(plots) if n.endswith(".png")], [])

        # a figure left open at the end of the cell is shown too
        code = "fig = plt.figure(figsize=(4, 3))\nplt.plot([1, 2])\n"
        evs = self.run_ok(code + "None")
        disp, plot = plot_of(evs)
        self.assertEqual(plot["index"], 1)
        self.assertEqual((plot["width"], plot["height"]), inline_size(code))
        self.assertEqual(self.result(self.run_ok("plt.get_fignums()")), "[]")

        # image/png display output becomes a plot as well
        png = base64.b64encode(tiny_png(5, 4)).decode()
        evs = self.run_ok("from IPython.display import Image, display\nimport base64\n"
                          "display(Image(data=base64.b64decode('%s')))" % png)
        disp, plot = plot_of(evs)
        self.assertEqual((plot["index"], plot["width"], plot["height"]), (2, 5, 4))

        # a Figure as the cell's value: an image in the result (and shown, as in Jupyter)
        evs = self.run_ok("fig, ax = plt.subplots()\nax.plot([1, 2])\nfig")
        res, plot = plot_of(evs, "result")
        self.assertEqual(res["data"]["text/plain"], "<Figure size 640x480 with 1 Axes>")
        self.assertEqual(plot_of(evs)[1]["index"], plot["index"] + 1)
        # also without pyplot
        evs = self.run_ok("from matplotlib.figure import Figure\nF = Figure()\n"
                          "F.add_subplot().plot([1])\nF")
        plot_of(evs, "result")

        # %matplotlib inline is IPython's inline backend; a GUI one falls back to it
        self.run_ok("%matplotlib inline")
        evs = self.run_ok("plt.plot([0, 1])\nNone")
        self.assertEqual(plot_of(evs)[1]["index"], 6)
        self.assertEqual(self.result(self.run_ok("import matplotlib; matplotlib.get_backend()")),
                         "'module://matplotlib_inline.backend_inline'")
        evs = self.run_ok("%matplotlib qt")
        self.assertIn("not available", text(evs, "stderr"))
        self.assertEqual(self.result(self.run_ok("matplotlib.get_backend()")),
                         "'module://matplotlib_inline.backend_inline'")

        # execute with clear_plots
        evs = self.run_ok("plt.plot([0, 1]); plt.show()", clear_plots=True)
        self.assertEqual(plot_of(evs)[1]["index"], 1)
        self.assertEqual(sorted(os.listdir(plots)), ["1.png"])

    def test_figure_formats(self):
        self.run_ok("import matplotlib.pyplot as plt")
        try:
            evs = self.run_ok("%config InlineBackend.figure_formats = ['retina']\n"
                              "plt.plot([1, 2])\nNone")
            disp = [e for e in of_type(evs, "display") if "plot" in e][0]
            self.assertEqual(disp["metadata"]["image/png"],
                             {"width": disp["plot"]["width"] // 2,
                              "height": disp["plot"]["height"] // 2})
            evs = self.run_ok("%config InlineBackend.figure_formats = ['jpeg', 'svg', 'pdf']\n"
                              "plt.plot([1, 2])\nNone")
            disp = of_type(evs, "display")[0]
            self.assertNotIn("plot", disp)
            self.assertEqual(base64.b64decode(disp["data"]["image/jpeg"])[:2], b"\xff\xd8")
            self.assertTrue(disp["data"]["image/svg+xml"].startswith("<?xml"))
            self.assertEqual(base64.b64decode(disp["data"]["application/pdf"])[:4], b"%PDF")
            # print_figure_kwargs reach the figure: without bbox_inches, the full size
            evs = self.run_ok("%config InlineBackend.figure_formats = ['png']\n"
                              "%config InlineBackend.print_figure_kwargs = {'bbox_inches': None}\n"
                              "plt.plot([1, 2])\nNone")
            plot = [e for e in of_type(evs, "display") if "plot" in e][0]["plot"]
            self.assertEqual((plot["width"], plot["height"]), (640, 480))
        finally:
            self.run_ok("%config InlineBackend.print_figure_kwargs = {'bbox_inches': 'tight'}\n"
                        "%config InlineBackend.figure_formats = ['png']")

    def test_rich_outputs(self):
        evs = self.run_ok(
            "from IPython.display import display, Image, JSON, HTML, Markdown, Latex\n"
            "import base64, io\nfrom PIL import Image as P\nb = io.BytesIO()\n"
            "P.new('RGB', (20, 10), 'red').save(b, 'jpeg')\n"
            "display(Image(b.getvalue(), format='jpeg', width=40))\n"
            "display(JSON({'a': [1, 2]}))\n"
            "display(HTML('<b>x</b>'), metadata={'isolated': True})\n"
            "display(Markdown('# m'), Latex('$x$'))\n"
            "display({'application/vnd.custom+json': {'k': 1}, 'text/plain': 'c'}, raw=True)")
        d = of_type(evs, "display")
        self.assertEqual(base64.b64decode(d[0]["data"]["image/jpeg"])[:2], b"\xff\xd8")
        self.assertEqual(d[0]["metadata"], {"image/jpeg": {"width": 40}})
        self.assertEqual(d[1]["data"]["application/json"], {"a": [1, 2]})
        self.assertEqual(d[1]["metadata"]["application/json"]["expanded"], False)
        self.assertEqual((d[2]["data"]["text/html"], d[2]["metadata"]), ("<b>x</b>",
                                                                         {"isolated": True}))
        self.assertEqual(d[3]["data"]["text/markdown"], "# m")
        self.assertEqual(d[4]["data"]["text/latex"], "$x$")
        self.assertEqual(d[5]["data"]["application/vnd.custom+json"], {"k": 1})

    def test_display_ids(self):
        evs = self.run_ok("from IPython.display import display, clear_output\n"
                          "h = display('one', display_id='d1')\nh.update('two')\n"
                          "clear_output(wait=True)\nclear_output()\nprint('p')")
        kinds = [(e["type"], e.get("display_id"), e.get("update"), e.get("wait"))
                 for e in evs if e["type"] in ("display", "clear_output")]
        self.assertEqual(kinds, [("display", "d1", None, None), ("display", "d1", True, None),
                                 ("clear_output", None, None, True),
                                 ("clear_output", None, None, False)])
        self.assertEqual(of_type(evs, "display")[1]["data"]["text/plain"], "'two'")

    def test_artifacts(self):
        out = os.path.join(self.r.cwd, "saved.png")
        evs = self.run_ok("import matplotlib.pyplot as plt, io\nplt.plot([1, 2])\n"
                          "plt.savefig(%r)\nplt.gcf().savefig(io.BytesIO())\n"
                          "plt.savefig(%r, format='svg')\nplt.close()" % (out, out + "2"))
        arts = of_type(evs, "artifact")
        self.assertEqual([(a["name"], a["format"]) for a in arts],
                         [(out, "png"), (out + "2", "svg")])
        # The path is the kernel's own: relative to its part of the channel.
        kept = os.path.join(self.r.channel, "kernel", arts[0]["path"])
        with open(out, "rb") as f, open(kept, "rb") as g:
            self.assertEqual(f.read(), g.read())
        self.assertEqual((arts[0]["width"], arts[0]["height"]), (640, 480))
        self.assertTrue(arts[1]["path"].endswith(".png2"))  # the file's own extension
        self.assertEqual(of_type(evs, "display"), [])    # closed: not shown, as in Jupyter

    def test_plotly(self):
        try:
            import plotly  # noqa: F401  (the test's python is the runner's)
        except ImportError:
            self.skipTest("plotly is not installed (python3-plotly)")
        evs = self.run_ok("import plotly.graph_objects as go\n"
                          "go.Figure(go.Bar(y=[1, 2])).show()")
        d = of_type(evs, "display")
        self.assertIn("<script", d[0]["data"]["text/html"])      # plotly.js, once
        self.assertEqual(d[1]["data"]["application/vnd.plotly.v1+json"]["data"],
                         [{"type": "bar", "y": [1, 2]}])
        arts = of_type(evs, "artifact")
        self.assertEqual([a["format"] for a in arts], ["html"])
        with open(os.path.join(self.r.channel, "kernel", arts[0]["path"]), encoding="utf-8") as f:
            page = f.read()
        self.assertTrue(page.startswith("<html>"))
        self.assertIn('"y":[1,2]', page.replace(" ", ""))

    def test_jupyter_names(self):
        try:
            from ipykernel.compiler import get_file_name  # noqa: F401
            from ipykernel.ipkernel import IPythonKernel
        except ImportError:
            self.skipTest("ipykernel is not installed")
        code = "import warnings\nwarnings.warn('careful')"
        evs = self.run_ok(code)
        name = subprocess.check_output(
            [PYTHON, "-c", "import os, sys\nfrom ipykernel.compiler import murmur2_x86 as m\n"
             "print(m(sys.argv[1], 0xC70F6907))", code], text=True).strip()
        self.assertIn("/ipykernel_%d/%s.py:2: UserWarning: careful" % (self.r.proc.pid, name),
                      text(evs, "stderr"))
        self.assertEqual(self.r.ready["language_info"], IPythonKernel.language_info)
        self.assertEqual(self.r.ready["kernelspec"]["name"], "python3")


if __name__ == "__main__":
    unittest.main()
