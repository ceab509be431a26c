"""What goes wrong with a results store, as the callers of any store module catch it."""


class StoreError(Exception):
    """A store that cannot be opened or is newer than this mpistack."""


class StoreUnavailable(StoreError):
    """The store did not answer through every try of `retrying`; the message names it (password masked)."""
