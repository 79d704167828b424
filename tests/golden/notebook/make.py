"""Write the case's input with nbformat itself."""
import os, sys
import nbformat
from nbformat.v4 import new_notebook, new_code_cell, new_markdown_cell

nb = new_notebook(metadata={'kernelspec': {'name': 'python3', 'display_name': 'Python 3',
                                           'language': 'python'}})
nb.cells = [
    new_markdown_cell('# Plots'),
    new_code_cell('import matplotlib.pyplot as plt'),
    new_code_cell('plt.plot([1, 2, 3])\nplt.title("line")\nplt.show()'),
    new_code_cell('print("between")\nfig = plt.figure(figsize=(2, 1))\nplt.bar([1], [2])'),
    new_code_cell(''),
    new_code_cell('1 + 1'),
]
nbformat.write(nb, os.path.join(sys.argv[1], 'cells.ipynb'))
