"""Screenshots of the built docs site, as a reader's browser renders them.

    python docs/take_screenshots.py                 # builds the site into a temporary folder first
    python docs/take_screenshots.py --site site     # or uses a site already built there

Writes `docs/screenshots/home.png`, `configuration.png` and `notebook.png` (1280 x 1600) with headless Chromium
(`/usr/bin/chromium` or `$CHROMIUM`), the site served over HTTP on 127.0.0.1. Needs the docs build requirements
(mkdocs, mkdocs-material, mkdocstrings[python]) and Chromium; nothing is fetched from the network.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PAGES = {"home": "", "configuration": "configuration/", "notebook": "notebooks/lite_ppo/"}
CHROMIUM_FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--hide-scrollbars",
]


def chromium() -> str | None:
    for candidate in (os.environ.get("CHROMIUM"), "/usr/bin/chromium", "chromium", "chromium-browser", "google-chrome"):
        if candidate and shutil.which(candidate):
            return shutil.which(candidate)
    return None


def build(site: Path) -> None:
    subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-d", str(site)], cwd=REPO, check=True)


@contextlib.contextmanager
def serve(site: Path):
    """`python -m http.server` on a free port of 127.0.0.1; yields the base URL."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = subprocess.Popen(
        [sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1", "--directory", str(site)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}/"
    try:
        for _ in range(100):
            try:
                urllib.request.urlopen(url, timeout=1).close()
                break
            except OSError:
                time.sleep(0.1)
        yield url
    finally:
        server.terminate()
        server.wait(timeout=10)


def browser(url: str, *args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    """Headless Chromium on `url` with a fresh profile; `args` e.g. `--dump-dom` or `--screenshot=PATH`."""
    exe = chromium()
    if exe is None:
        raise FileNotFoundError("chromium not found (set $CHROMIUM)")
    with tempfile.TemporaryDirectory() as profile:
        return subprocess.run(
            [exe, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", *args, url],
            capture_output=True, text=True, timeout=timeout,
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--site", type=Path, help="an already built site (default: build one into a temporary folder)")
    parser.add_argument("--out", type=Path, default=REPO / "docs" / "screenshots")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        site = args.site or Path(tmp) / "site"
        if args.site is None:
            build(site)
        with serve(site.resolve()) as url:
            for name, path in PAGES.items():
                target = (args.out / f"{name}.png").resolve()
                browser(url + path, f"--screenshot={target}", "--window-size=1280,1600")
                print(target, target.stat().st_size, "bytes")


if __name__ == "__main__":
    main()
