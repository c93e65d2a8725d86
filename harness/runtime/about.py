"""Facts about this package that every layer may need: its version, and the name of the distribution
that carries it (``harness-ir``: ``harness`` on PyPI is an unrelated project). The top package
``harness`` re-exports :data:`__version__` for users; nothing inside the package imports the top package."""

from __future__ import annotations

__version__ = "0.1.0"

#: the core's distribution name (its built-in components' ``source``)
CORE_DIST = "harness-ir"


def core_version() -> str:
    """The installed distribution's version, or :data:`__version__` when running from a source tree."""
    from importlib import metadata  # only when a version is reported

    try:
        return metadata.version(CORE_DIST)
    except metadata.PackageNotFoundError:
        return __version__
