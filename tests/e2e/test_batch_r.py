"""papermill's parameters for the R kernel (RTranslator's text) through `cellbox replay`.
Skipped (exit 77, which meson counts as skipped, not passed) without Rscript."""
import os
import sys
import unittest

from test_batch import ParamsTest

RSCRIPT = os.environ.get('CELLBOX_TEST_RSCRIPT', '/usr/bin/Rscript')

if not os.access(RSCRIPT, os.X_OK):
    print('1..0 # SKIP no Rscript (Debian: apt-get install r-base-core r-cran-jsonlite)')
    sys.exit(77)

PERCENT_R = '''# %% tags=["parameters"]
n <- 0

# %%
for (v in c("n", "x", "s", "ok", "none", "l", "r")) cat(v, deparse(get0(v)), class(get0(v)), "\\n")
'''

# RTranslator (papermill/translators.py): TRUE/FALSE, NULL, lists and dicts as list(...) with
# keys through translate_str, leading _ dropped from names (R's names cannot start with one).
R_TEXT = ('# Parameters\n'
          'n = 3\n'
          'x = 0.25\n'
          's = "it\'s \\"R\\""\n'
          'ok = TRUE\n'
          'none = NULL\n'
          'l = list(1, "a", FALSE)\n'
          'r = list("k" = 1, "j" = list(2))\n')


class ParamsRTest(ParamsTest):
    def test_typed_values_reach_the_kernel(self):
        src = self.write('report.R', PERCENT_R)
        params = self.write('p.yaml', 'l: [1, a, no]\n_r: {k: 1, j: [2]}\n')
        p, nb = self.replay(src, '-p', 'n', '3', '-p', 'x', '0.25', '-p', 's', 'it\'s "R"',
                            '-p', 'ok', 'True', '-p', 'none', 'None', '-f', params,
                            '--kernel', 'r')
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(nb.cells[1].source,
                         # the file's come first (papermill reads -f before -p)
                         '# Parameters\nl = list(1, "a", FALSE)\nr = list("k" = 1, '
                         '"j" = list(2))\nn = 3\nx = 0.25\ns = "it\'s \\"R\\""\nok = TRUE\n'
                         'none = NULL\n')
        self.assertIn('n 3 integer', p.stdout.replace('numeric', 'integer'))
        self.assertIn('x 0.25 numeric', p.stdout)
        self.assertIn('s "it\'s \\"R\\"" character', p.stdout)
        self.assertIn('ok TRUE logical', p.stdout)
        self.assertIn('none NULL NULL', p.stdout)
        self.assertIn('r list(k = 1, j = list(2)) list', p.stdout)

    # The rest is the language's business only in the cell's text: not repeated for R.
    test_injected_text_is_papermills = test_yaml_file = test_where_the_cell_goes = None
    test_bad_input = None



if __name__ == '__main__':
    unittest.main()
