#!/usr/bin/env python3
"""Re-creates the data files under src/mpistack/data/references/ from the source documents in ../shared/seeds/.

The data files are verbatim slices of the published documents (OSU output with its prompts and loader
noise, or Markdown tables), so that what mpistack ingests is exactly what was published. Run it from the
repository root: python3 scripts/extract-references.py [SEEDS_DIR]
"""

import re
import sys
from pathlib import Path

SEEDS = Path(sys.argv[1] if len(sys.argv) > 1 else "../shared/seeds")
OUT = Path("src/mpistack/data/references")

# (reference directory, data file, seed file, first line, last line, keep-section predicate)
SLICES = [
    ("alps-gh200-mpich-ce", "cxi-hook-on.txt", "000_c9bb2189e12c7a7a.txt", 86, 409, None),
    ("alps-gh200-mpich-ce", "cxi-hook-off.txt", "000_c9bb2189e12c7a7a.txt", 410, 10**6, None),
    ("cscs-mpich-guide", "expected-osu-bw.txt", "001_e96b3787c086f081.txt", 147, 10**6, None),
    ("lumi-container-approaches", "basic-container.md", "002_b77bdc9bb1d28229.txt", 272, 345, None),
    ("lumi-container-approaches", "native.md", "002_b77bdc9bb1d28229.txt", 346, 413, None),
    ("lumi-container-approaches", "lumi-bind.md", "002_b77bdc9bb1d28229.txt", 414, 485, None),
    ("lumi-container-approaches", "libfabric-hybrid.md", "002_b77bdc9bb1d28229.txt", 486, 556, None),
    ("lumi-container-approaches", "opensource.md", "002_b77bdc9bb1d28229.txt", 557, 635, None),
    ("alps-gh200-openmpi-ce", "cxi-hook-on.txt", "004_e5439d3c6caa6c51.txt", 140, 10**6,
     lambda section: "(*)" not in section),
    ("alps-gh200-openmpi-ce", "cxi-hook-off.txt", "004_e5439d3c6caa6c51.txt", 140, 10**6,
     lambda section: "(*)" in section),
]


def sections(lines):
    """Split lines into ('=== "title"' line, body) sections; text before the first is its own."""
    current_title, current = "", []
    for line in lines:
        if re.match(r'^\s*=== "', line):
            yield current_title, current
            current_title, current = line, [line]
        else:
            current.append(line)
    yield current_title, current


def main():
    for directory, name, seed, first, last, keep in SLICES:
        lines = (SEEDS / seed).read_text().splitlines(keepends=True)[first - 1:last]
        if keep is not None:
            lines = [line for title, body in sections(lines) if title and keep(title) for line in body]
        target = OUT / directory / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text("".join(lines))
        print(f"{target}: {len(lines)} lines from {seed}")


if __name__ == "__main__":
    main()
