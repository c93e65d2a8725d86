"""The built-in components, registered through the same hooks as any third-party plugin (as
simonw/llm's ``default_plugins``): one module per kind, each a plugin with ``@hookimpl`` functions.

:data:`BUILTIN_MODULES` is the one list of them; :class:`~harness.plugins.host.PluginHost` loads
each before the entry points and reports them together as the core distribution. Every factory is a
:func:`~harness.components.lazy.lazy` reference (``"module:attr"``): the module implementing a
component is imported only when the component is created, so loading plugins imports no model
library, and ``tests/test_lazy_targets.py`` resolves every target.
"""

from __future__ import annotations

BUILTIN_MODULES: tuple[str, ...] = (
    "harness.plugins.builtin.datasets",
    "harness.plugins.builtin.tasks",
    "harness.plugins.builtin.retrievers",
    "harness.plugins.builtin.rerankers",
    "harness.plugins.builtin.metrics",
    "harness.plugins.builtin.judges",
    "harness.plugins.builtin.llm_providers",
)
