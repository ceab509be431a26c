"""The complete stack file in docs/stacks.md loads, renders, and names every key of the main tables."""

import re
from pathlib import Path

from mpistack.recipes.render import render
from mpistack.spec import stack as stack_spec

DOCS = Path(__file__).resolve().parents[2] / "docs" / "stacks.md"


def _example() -> str:
    return re.search(r"## A complete stack file.*?```toml\n(.*?)```", DOCS.read_text(), re.S).group(1)


def test_the_documented_stack_file_loads_and_renders():
    loaded = stack_spec.load_stack_text(_example(), "docs/stacks.md")
    text = render(loaded).containerfile
    assert "FROM localhost/debian:bookworm" in text and "sha256sum" in text


def test_the_documented_stack_file_shows_every_key():
    example = _example()
    # a key set in the example, or a table named in its comments
    keys = set(re.findall(r"^([a-z_]+) =", example, re.M)) | set(re.findall(r"\[([a-z_]+)\]", example))
    for model in (stack_spec.Stack, stack_spec.Base, stack_spec.Mpi):
        missing = [name for name, field in model.model_fields.items()
                   if not field.exclude and name not in keys and name not in ("rocm", "cuda", "ucx", "pmix",
                                                                               "launcher", "prefix")]
        assert not missing, f"{model.__name__}: keys missing from the example in docs/stacks.md: {missing}"
