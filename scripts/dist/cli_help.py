#!/usr/bin/env python3
"""cli_help.py BIN: the `telha` CLI's whole --help text, man-style, on stdout.

The tool's own `--help` for itself and for every subcommand, depth first in
the order `--help` lists them (each "Commands:" block is read to find the
next level; clap's `help` pseudo-command is left out), under a NAME /
SYNOPSIS / COMMANDS header. It is what `telha.txt` in the release tarball
holds: the binary's own words, so it can never drift from it.
"""

from __future__ import annotations

import re
import subprocess
import sys


def help_of(binary: str, path: list[str]) -> str:
    out = subprocess.run([binary, *path, "--help"], check=True, capture_output=True, text=True)
    return out.stdout.rstrip() + "\n"


def subcommands(text: str) -> list[str]:
    m = re.search(r"^Commands:\n(.*?)(?:\n\n|\Z)", text, re.M | re.S)
    if not m:
        return []
    names = []
    for line in m.group(1).splitlines():
        if w := re.match(r"^  (\S+)", line):
            if w.group(1) != "help":
                names.append(w.group(1))
    return names


def walk(binary: str, path: list[str], out: list[tuple[list[str], str]]) -> None:
    text = help_of(binary, path)
    out.append((path, text))
    for name in subcommands(text):
        walk(binary, [*path, name], out)


def main() -> int:
    binary = sys.argv[1]
    version = subprocess.run([binary, "--version"], check=True, capture_output=True, text=True).stdout.strip()
    pages: list[tuple[list[str], str]] = []
    walk(binary, [], pages)
    about = pages[0][1].split("\n", 1)[0]
    title = f"TELHA(1)    {version}    TELHA(1)"
    lines = [title, "", "NAME", f"    telha - {about}", "", "SYNOPSIS", "    telha [OPTIONS] <COMMAND>", ""]
    lines += ["COMMANDS", *[f"    telha {' '.join(p)}" for p, _ in pages[1:]], ""]
    lines += ["Every command's own --help follows, as the binary prints it.", ""]
    for path, text in pages:
        name = " ".join(["telha", *path])
        lines += ["=" * 78, name.upper() if not path else name, "=" * 78, "", text]
    sys.stdout.write("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
