"""Recipes: building blocks -> Containerfile / Apptainer definition, with pinned versions + sha256."""

from .blocks import Block, Step, blocks_for, fetch_lines, tristate
from .render import Recipe, RecipeError, UnpinnedRecipe, render, write_context

__all__ = ["Block", "Pinned", "Recipe", "RecipeError", "Step", "UnpinnedError", "UnpinnedRecipe", "blocks_for",
           "fetch_lines", "pinned", "render", "tristate", "write_context"]
