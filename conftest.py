"""Repository-wide test hook: a test that fails only because an optional extra is not installed is
reported as skipped, with the line that installs it, so ``python -m pytest`` in a venv with the core
alone passes with skips. The failure must name the extra the way the code does (``... needs openai:
pip install 'harness-ir[openai]'``) or be a ``ModuleNotFoundError`` for one of an extra's modules, and
that module must really be missing. Under ``CI=true`` (everything installed) nothing is converted.

A missing *plugin* is not guessed from a failure: a test that needs one says so before it runs
(``harness.testing.requires_plugin``, a plugin folder's ``skip_without_plugin``; docs/architecture.md)."""

from __future__ import annotations

import os
import re

import pytest

from harness.runtime.extras import EXTRAS, available, install_line

_NEEDS = re.compile(r"pip install 'harness-ir\[(\w+)\]'")
_EXTRA_OF_MODULE = {module: extra for extra, parts in EXTRAS.items() for module, _ in parts}


def missing_extra(exc: BaseException | None) -> str | None:
    """Why ``exc`` (or an exception it was raised from) means a missing extra, or None."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, ModuleNotFoundError) and (exc.name or "").split(".")[0] in _EXTRA_OF_MODULE:
            top = exc.name.split(".")[0]
            if not available(top):
                return f"{top} is not installed ({install_line(_EXTRA_OF_MODULE[top])})"
        for extra in _NEEDS.findall(str(exc)):
            lacking = [m for m, _ in EXTRAS.get(extra, ()) if not available(m)]
            if lacking:
                return f"{', '.join(lacking)} not installed ({install_line(extra)})"
        exc = exc.__cause__ or exc.__context__
    return None


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> object:
    outcome = yield
    report = outcome.get_result()
    if report.failed and call.when in ("setup", "call") and os.environ.get("CI", "").lower() != "true":
        reason = missing_extra(call.excinfo.value if call.excinfo else None)
        if reason:
            report.outcome = "skipped"
            report.longrepr = (str(item.path), (item.location[1] or 0) + 1, f"Skipped: {reason}")
