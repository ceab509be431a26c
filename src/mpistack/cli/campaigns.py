"""`mpistack campaigns`: the stored campaigns, each with its number of runs by status."""

from __future__ import annotations

from .common import DbOption, FormatOption, OutputFormat, reader
from .listing import ColumnsOption, Layout, WideOption, print_listing

CAMPAIGN_COLUMNS = ("campaign", "name", "created", "runs", "states")
# The states ("ok 540, failed 3, ...") fold; a campaign's name is its handle and stays whole.
CAMPAIGNS_LAYOUT = Layout(noun="campaign", priority=("campaign", "name", "runs", "states", "created"),
                          fold=frozenset({"states"}))


def campaign_lines(summaries: list[dict]) -> list[dict]:
    """The summaries as the table shows them: the creation date to the minute, the states as "ok 540, ..."."""
    return [{"campaign": summary["id"], "name": summary["name"],
             "created": summary["created_at"].strftime("%Y-%m-%d %H:%M") if summary["created_at"] else "",
             "runs": summary["runs"],
             "states": ", ".join(f"{status} {count}" for status, count in summary["statuses"].items())}
            for summary in summaries]


def campaigns(
    output_format: FormatOption = OutputFormat.table,
    columns: ColumnsOption = None,
    wide: WideOption = False,
    db: DbOption = None,
) -> None:
    """List the stored campaigns: id, name, when each was created, its runs and their states."""
    from ..store.query import campaign_summaries

    summaries = campaign_summaries(reader(db))
    print_listing(CAMPAIGNS_LAYOUT, output_format, summaries, campaign_lines(summaries), CAMPAIGN_COLUMNS,
                  columns_option=columns, wide=wide)
