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
        from trl_lite_lab.report import preregistration  # the lab's package: `pip install -e lab` in a clone

        markdown = markdown.replace(MARKER, preregistration())
    return markdown
