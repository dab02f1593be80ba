"""Generated sections of the Markdown documents: the text between two marker comments, rewritten from code."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path


def replace_section(document: str, begin: str, end: str, body: str) -> str:
    """`document` with the text between the markers `begin` and `end` replaced by `body`."""
    start = document.find(begin)
    stop = document.find(end)
    if start < 0 or stop < start:
        raise ValueError(f"markers not found: {begin!r} ... {end!r}")
    return document[: start + len(begin)] + "\n\n" + body + "\n" + document[stop:]


def section_cli(argv: list[str] | None, description: str, render: Callable[[], str], begin: str, end: str) -> int:
    """`python -m <module> [--write DOC]`: print the generated section, or rewrite it inside DOC between the markers."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--write", type=Path, help="Replace the generated section of this Markdown file.")
    args = parser.parse_args(argv)
    if args.write is None:
        sys.stdout.write(render())
        return 0
    document = args.write.read_text(encoding="utf-8")
    args.write.write_text(replace_section(document, begin, end, render()), encoding="utf-8")
    return 0
