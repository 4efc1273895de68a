"""Docs and packaging: the docs site, README and quickstart commands, the notebook, the import graph."""
