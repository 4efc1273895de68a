"""MkDocs hook: the lab's pre-registration table, generated from the definitions (`lab/trl_lite_lab/designs/`).

The page `lab.md` holds the marker `<!-- lab-preregistration -->`; this hook replaces it with
`trl_lite_lab.report.preregistration()`, the table `trl-lite-lab list --markdown` prints: every experiment's arms,
primary tests, gates, seeds, design module and hash. Nothing is typed by hand, so the page shows the definitions the
runs were made under, never an older copy.
"""

from __future__ import annotations

MARKER = "<!-- lab-preregistration -->"


def on_page_markdown(markdown: str, page, config, files, **kwargs) -> str:
    if MARKER in markdown:
        import importlib.util
        import os
        import sys

        if importlib.util.find_spec("trl_lite_lab") is None:  # not installed (`pip install -e lab`): the clone's copy
            sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(__file__))), "lab"))
        from trl_lite_lab.report import preregistration

        markdown = markdown.replace(MARKER, preregistration())
    return markdown
