#!/usr/bin/env python3
"""sdist_complete.py SDIST REPO: make maturin's sdist build on its own.

`maturin sdist` packs the py crate and the workspace crates it reaches
through `path` dependencies, and rewrites the workspace manifest to those
members. It leaves out crates that enter the graph through `[patch]`
(vendor/prost-derive here: see vendor/prost-derive/README.telha), although
the manifest it packs still points at them, so cargo cannot even read the
workspace. This adds each patched path crate's git-tracked files, then lets
cargo prune Cargo.lock to the sdist's own graph (offline: entries are only
removed, never added or moved to another version; checked), so a build from
the sdist resolves exactly the versions the checkout was tested with
(`cargo ... --locked` works). The archive is rewritten in place,
reproducibly (sorted, owner 0, the last commit's time).
"""

from __future__ import annotations

import gzip
import io
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import tomllib
from pathlib import Path


def lock_entries(path: Path) -> set[tuple[str, str, str]]:
    lock = tomllib.loads(path.read_text())
    return {(p["name"], p["version"], p.get("source", "")) for p in lock["package"]}


def main() -> int:
    sdist, repo = Path(sys.argv[1]).resolve(), Path(sys.argv[2]).resolve()
    with tempfile.TemporaryDirectory() as tmp:
        with tarfile.open(sdist) as t:
            t.extractall(tmp, filter="data")
        (top,) = os.listdir(tmp)
        root = Path(tmp) / top

        manifest = tomllib.loads((root / "Cargo.toml").read_text())
        for registry, patches in manifest.get("patch", {}).items():
            for name, spec in patches.items():
                rel = spec.get("path") if isinstance(spec, dict) else None
                if rel is None or (root / rel / "Cargo.toml").exists():
                    continue
                files = subprocess.run(
                    ["git", "-C", str(repo), "ls-files", "-z", "--", rel],
                    check=True, capture_output=True, text=True,
                ).stdout.split("\0")
                files = [f for f in files if f]
                if not files:
                    print(f"sdist_complete: [patch.{registry}] {name} = {rel}: no tracked files", file=sys.stderr)
                    return 1
                for f in files:
                    (root / f).parent.mkdir(parents=True, exist_ok=True)
                    shutil.copy2(repo / f, root / f)
                print(f"sdist_complete: added [patch.{registry}] {name} ({rel}, {len(files)} files)")

        before = lock_entries(root / "Cargo.lock")
        subprocess.run(
            ["cargo", "metadata", "--format-version", "1", "--offline", "--manifest-path", str(root / "Cargo.toml")],
            check=True, stdout=subprocess.DEVNULL,
        )
        after = lock_entries(root / "Cargo.lock")
        if not after <= before:
            print(f"sdist_complete: cargo changed locked versions: {sorted(after - before)}", file=sys.stderr)
            return 1
        print(f"sdist_complete: Cargo.lock pruned to the sdist's graph ({len(before)} -> {len(after)} packages)")

        mtime = int(subprocess.run(["git", "-C", str(repo), "log", "-1", "--format=%ct"],
                                   capture_output=True, text=True).stdout.strip() or 0)
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as out:
            for path in sorted(p for p in root.rglob("*") if p.is_file()):
                info = out.gettarinfo(str(path), arcname=f"{top}/{path.relative_to(root)}")
                info.uid = info.gid = 0
                info.uname = info.gname = ""
                info.mtime = mtime
                info.mode = 0o755 if os.access(path, os.X_OK) else 0o644
                with open(path, "rb") as f:
                    out.addfile(info, f)
        with open(sdist, "wb") as f, gzip.GzipFile(filename="", mode="wb", fileobj=f, mtime=0) as gz:
            gz.write(buf.getvalue())
    return 0


if __name__ == "__main__":
    sys.exit(main())
