"""Every field a campaign file accepts is documented where users look for it."""

import re
from pathlib import Path

import pytest

from mpistack.spec import campaign

DOCS = Path(__file__).resolve().parents[2] / "docs"
MODELS = [campaign.Campaign, campaign.StackEntry, campaign.ApproachEntry, campaign.BenchmarkEntry,
          campaign.Placement, campaign.VariantEntry, campaign.AnalysisEntry, campaign.SlurmEntry,
          campaign.CaseFilter]


def _documented(key: str, text: str) -> bool:
    # a key in the TOML example (`key =`, `[key]`, `[[key]]`) or named in prose (`key`)
    return bool(re.search(rf"^\s*(\[\[?{re.escape(key)}\]\]?|{re.escape(key)}\s*=)", text, re.M)
                or f"`{key}`" in text)


@pytest.mark.parametrize("model", MODELS, ids=lambda model: model.__name__)
def test_every_campaign_field_is_in_the_docs(model):
    text = (DOCS / "campaigns.md").read_text() + (DOCS / "slurm.md").read_text()
    missing = [field.alias or name for name, field in model.model_fields.items()
               if not field.exclude and not _documented(field.alias or name, text)]
    assert not missing, f"{model.__name__}: undocumented campaign fields {missing}"


def _toml_blocks(text: str) -> list[str]:
    return re.findall(r"```toml\n(.*?)```", text, re.S)


def test_the_documented_campaign_file_is_a_valid_campaign():
    """The example users copy from must load: the whole file, then the same with the [slurm] table."""
    blocks = _toml_blocks((DOCS / "campaigns.md").read_text())
    example, slurm = blocks[0], next(block for block in blocks if block.lstrip().startswith("[slurm]"))
    loaded = campaign.load_campaign_text(example, "docs/campaigns.md")
    assert loaded.stacks and loaded.include and loaded.variants
    through_slurm = campaign.load_campaign_text(
        example.replace('launcher = "local"', 'launcher = "slurm"') + slurm, "docs/campaigns.md")
    assert through_slurm.slurm.partition == "debug"
