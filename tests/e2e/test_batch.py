"""papermill's and nbval's batch habits in `cellbox replay`: parameters (-p, -r, -f) injected as
papermill injects them, and the JUnit report (--junit) of --check and --keep-going. Real
processes, the real runner and IPython (local backend); the R kernel's in test_batch_r.py."""
import json
import os
import unittest

import nbformat

from test_cli import Base

PERCENT = '''# %% [markdown]
# Report

# %% tags=["parameters"]
a = 1
b = 2.0
c = False
d = "x"
e = 0

# %%
for n in "abcdef":
    v = globals().get(n)
    print(n, repr(v), type(v).__name__)
'''

# The text papermill 2.6 writes for these values, derived by hand from its code:
# papermill/cli.py _resolve_type types a -p value ("True"/"False"/"None" exactly, then what
# int() and float() take, else the text; -r keeps the text), papermill/translators.py
# Translator.codify writes "# Parameters" then "name = value" lines, PythonTranslator
# translates None/True as str(), floats as repr() (non-finite ones as float('inf')), strings
# by translate_escaped_str: unicode_escape (\t, \n, \\, \xNN below 0x20 and 0x7f-0xff, \uNNNN,
# \UNNNNNNNN), then " as \". Black is optional in papermill and not used here.
MIX = [('-p', 'i', '007'), ('-p', 'f', '1e3'), ('-p', 't', 'True'), ('-p', 'lower', 'true'),
       ('-p', 'n', 'None'), ('-p', 'inf', '-inf'), ('-p', 'tiny', '0.00001'),
       ('-p', 'big', '12345678901234567890123'), ('-p', 'us', '1_000'),
       ('-p', 'text', 'say "hi"\tnow\n\\ \u00e9 \U0001F600'), ('-r', 'raw', '12')]
MIX_PYTHON = ('# Parameters\n'
              'i = 7\n'
              'f = 1000.0\n'
              't = True\n'
              'lower = "true"\n'
              'n = None\n'
              "inf = float('-inf')\n"
              'tiny = 1e-05\n'
              'big = 12345678901234567890123\n'
              'us = 1000\n'
              'text = "say \\"hi\\"\\tnow\\n\\\\ \\xe9 \\U0001f600"\n'
              'raw = "12"\n')

# -f: PyYAML's safe loader without dates (papermill's NoDatesSafeLoader, iorw.py): YAML 1.1
# booleans (yes, off), 0x and 0-octal ints, 1:30 sexagesimals, floats need a dot (1e3 is a
# string), dates stay strings; dicts by PythonTranslator.translate_dict with every key through
# translate_str ("1" for the int key 1), lists by translate_list.
YAML = '''# parameters
alpha: 0.5
flag: yes
off_: off
hex: 0x1F
octal: 017
minutes: 1:30
sci: 1e3
sci2: 1.0e+3
day: 2024-01-01
none:
quoted: "07"
items: [1, "two", .inf, null]
conf: {k: v, 1: 2, nested: {deep: [true]}}
'''
YAML_PYTHON = ('# Parameters\n'
               'alpha = 0.5\n'
               'flag = True\n'
               'off_ = False\n'
               'hex = 31\n'
               'octal = 15\n'
               'minutes = 90\n'
               'sci = "1e3"\n'
               'sci2 = 1000.0\n'
               'day = "2024-01-01"\n'
               'none = None\n'
               'quoted = "07"\n'
               "items = [1, \"two\", float('inf'), None]\n"
               'conf = {"k": "v", "1": 2, "nested": {"deep": [True]}}\n')


