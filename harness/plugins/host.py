"""Plugin loading: built-ins and entry points (group ``harness``), fault tolerant and lazy.

Environment:
- ``HARNESS_STRICT_PLUGINS=1``: a plugin that fails to import or register raises instead of
  being reported and skipped.
- ``HARNESS_DISABLE_PLUGIN_AUTOLOAD=1``: load no third-party plugin (built-ins still load).
- ``HARNESS_PLUGINS=a,b``: load only these third-party plugins (entry-point or distribution names).
- ``HARNESS_BLOCK_PLUGINS=a,b``: never load these.

A plugin that raises anything at import or in a hook (``SystemExit`` included; only
``KeyboardInterrupt`` passes through) is reported like any broken plugin.
"""

from __future__ import annotations

import os
import sys
import traceback
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import metadata
from typing import Any

import pluggy

from harness.components.kinds import HOOK_KIND
from harness.components.registry import Component, Registry
from harness.concepts.errors import PluginError
from harness.plugins import hookspecs
from harness.plugins.builtin import BUILTIN_MODULES
from harness.runtime.about import CORE_DIST, core_version

ENTRY_POINT_GROUP = "harness"


@dataclass
class PluginInfo:
    """One loaded (or failed) plugin: an entry point of a distribution, or a built-in module."""

    name: str
    distribution: str
    version: str
    error: str | None = None
    components: dict[str, list[str]] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "distribution": self.distribution,
            "version": self.version,
            "error": self.error,
            "components": {k: sorted(v) for k, v in self.components.items() if v},
        }


def _env_list(env: Mapping[str, str], name: str) -> set[str] | None:
    raw = env.get(name)
    if raw is None:
        return None
    return {p.strip() for p in raw.split(",") if p.strip()}


def _flag(env: Mapping[str, str], name: str) -> bool:
    return env.get(name, "").lower() in ("1", "true", "yes")


