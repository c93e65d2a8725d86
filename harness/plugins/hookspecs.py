"""Plugin hooks. Every ``register_*`` hook receives a ``register(name, factory, description)``
callable; ``factory`` is called only when the component is used, so it must import its heavy
dependencies (torch, an SDK) inside its body, never at module level.

The seven component hooks (``register_datasets`` ... ``register_llm_providers``) are made from
:data:`harness.components.kinds.KIND_TABLE`, one per kind, with the kind's name and documentation;
``register_commands`` is written out here. Documented, with an example each, in
``docs/plugin_hooks.md``; a test fails when a hook lacks docs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

import pluggy

from harness.components.kinds import KIND_TABLE, Kind

PROJECT = "harness"
hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


class Register(Protocol):
    def __call__(self, name: str, factory: Callable[..., Any], description: str = "") -> None: ...


def _component_hookspec(kind: Kind) -> Callable[[Register], None]:
    """The ``register_*`` hook specification of ``kind``: pluggy checks each implementation's
    argument names against this signature, so the parameter is ``register``."""

    def hook(register: Register) -> None:
        pass

    hook.__name__ = hook.__qualname__ = kind.hook
    hook.__doc__ = kind.doc
    return hookspec(hook)


for _kind in KIND_TABLE:  # one module-level hook per kind: ``pm.add_hookspecs(hookspecs)`` finds them
    globals()[_kind.hook] = _component_hookspec(_kind)
del _kind


@hookspec
def register_commands(cli: Any) -> None:
    """Add click commands to the ``harness`` CLI group ``cli``."""


__all__ = ["PROJECT", "Register", "hookimpl", "hookspec", "register_commands", *(k.hook for k in KIND_TABLE)]