class ParamsTest(Base):
    def write(self, name, text):
        path = os.path.join(self.tmp, name)
        with open(path, 'w') as f:
            f.write(text)
        return path

    def replay(self, src, *args):
        out = os.path.join(self.tmp, 'out.ipynb')
        p = self.cellbox('replay', '--no-progress', src, '-o', out, *args)
        return p, (nbformat.read(out, as_version=4) if os.path.exists(out) else None)

    def test_typed_values_reach_the_kernel(self):
        src = self.write('report.py', PERCENT)
        p, nb = self.replay(src, '-p', 'a', '42', '-p', 'b', '-1.5e-3', '-p', 'c', 'True',
                            '-p', 'd', 'None', '--parameters', 'e', 'hello world',
                            '-r', 'f', '3')
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("a 42 int\nb -0.0015 float\nc True bool\nd None NoneType\n"
                      "e 'hello world' str\nf '3' str\n", p.stdout)
        # The injected cell runs after the parameters cell and is recorded, as papermill does.
        self.assertEqual([c.cell_type for c in nb.cells], ['markdown', 'code', 'code', 'code'])
        cell = nb.cells[2]
        self.assertEqual(cell.metadata.tags, ['injected-parameters'])
        self.assertEqual(cell.execution_count, 2)
        self.assertEqual(cell.source, '# Parameters\na = 42\nb = -0.0015\nc = True\nd = None\n'
                         'e = "hello world"\nf = "3"\n')
        self.assertEqual(nb.metadata.papermill.parameters,
                         {'a': 42, 'b': -0.0015, 'c': True, 'd': None, 'e': 'hello world',
                          'f': '3'})
        self.assertNotIn('warning', p.stderr)

    def test_injected_text_is_papermills(self):
        nb = nbformat.v4.new_notebook()
        nb.cells = [nbformat.v4.new_code_cell('x = 0'),
                    nbformat.v4.new_code_cell('i = 0', metadata={'tags': ['parameters']}),
                    nbformat.v4.new_code_cell('print(i + 1, f, repr(text))')]
        src = os.path.join(self.tmp, 'nb.ipynb')
        nbformat.write(nb, src)
        args = [w for opt in MIX for w in opt]
        p, out = self.replay(src, *args)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertEqual(out.cells[2].source, MIX_PYTHON)
        self.assertIn("8 1000.0 'say \"hi\"\\tnow\\n\\\\ \u00e9 \U0001F600'\n", p.stdout)
        # A second replay of the executed notebook replaces the injected cell, as papermill.
        again = os.path.join(self.tmp, 'again.ipynb')
        os.rename(os.path.join(self.tmp, 'out.ipynb'), again)
        p, out = self.replay(again, *args, '-p', 'i', '1')     # a later -p: in i's place
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual([c.source for c in out.cells[1:3]],
                         ['i = 0', MIX_PYTHON.replace('i = 7', 'i = 1')])
        self.assertEqual(len(out.cells), 4)
        self.assertIn('2 1000.0', p.stdout)

    def test_yaml_file(self):
        src = self.write('report.py', PERCENT)
        params = self.write('params.yaml', YAML)
        p, nb = self.replay(src, '-f', params)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(nb.cells[2].source, YAML_PYTHON)
        self.assertEqual(nb.metadata.papermill.parameters['conf'],
                         {'k': 'v', '1': 2, 'nested': {'deep': [True]}})
        # -p comes after the file (papermill's order): its value, in the file's place.
        p, nb = self.replay(src, '--parameters-file', params, '-p', 'hex', '1', '-p', 'a', '5')
        self.assertEqual(p.returncode, 0, p.stderr)
        lines = nb.cells[2].source.splitlines()
        self.assertEqual((lines[4], lines[-1]), ('hex = 1', 'a = 5'))
        self.assertIn('a 5 int\n', p.stdout)

    def test_where_the_cell_goes(self):
        # No cell tagged parameters: first, with papermill's warning.
        src = self.write('plain.py', '# %%\nprint(k)\n')
        p, nb = self.replay(src, '-p', 'k', 'v')
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(nb.cells[0].source, '# Parameters\nk = "v"\n')
        self.assertIn("has no cell tagged 'parameters'", p.stderr)
        # Two: after the first (papermill's find_first_tagged_cell_index), said so.
        src = self.write('two.py', '# %% tags=["parameters"]\nk = 1\n\n'
                         '# %% tags=["parameters"]\nk = 2\n\n# %%\nprint(k)\n')
        p, nb = self.replay(src, '-p', 'k', '3')
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual([c.source for c in nb.cells],
                         ['k = 1', '# Parameters\nk = 3\n', 'k = 2', 'print(k)'])
        self.assertIn("2 cells tagged 'parameters'", p.stderr)
        self.assertIn('\n2\n', p.stdout)
        # An empty file is no parameters: nothing injected (papermill: `if parameters:`).
        p, nb = self.replay(src, '-f', self.write('empty.yaml', '# nothing\n'))
        self.assertEqual((p.returncode, len(nb.cells)), (0, 3), p.stderr)

    def test_bad_input(self):
        src = self.write('report.py', PERCENT)
        cases = [
            (['-p', 'a'], "--parameters needs two values (NAME VALUE)"),
            (['-p'], "--parameters needs two values (NAME VALUE)"),
            (['-p', '1a', '2'], "parameter name '1a' is not a name"),
            (['-p', 'a;import os', '2'], "parameter name 'a;import os' is not a name"),
            (['-f', self.write('list.yaml', '- a\n- b\n')],
             'list.yaml:1: the parameters are not a mapping'),
            (['-f', self.write('scalar.yaml', 'just text\n')],
             'scalar.yaml:1: the parameters are not a mapping'),
            (['-f', self.write('alias.yaml', 'a: &x [1]\nb: *x\n')],
             'alias.yaml:2: aliases (*name) are not taken'),
            (['-f', self.write('two.yaml', 'a: 1\n---\nb: 2\n')],
             'two.yaml:2: more than one document'),
            (['-f', self.write('deep.yaml', 'a: ' + '[' * 40 + ']' * 40 + '\n')],
             'deep.yaml:1: nested deeper than 32 levels'),
            (['-f', self.write('bad.yaml', 'a: [1, 2\n')], 'bad.yaml:'),
            (['-f', self.write('code.yaml', '"x = 1\\nimport os": 1\n')],
             "is not a name"),
            (['-f', self.write('tag.yaml', 'a: !!python/object:os.system x\n')],
             'tag.yaml:1: a tag other than !!str'),
            (['-f', self.write('big.yaml', 'a: "' + 'x' * (1 << 20) + '"\n')],
             'big.yaml: bigger than 1048576 bytes'),
            (['-f', os.path.join(self.tmp, 'missing.yaml')], "cannot read"),
        ]
        for args, message in cases:
            p, nb = self.replay(src, *args)
            self.assertEqual(p.returncode, 2, (args[:2], p.stderr))
            self.assertIn(message, p.stderr, args[:2])
            self.assertIsNone(nb, args[:2])     # nothing ran, nothing written
            self.assertNotIn('In [', p.stdout)


