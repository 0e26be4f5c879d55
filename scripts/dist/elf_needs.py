#!/usr/bin/env python3
"""What a built ELF library needs from the machine that loads it.

    elf_needs.py FILE [--node-api-headers DIR]

Prints one JSON object:
  glibc, glibcxx, cxxabi, gcc: the highest symbol version FILE imports from
      glibc (GLIBC_x.y), libstdc++ (GLIBCXX_x, CXXABI_x) and libgcc_s (GCC_x),
      read from `objdump -T` (undefined symbols only): the oldest runtime that
      can load it. The same numbers auditwheel turns into a manylinux tag.
  needed: the DT_NEEDED libraries (`readelf -d`).
  node_api (with --node-api-headers, e.g. /usr/include/node): the highest
      Node-API version among the Node-API functions FILE uses, looked up in
      Node's own js_native_api.h / node_api.h (`#if NAPI_VERSION >= N`
      blocks); `node_api_functions` counts them. napi-rs (napi-sys with its
      default `dyn-symbols`) does not import them as ELF symbols: it looks
      each one up by name (dlsym) when the addon loads, so the names are
      NUL-terminated strings in the binary; both kinds are read. A function
      the headers declare experimental only is an error.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path

EXPERIMENTAL = 1_000_000


def version_key(v: str) -> tuple[int, ...]:
    return tuple(int(p) for p in v.split("."))


def imported_symbols(path: str) -> list[tuple[str, str]]:
    """(symbol, version tag) for every undefined dynamic symbol."""
    out = subprocess.run(["objdump", "-T", path], check=True, capture_output=True, text=True).stdout
    syms = []
    for line in out.splitlines():
        if "*UND*" not in line:
            continue
        parts = line.split()
        # ... *UND*  0000000000000000 [ (GLIBC_2.2.5) | GLIBC_2.2.5 ]  name
        name = parts[-1]
        tag = ""
        for p in parts:
            p = p.strip("()")
            if re.fullmatch(r"[A-Z_]+_[0-9.]+", p):
                tag = p
        syms.append((name, tag))
    return syms


def needed(path: str) -> list[str]:
    out = subprocess.run(["readelf", "-d", path], check=True, capture_output=True, text=True).stdout
    return re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", out)


def max_tag(syms: list[tuple[str, str]], prefix: str) -> str | None:
    vs = [t[len(prefix) :] for _, t in syms if t.startswith(prefix) and re.fullmatch(r"[0-9.]+", t[len(prefix) :])]
    return max(vs, key=version_key) if vs else None


def node_api_versions(headers: Path) -> dict[str, int]:
    """Function name -> the Node-API version that introduced it."""
    found: dict[str, int] = {}
    for h in ("js_native_api.h", "node_api.h"):
        stack: list[int] = []
        text = (headers / h).read_text()
        for line in text.splitlines():
            s = line.strip()
            if m := re.match(r"#\s*if\s+NAPI_VERSION\s*>=\s*(\d+)", s):
                stack.append(int(m.group(1)))
            elif re.match(r"#\s*if(def)?\b.*NAPI_EXPERIMENTAL", s):
                stack.append(EXPERIMENTAL)
            elif re.match(r"#\s*if", s):
                stack.append(0)
            elif re.match(r"#\s*else", s) and stack:
                stack[-1] = 0
            elif re.match(r"#\s*endif", s) and stack:
                stack.pop()
            for name in re.findall(r"\b((?:napi|node_api)_[a-z0-9_]+)\s*\(", s):
                v = max([1, *stack])
                found[name] = min(v, found.get(name, v))
    return found


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("file")
    ap.add_argument("--node-api-headers", type=Path)
    a = ap.parse_args()

    syms = imported_symbols(a.file)
    report: dict[str, object] = {
        "file": Path(a.file).name,
        "glibc": max_tag(syms, "GLIBC_"),
        "glibcxx": max_tag(syms, "GLIBCXX_"),
        "cxxabi": max_tag(syms, "CXXABI_"),
        "gcc": max_tag(syms, "GCC_"),
        "needed": needed(a.file),
    }
    if a.node_api_headers:
        table = node_api_versions(a.node_api_headers)
        names = {n for n, _ in syms if n.startswith(("napi_", "node_api_"))}
        data = Path(a.file).read_bytes()
        names |= {m.decode() for m in re.findall(rb"(?<![A-Za-z0-9_])((?:napi|node_api)_[a-z0-9_]+)\0", data)}
        used = sorted(n for n in names if n in table)
        experimental = [n for n in used if table[n] >= EXPERIMENTAL]
        if experimental:
            print(f"elf_needs: {a.file} uses Node-API functions the headers in "
                  f"{a.node_api_headers} declare experimental only: {', '.join(experimental)}", file=sys.stderr)
            return 1
        report["node_api"] = max((table[n] for n in used), default=None)
        report["node_api_functions"] = len(used)
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
