"""Specifications: stack models (what goes into an image) and their validation."""

from .stack import (Base, Benchmarks, Component, Gdrcopy, Gpu, Libcxi, Libfabric, Mpi, Pmix, Stack, StackError,
                    Tristate, Ucx, Xpmem, load_stack, load_stack_text)

__all__ = ["Base", "Benchmarks", "Component", "Gdrcopy", "Gpu", "Libcxi", "Libfabric", "Mpi", "Pmix", "Stack",
           "StackError", "Tristate", "Ucx", "Xpmem", "load_stack", "load_stack_text"]
