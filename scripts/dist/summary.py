#!/usr/bin/env python3
"""summary.py DIST WORK: what `make dist` wrote, with sizes and what each
artifact needs on the machine that installs it (from the wheel's tag and the
elf_needs.py reports in WORK)."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path


def size(n: int) -> str:
    return f"{n / 1e6:.1f} MB" if n >= 1e5 else f"{n / 1e3:.1f} kB"


def main() -> int:
    dist, work = Path(sys.argv[1]), Path(sys.argv[2])
    node = json.loads((work / "node-needs.json").read_text())
    c = json.loads((work / "c-needs.json").read_text())
    cli = json.loads((work / "cli-needs.json").read_text())
    rows = []
    for f in sorted(p for p in dist.rglob("*") if p.is_file()):
        name = f.name
        if name == "SHA256SUMS":
            continue
        if m := re.search(r"-(cp\d+)-abi3-manylinux_(\d+)_(\d+)_", name):
            py = m.group(1)[2] + "." + m.group(1)[3:]
            needs = f"CPython >= {py} (abi3), glibc >= {m.group(2)}.{m.group(3)} (manylinux tag)"
        elif name.endswith(".tar.gz") and name.startswith("telha_jobs-"):
            needs = "pip + a Rust toolchain, libclang, a C++ compiler (builds RocksDB)"
        elif name.endswith(".tgz") and "-linux-" in name:
            needs = f"Node-API {node['node_api']}, glibc >= {node['glibc']}, GLIBCXX_{node['glibcxx']}"
        elif name.endswith(".tgz"):
            needs = "its platform package (optionalDependencies)"
        elif f.parent.name == "cli":
            needs = f"glibc >= {cli['glibc']}, GLIBCXX_{cli['glibcxx']}"
        elif name.endswith(".tar.gz"):
            needs = f"glibc >= {c['glibc']}, GLIBCXX_{c['glibcxx']}"
        else:
            needs = ""
        rows.append((str(f.relative_to(dist)), size(f.stat().st_size), needs))
    w = max(len(r[0]) for r in rows)
    print(f"dist/ ({len(rows)} artifacts + SHA256SUMS)")
    for name, sz, needs in rows:
        print(f"  {name:<{w}}  {sz:>8}  {needs}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
