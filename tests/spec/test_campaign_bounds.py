"""Campaign files from someone else (a shared campaign, a colleague's): what they can make mpistack print or
spend is bounded, and each refusal names the file and the field."""

from __future__ import annotations

import subprocess
import sys

import pytest

from mpistack.spec.campaign import CampaignError, load_campaign, load_campaign_text

BODY = 'name = "c"\napproaches = ["container"]\nbenchmarks = ["latency"]\n[[stack]]\nname = "pip-mpich"\n'


def test_a_new_line_in_a_variants_env_value_is_refused():
    """`mpistack show` prints a variant's env one variable a line: a new line would forge another line."""
    with pytest.raises(CampaignError) as error:
        load_campaign_text(BODY + '[[variant]]\nname = "v"\nenv = { UCX_TLS = "tcp\\nFORGED = 1" }\n', "c.toml")
    assert "c.toml: variant.0.env.UCX_TLS: expected one line of printable text: control character '\\n'" \
        in str(error.value)


def test_a_huge_benchmark_options_list_is_one_short_error_in_bounded_memory(tmp_path):
    options = ", ".join(['"-x"'] * 300)
    with pytest.raises(CampaignError) as error:
        load_campaign_text(f"benchmark_options = [{options}]\n" + BODY, "c.toml")
    assert str(error.value) == "c.toml: benchmark_options: List should have at most 256 items after validation, not 300"
    # a 100 MB list: refused by its size before it is parsed, in one line, without gigabytes of memory
    huge = tmp_path / "huge.toml"
    huge.write_text("benchmark_options = [" + '"-x", ' * 17_000_000 + "]\n" + BODY)
    script = ("import resource\nfrom mpistack.spec.campaign import CampaignError, load_campaign\n"
              "before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
              f"try:\n    load_campaign({str(huge)!r})\nexcept CampaignError as error:\n    print(error)\n"
              "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before)")
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=120)
    message, grown_kib = result.stdout.strip().splitlines()
    assert message == f"{huge}: larger than 1 MiB: not a stack or campaign file"
    assert int(grown_kib) < 16 * 1024  # it read 1 MiB of the file, not 100 MB (2.5 GB parsed)


def test_many_problems_are_listed_up_to_a_bound():
    tables = "".join(f'[[variant]]\nname = "v{number}"\nenv = {{ "1BAD" = "x" }}\n' for number in range(40))
    with pytest.raises(CampaignError) as error:
        load_campaign_text(BODY + tables, "c.toml")
    lines = str(error.value).splitlines()
    assert len(lines) == 21 and lines[-1] == "c.toml: ... and 20 more problems"


def test_a_file_that_is_not_utf8_is_one_line(tmp_path):
    path = tmp_path / "c.toml"
    path.write_bytes(b'name = "\xff"\n')
    with pytest.raises(CampaignError, match=r"c.toml: not UTF-8 text \(byte 8\)"):
        load_campaign(path)
