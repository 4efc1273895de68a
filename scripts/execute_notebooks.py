"""Executes the example notebooks from a clean kernel and saves them with their outputs, which the docs site shows.

    python scripts/execute_notebooks.py                      # every notebook in examples/notebooks/, in place
    python scripts/execute_notebooks.py path/to/nb.ipynb     # or the ones named

Each runs with nbclient (Jupyter's own runner) in a fresh `python3` kernel of this interpreter, from a temporary
working folder (the runs they write go there), with a 10-minute limit per cell; a cell that raises stops it with the
cell's traceback. tests/test_notebooks.py runs them the same way and checks their figures.
"""

from __future__ import annotations

import argparse
import glob
import os
import tempfile

import nbformat
from nbclient import NotebookClient

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NOTEBOOKS = os.path.join(REPO, "examples", "notebooks")


def execute(path: str, workdir: str, timeout: int = 600):
    """`path` executed top to bottom in a fresh kernel whose working folder is `workdir`; returns the notebook with
    its outputs. The install cell does nothing in a kernel that has trl-lite already, as this one does."""
    nb = nbformat.read(path, as_version=4)
    NotebookClient(nb, timeout=timeout, kernel_name="python3", resources={"metadata": {"path": workdir}}).execute()
    return nb


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("notebooks", nargs="*", default=sorted(glob.glob(os.path.join(NOTEBOOKS, "*.ipynb"))))
    for path in parser.parse_args().notebooks:
        with tempfile.TemporaryDirectory() as workdir:
            nb = execute(path, workdir)
        nbformat.write(nb, path)
        print(path, "executed")


if __name__ == "__main__":
    main()
