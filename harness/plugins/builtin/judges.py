"""Built-in judges."""

from __future__ import annotations

from harness.components.lazy import lazy
from harness.plugins.hookspecs import hookimpl


@hookimpl
def register_judges(register):
    register("umbrela", lazy("harness.judges.umbrela:UmbrelaJudge"),
             "UMBRELA (castorini/umbrela): an LLM grades each (query, passage) 0-3 with the Bing prompt; "
             "template=zeroshot-bing|fewshot-bing|zeroshot-basic|instruction")
