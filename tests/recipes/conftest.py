from __future__ import annotations

import pytest

from mpistack import catalogue
from mpistack.spec import load_stack_text


@pytest.fixture
def stack_from():
    """Build a Stack from TOML text (with a readable file name for error messages)."""
    def make(text: str, where: str = "test.toml"):
        return load_stack_text(text, where)
    return make


@pytest.fixture
def seed_stack():
    return catalogue.load
