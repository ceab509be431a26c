"""Files shipped inside the package: the stack catalogue, pinned sources, published references and the
mpistack-bench JSON schema. Found through importlib.resources, so an installed wheel finds them too."""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path


def data_path(*parts: str) -> Path:
    """A file or folder of this package's data. Wheels install unpacked, so this is a real path."""
    return Path(str(files(__name__).joinpath(*parts)))
