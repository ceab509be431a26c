"""Specifications: stack models (what goes into an image) and their validation."""

__all__ = ["Base", "Benchmarks", "Component", "Gdrcopy", "Gpu", "Libcxi", "Libfabric", "Mpi", "Pmix", "Stack",
           "StackError", "Tristate", "Ucx", "Xpmem", "load_stack", "load_stack_text"]


# Loaded on first use (PEP 562): the store reads spec.status, and a `mpistack results` needs no stack models.
def __getattr__(name: str):
    if name in __all__:
        from . import stack

        return getattr(stack, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
