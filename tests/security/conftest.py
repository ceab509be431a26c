from __future__ import annotations

import pytest

from tests.accounts import unprivileged_account


@pytest.fixture
def other_user():
    """A second, unprivileged account on this machine (made with useradd, removed afterwards)."""
    with unprivileged_account() as account:
        yield account
