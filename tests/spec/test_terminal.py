"""Prose for the terminal: folded within its width, continued lines indented, long words (URLs) whole."""

from __future__ import annotations

from mpistack.spec.terminal import hanging


def test_hanging_folds_prose_and_keeps_long_words_whole():
    url = "https://docs.cscs.ch/software/container-engine/guidelines-images/image-mpich/"
    text = hanging(f"warning: a reason long enough to be folded over more than one line of the terminal, see {url}",
                   60)
    lines = text.splitlines()
    assert len(lines) >= 2 and all(line.startswith("    ") for line in lines[1:])
    assert url in lines[-1].strip().split() and all(len(line) <= 60 or url in line for line in lines)