def junit(path):
    """The report parsed by Python's own XML parser (a file that is not XML fails here)."""
    import xml.etree.ElementTree as ET
    return ET.parse(path).getroot()


def counts(suite):
    return {k: suite.get(k) for k in ('tests', 'failures', 'errors', 'skipped')}


class JunitTest(ParamsTest):
    test_typed_values_reach_the_kernel = test_injected_text_is_papermills = None
    test_yaml_file = test_where_the_cell_goes = test_bad_input = None

    def notebook(self, name, cells):
        nb = nbformat.v4.new_notebook()
        nb.cells = cells
        path = os.path.join(self.tmp, name)
        nbformat.write(nb, path)
        return path

    def stream(self, text):
        return [nbformat.v4.new_output('stream', name='stdout', text=text)]

    def test_check_with_one_differing_cell(self):
        cell = nbformat.v4.new_code_cell
        src = self.notebook('nb.ipynb', [
            nbformat.v4.new_markdown_cell('# title'),
            cell('x = 1\nprint(x)', outputs=self.stream('1\n')),
            cell('print(x + 1)', outputs=self.stream('3\n')),       # now 2: differs
            cell('never()', metadata={'tags': ['skip-execution']}),
            cell('# NBVAL_IGNORE_OUTPUT\nimport random\nprint(random.random())',
                 outputs=self.stream('0.5\n')),
        ])
        report = os.path.join(self.tmp, 'report.xml')
        with open(report, 'w') as f:
            f.write('old report')
        p = self.cellbox('replay', '--no-progress', '--check', src, '--junit', report)
        self.assertEqual(p.returncode, 6, p.stderr)
        suite = junit(report)
        self.assertEqual(suite.tag, 'testsuite')
        self.assertEqual(counts(suite), {'tests': '4', 'failures': '1', 'errors': '0',
                                         'skipped': '1'})
        self.assertGreater(float(suite.get('time')), 0)
        cases = suite.findall('testcase')
        self.assertEqual([c.get('name') for c in cases],
                         ['In [1] (x = 1)', 'In [2] (print(x + 1))', 'cell 4 (never())',
                          'In [3] (# NBVAL_IGNORE_OUTPUT)'])
        self.assertEqual({c.get('classname') for c in cases}, {src})
        failure = cases[1].find('failure')
        self.assertEqual(failure.get('message'), "the outputs differ from the notebook's")
        self.assertIn('- 3\n+ 2\n', failure.text)
        self.assertIn('- 3\n+ 2\n', p.stdout)        # the transcript still shows it
        self.assertEqual(cases[2].find('skipped').get('message'), 'tagged skip-execution')
        self.assertIsNone(cases[0].find('failure'))
        self.assertIsNone(cases[3].find('failure'))
        self.assertEqual([n for n in os.listdir(self.tmp) if 'report' in n], ['report.xml'])

    def test_keep_going_with_one_raising_cell(self):
        src = self.write('k.py', '# %%\nx = 1\n\n'
                         '# %%\nraise ValueError("<a & \\"b\\">\\x1b[31mred\\x01 \\u00e9")\n\n'
                         '# %% tags=["raises-exception"]\n1 / 0\n\n'
                         '# %%\nprint(x)\n')
        report = os.path.join(self.tmp, 'k.xml')
        p = self.cellbox('replay', '--no-progress', '--keep-going', src, '--junit', report)
        self.assertEqual(p.returncode, 1, p.stderr)
        with open(report, 'rb') as f:
            raw = f.read()
        self.assertTrue(raw.startswith(b'<?xml version="1.0" encoding="utf-8"?>\n'))
        for c in range(0x20):
            if c not in (9, 10):
                self.assertNotIn(bytes([c]), raw, c)        # control characters removed
        suite = junit(report)
        self.assertEqual(counts(suite), {'tests': '4', 'failures': '1', 'errors': '0',
                                         'skipped': '0'})
        cases = suite.findall('testcase')
        failure = cases[1].find('failure')
        self.assertEqual(cases[1].get('name'),
                         'In [2] (raise ValueError("<a & \\"b\\">\\x1b[31mred\\x01 \\u00e9"))')
        self.assertEqual(failure.get('message'), 'ValueError: <a & "b">[31mred \u00e9'
                         .replace('[31m', ''))
        self.assertIn('Traceback', failure.text)
        self.assertIsNone(cases[2].find('failure'))     # raises-exception may raise
        # Without --keep-going: the cells after the failing one are skipped, not run.
        p = self.cellbox('replay', '--no-progress', src, '--junit', report)
        self.assertEqual(p.returncode, 1, p.stderr)
        suite = junit(report)
        self.assertEqual(counts(suite), {'tests': '4', 'failures': '1', 'errors': '0',
                                         'skipped': '2'})
        self.assertEqual(suite.findall('testcase')[3].find('skipped').get('message'),
                         'not run: the replay stopped before it')

    def test_jobs_one_suite_per_file(self):
        good = self.write('good.py', '# %%\nprint(1)\n')
        bad = self.write('bad.py', '# %%\n1 / 0\n\n# %%\nprint(2)\n')
        missing = os.path.join(self.tmp, 'missing.py')
        report = os.path.join(self.tmp, 'all.xml')
        p = self.cellbox('replay', '--no-progress', '-j', '2', '-k', good, bad, missing,
                         '--junit', report)
        self.assertEqual(p.returncode, 2, p.stderr)
        root = junit(report)
        self.assertEqual(root.tag, 'testsuites')
        self.assertEqual([s.get('name') for s in root], [good, bad, missing])
        self.assertEqual([counts(s) for s in root],
                         [{'tests': '1', 'failures': '0', 'errors': '0', 'skipped': '0'},
                          {'tests': '2', 'failures': '1', 'errors': '0', 'skipped': '0'},
                          {'tests': '1', 'failures': '0', 'errors': '1', 'skipped': '0'}])
        self.assertEqual(os.listdir(self.tmp).count('all.xml'), 1)


if __name__ == '__main__':
    unittest.main()
