"""A notebook whose stored outputs are what the cells print (addresses and timings vary);
with a second argument, the first one differs (check_differs makes it so)."""
import os, sys
import nbformat
from nbformat.v4 import new_notebook, new_code_cell, new_output

nb = new_notebook()
nb.cells = [
    new_code_cell('print("hello")', execution_count=1,
                  outputs=[new_output('stream', name='stdout', text='hello\n')]),
    new_code_cell('class A: pass\nA()', execution_count=2, outputs=[new_output(
        'execute_result', execution_count=2, data={'text/plain': '<__main__.A at 0x7f0000000000>'})]),
    new_code_cell('print("took 12.5 ms")', execution_count=3,
                  outputs=[new_output('stream', name='stdout', text='took 3 ms\n')]),
]
if len(sys.argv) > 2:
    nb.cells[0].outputs[0].text = 'goodbye\n'
nbformat.write(nb, os.path.join(sys.argv[1], 'cells.ipynb'))
