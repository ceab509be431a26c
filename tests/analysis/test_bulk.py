"""The garbage collector pause around work on a whole store."""

import gc

from mpistack.analysis.bulk import collector_paused


def test_the_collector_is_paused_inside_and_restored_after():
    assert gc.isenabled()
    with collector_paused():
        assert not gc.isenabled()
        with collector_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()  # an inner pause does not end the outer one
    assert gc.isenabled()

    @collector_paused()
    def failing():
        assert not gc.isenabled()
        raise ValueError("boom")

    try:
        failing()
    except ValueError:
        pass
    assert gc.isenabled()


def test_a_collector_disabled_before_stays_disabled():
    gc.disable()
    try:
        with collector_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    finally:
        gc.enable()
