#!/usr/bin/env python3
"""readme_block.py README HEADING LANG [N]: print the Nth (default 1st)
```LANG fenced block found under the Markdown heading HEADING (a whole line
such as "## Python"), before the next heading of the same or a higher level.
Exit 1 when there is none, so a test cannot pass on an empty example."""

import sys


def main() -> int:
    path, heading, lang = sys.argv[1:4]
    nth = int(sys.argv[4]) if len(sys.argv) > 4 else 1
    level = len(heading) - len(heading.lstrip("#"))
    inside = fence = False
    block: list[str] = []
    seen = 0
    for line in open(path, encoding="utf-8").read().splitlines():
        if fence:
            if line.strip() == "```":
                seen += 1
                if seen == nth:
                    print("\n".join(block))
                    return 0
                fence, block = False, []
            else:
                block.append(line)
            continue
        if line.startswith("#"):
            n = len(line) - len(line.lstrip("#"))
            if line.strip() == heading:
                inside = True
            elif inside and n <= level:
                break
            continue
        if inside and line.strip() == "```" + lang:
            fence = True
    print(f"readme_block: no ```{lang} block #{nth} under {heading!r} in {path}", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
