"""Executes the example notebooks from a clean kernel and saves them with their outputs, which the docs site shows.

    python scripts/execute_notebooks.py                      # every notebook in examples/notebooks/, in place
    python scripts/execute_notebooks.py path/to/nb.ipynb     # or the ones named

Each runs with nbclient (Jupyter's own runner) in a fresh kernel of this interpreter, from a temporary
working folder (the runs they write go there), with a 10-minute limit per cell; a cell that raises stops it with the
cell's traceback. tests/docs/test_notebooks.py runs them the same way and checks their figures.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import sys
import tempfile

import nbformat
from nbclient import NotebookClient

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NOTEBOOKS = os.path.join(REPO, "examples", "notebooks")


def execute(path: str, workdir: str, timeout: int = 600):
    """`path` executed top to bottom in a fresh kernel of this interpreter (`sys.executable`, whatever kernels the
    user has installed), whose working folder is `workdir`; returns the notebook with its outputs. The install cell
    does nothing in a kernel that has trl-lite already, as this one does."""
    from jupyter_client.kernelspec import KernelSpecManager
    from jupyter_client.manager import KernelManager

    nb = nbformat.read(path, as_version=4)
    with tempfile.TemporaryDirectory() as kernels:
        os.makedirs(os.path.join(kernels, "trl-lite"))
        with open(os.path.join(kernels, "trl-lite", "kernel.json"), "w", encoding="utf-8") as f:
            json.dump({"argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
                       "display_name": "trl-lite (this interpreter)", "language": "python"}, f)
        specs = KernelSpecManager(kernel_dirs=[kernels], ensure_native_kernel=False)
        km = KernelManager(kernel_name="trl-lite", kernel_spec_manager=specs)
        NotebookClient(nb, km=km, timeout=timeout, resources={"metadata": {"path": workdir}}).execute()
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
