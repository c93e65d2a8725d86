"""The helpers every generated test module holds: `harness new-plugin` writes the lines below the
marker in place of the test template's `from _helpers import ...` line."""

from importlib import metadata

import pytest

DIST = "harness-plugin-name"


# -- rendered from here --
def registered(hook):
    """What one of the plugin's hooks registers: ``{name: (factory, description)}``."""
    found = {}
    hook(register=lambda name, factory, description="": found.setdefault(name, (factory, description)))
    return found


def installed():
    """Whether this distribution is installed (``pip install -e .``), so its entry point is seen."""
    try:
        metadata.distribution(DIST)
    except metadata.PackageNotFoundError:
        return False
    return True


needs_install = pytest.mark.skipif(not installed(), reason="pip install -e . to test through the entry point")
