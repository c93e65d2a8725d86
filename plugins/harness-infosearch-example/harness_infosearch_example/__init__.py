"""An example third-party InfoSearch dimension: Tone (formal / casual).

The package is an ordinary harness plugin (entry point in the ``harness`` group). Its only hook
registers the dimension with :func:`harness_infosearch.register_dimension`, which creates the task
``infosearch:tone`` and adds it to the ``infosearch`` suite. The data ships inside the package in the
hub layout, so ``path`` is absolute and nothing is downloaded (``repo=""``).
"""

from __future__ import annotations

from pathlib import Path

from harness import hookimpl

__version__ = "0.1.0"

DATA = Path(__file__).resolve().parent / "data" / "Tone-v1"


def dimension():
    from harness_infosearch import Dimension

    return Dimension(
        name="tone",
        hub_name="Tone-v1",
        description="InfoSearch Tone (formal / casual): example dimension from harness-infosearch-example",
        conditions=("Formal", "Casual"),
        path=str(DATA),
        repo="",
    )


@hookimpl
def register_tasks(register):
    from harness_infosearch import register_dimension

    register_dimension(register, dimension())
