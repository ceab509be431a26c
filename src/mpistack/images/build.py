"""Building a stack's image: check the compatibility rules, make the base image if the stack says how,
render the recipe into a build context, build with the engine and keep a log."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from .. import compat
from ..cache import OWN_CACHE_FIX, cache_dir, check_own
from ..spec import catalogue
from ..engines import BuildResult, get_engine
from .baseimage import make_base_image
from ..spec.stack import Stack
from ..recipes.render import RecipeError, build_secrets, render, write_context


def build_stack(stack: str | Stack, engine_name: str = "podman", *, log: Path | None = None, check: bool = True,
                make_base: bool = True, quiet: bool = False, no_cache: bool = False,
                on_line: Callable[[str], None] | None = None) -> BuildResult:
    """Build a catalogue stack (by name or path) or a Stack; returns the engine's BuildResult.
    `on_line` receives the build's output lines (unless quiet)."""
    spec = stack if isinstance(stack, Stack) else catalogue.load(stack)
    if check:
        bad = compat.errors(compat.check(spec))
        if bad:
            raise RecipeError("\n".join(f"{finding.rule}: {finding.message}" for finding in bad))
    recipe = render(spec)  # first, so that an unpinned stack is refused before a base image is made
    engine = get_engine(engine_name)
    if spec.base.make and make_base and not engine.image_exists(spec.base.image):
        make_base_image(engine, spec.base.make)
    context = check_own(cache_dir() / "build" / spec.name, OWN_CACHE_FIX)  # its files become the image
    # pip's index credentials, if any: a build secret in a private file outside the context, removed afterwards
    with build_secrets(spec, context) as secrets:
        if secrets:
            recipe = render(spec, secrets=secrets)
        write_context(recipe, context)
        log = log or cache_dir() / "logs" / f"{spec.name}-{time.strftime('%Y%m%d-%H%M%S')}.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        return engine.build(context, context / "Containerfile", spec.image_ref(), log_path=log,
                            on_line=None if quiet else on_line, extra=["--no-cache"] if no_cache else [],
                            secrets=secrets)