class PluginHost:
    """Owns the pluggy manager, the registry and the load report. Each host loads the plugins anew
    (about 30 ms); the ``HARNESS_*`` variables are read from ``environ`` (default: the process's)
    when it is made."""

    def __init__(self, load_entry_points: bool = True, environ: Mapping[str, str] | None = None):
        self.env = dict(os.environ if environ is None else environ)
        self.strict = _flag(self.env, "HARNESS_STRICT_PLUGINS")
        self.pm = pluggy.PluginManager(hookspecs.PROJECT)
        self.pm.add_hookspecs(hookspecs)
        self.registry = Registry()
        self.plugins: list[PluginInfo] = []
        self._info_by_plugin: dict[int, PluginInfo] = {}
        for module_name in BUILTIN_MODULES:
            self._load_module(module_name)
        if load_entry_points:
            self._load_entry_points()
        self._collect()

    # -- loading ---------------------------------------------------------------------------
    def _fail(self, info: PluginInfo, exc: BaseException, stage: str) -> None:
        info.error = f"{stage}: {type(exc).__name__}: {exc}"
        if self.strict:
            raise PluginError(
                f"plugin {info.name!r} ({info.distribution}) failed to {stage}: {exc}\n"
                + "".join(traceback.format_exception(exc))
            ) from exc

    def _load_module(self, module_name: str) -> None:
        """Built-in modules are reported together as the core distribution."""
        import importlib

        info = next((p for p in self.plugins if p.name == CORE_DIST), None)
        if info is None:
            info = PluginInfo(CORE_DIST, CORE_DIST, core_version())
            self.plugins.append(info)
        try:
            module = importlib.import_module(module_name)
            self.pm.register(module, name=module_name)
            self._info_by_plugin[id(module)] = info
        except KeyboardInterrupt:
            raise
        except BaseException as exc:  # a broken built-in is reported like any plugin
            self._fail(info, exc, "import")

    def _load_entry_points(self) -> None:
        if _flag(self.env, "HARNESS_DISABLE_PLUGIN_AUTOLOAD"):
            return
        allow = _env_list(self.env, "HARNESS_PLUGINS")
        block = _env_list(self.env, "HARNESS_BLOCK_PLUGINS") or set()
        for ep in sorted(metadata.entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name):
            dist = ep.dist.name if ep.dist else "?"
            version = ep.dist.version if ep.dist else "?"
            names = {ep.name, dist}
            if names & block or (allow is not None and not names & allow):
                continue
            info = PluginInfo(ep.name, dist, version)
            self.plugins.append(info)
            try:
                plugin = ep.load()
                if self.pm.is_registered(plugin):
                    continue
                self.pm.register(plugin, name=f"{dist}:{ep.name}")
                self._info_by_plugin[id(plugin)] = info
            except KeyboardInterrupt:
                raise
            except BaseException as exc:  # SystemExit at import too: reported, not fatal to the CLI
                self._fail(info, exc, "import")

    def register_plugin(self, plugin: object, name: str, distribution: str = "local") -> None:
        """Register an in-process plugin object (tests, notebooks) and collect its components."""
        info = PluginInfo(name, distribution, "0")
        self.plugins.append(info)
        self.pm.register(plugin, name=name)
        self._info_by_plugin[id(plugin)] = info
        self._collect(only=plugin)

    # -- registration ----------------------------------------------------------------------
    def _collect(self, only: object | None = None) -> None:
        """Call every registration hook, one plugin at a time, so one failure stays local."""
        for hook_name, kind in HOOK_KIND.items():
            caller = getattr(self.pm.hook, hook_name)
            for impl in caller.get_hookimpls():
                if only is not None and impl.plugin is not only:
                    continue
                info = self._info_by_plugin.get(id(impl.plugin))
                if info is None or info.error:
                    continue
                pending: list[Component] = []

                def register(name: str, factory: Any, description: str = "", *, _k=kind, _i=info,
                             _p=pending) -> None:
                    if not callable(factory):
                        raise TypeError(f"factory for {_k} {name!r} is not callable")
                    _p.append(Component(_k, name, factory, description.strip(), _i.distribution))

                try:
                    impl.function(register=register)
                except KeyboardInterrupt:
                    raise
                except BaseException as exc:
                    self._fail(info, exc, f"register ({hook_name})")
                    continue
                for comp in pending:
                    self.registry.add(comp)
                    info.components.setdefault(kind, []).append(comp.name)

    def commands(self, cli: Any) -> None:
        for impl in self.pm.hook.register_commands.get_hookimpls():
            info = self._info_by_plugin.get(id(impl.plugin))
            try:
                impl.function(cli=cli)
            except KeyboardInterrupt:
                raise
            except BaseException as exc:
                if info:
                    self._fail(info, exc, "register (register_commands)")

    def report(self) -> list[dict[str, Any]]:
        return [p.as_dict() for p in self.plugins]

    @property
    def failures(self) -> list[PluginInfo]:
        return [p for p in self.plugins if p.error]

    @classmethod
    def around(cls, registry: Registry) -> PluginHost:
        """A host for an existing registry (``evaluate(registry=...)``): its report lists the
        distributions that registered the registry's components."""
        host = cls.__new__(cls)
        host.env = dict(os.environ)
        host.strict = False
        host.pm = pluggy.PluginManager(hookspecs.PROJECT)
        host.pm.add_hookspecs(hookspecs)
        host.registry = registry
        host._info_by_plugin = {}
        sources = sorted({c.source for kind in registry.components for c in registry.all(kind)})
        host.plugins = [PluginInfo(s, s, core_version() if s == CORE_DIST else _dist_version(s)) for s in sources]
        return host

    def versions(self) -> dict[str, str]:
        """Versions of the core, each loaded plugin's distribution and key libraries, for results."""
        out = {CORE_DIST: core_version(), "python": sys.version.split()[0]}
        for p in self.plugins:
            if p.distribution != CORE_DIST:
                out[p.distribution] = p.version
        for lib in ("pluggy", "click", "ir-measures", "pytrec-eval-terrier", "rank-bm25",
                    "sentence-transformers", "torch", "transformers", "numpy", "openai", "anthropic"):
            try:
                out[lib] = metadata.version(lib)
            except metadata.PackageNotFoundError:
                pass
        return out


def _dist_version(name: str) -> str:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "?"


__all__ = ["PluginHost", "PluginInfo"]
