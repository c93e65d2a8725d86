"""Registers a metric: `NAME@k` on the command line.

Plugin: harness-plugin-name
Example: --metric plugin-name@10

Imported by every `harness` command: keep it light (the component's module loads on use)."""

from harness import hookimpl, lazy

__version__ = "0.1.0"
NAME = "plugin-name"


@hookimpl
def register_metrics(register):
    register(NAME, lazy(f"{__name__}.metric:MeanGainMetric"),
             f"{NAME}@k: mean grade of the top k, as a share of the query's best grade")
