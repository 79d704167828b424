"""The runner as it ships: the package runner/ zipped into one runner.zip (scripts/embed.py),
and the zip the runner's tests run (the build's, CELLBOX_RUNNER_ZIP, else one made here).

    /usr/bin/python3 -m unittest kernels/python/test_runner_zip.py
"""

import glob
import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import runner_harness as harness  # noqa: E402
PACKAGE = os.path.join(HERE, "runner")
# The one source of the protocol version (scripts/embed.py reads it there).
PROTOCOL_SOURCE = os.path.join(PACKAGE, "__init__.py")


# The runner's zip: the build's, else one made from the package as the build makes it.
RUNNER = harness.as_shipped("CELLBOX_RUNNER_ZIP", "runner.zip", lambda embed: embed.make_zip(
    sorted(glob.glob(os.path.join(PACKAGE, "*.py")))))


class ZipTest(unittest.TestCase):
    """The zip the runner ships as (scripts/embed.py): the package, the same bytes each time."""

    def test_zip_is_the_package(self):
        import zipfile
        with zipfile.ZipFile(RUNNER) as z:
            infos = z.infolist()
            names = [i.filename for i in infos]
            sources = sorted(glob.glob(os.path.join(PACKAGE, "*.py")))
            self.assertEqual(names, sorted(
                "__main__.py" if os.path.basename(p) == "__main__.py"
                else "runner/" + os.path.basename(p) for p in sources))
            for p in sources:
                base = os.path.basename(p)
                with open(p, "rb") as f:
                    self.assertEqual(z.read(base if base == "__main__.py" else "runner/" + base),
                                     f.read(), p)
            self.assertEqual({(i.date_time, i.external_attr >> 16) for i in infos},
                             {((1980, 1, 1, 0, 0, 0), 0o100644)})
        # made again from the same files: the same bytes (a reproducible build)
        with open(RUNNER, "rb") as f:
            self.assertEqual(harness.embed().make_zip(sources), f.read())


if __name__ == "__main__":
    unittest.main()
