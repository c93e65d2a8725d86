"""Plugin loading: entry points, fault tolerance, allow/block lists, name resolution."""

from __future__ import annotations

import sys

import pytest

from harness.concepts.errors import AmbiguousComponentError, HarnessError, PluginError, UnknownComponentError
from harness.plugins import host as plugins

from .plugin_fixtures import (
    BROKEN_IMPORT,
    BROKEN_REGISTER,
    EXITS_AT_IMPORT,
    EXITS_IN_HOOK,
    GOOD_PLUGIN,
    make_distribution,
)


@pytest.fixture
def installed(tmp_path, monkeypatch):
    """Three plugin distributions on sys.path: one good, one failing at import, one at register."""
    make_distribution(tmp_path, "harness-echo", "harness_echo_plugin", GOOD_PLUGIN, "1.2.3")
    make_distribution(tmp_path, "harness-broken", "harness_broken_plugin", BROKEN_IMPORT)
    make_distribution(tmp_path, "harness-badreg", "harness_badreg_plugin", BROKEN_REGISTER)
    monkeypatch.syspath_prepend(str(tmp_path))
    for var in ("HARNESS_STRICT_PLUGINS", "HARNESS_PLUGINS", "HARNESS_BLOCK_PLUGINS",
                "HARNESS_DISABLE_PLUGIN_AUTOLOAD"):
        monkeypatch.delenv(var, raising=False)
    yield tmp_path
    for m in ("harness_echo_plugin", "harness_broken_plugin", "harness_badreg_plugin"):
        sys.modules.pop(m, None)


def _by_dist(host):
    return {p["distribution"]: p for p in host.report()}


def test_builtins_register_through_hooks():
    host = plugins.PluginHost(load_entry_points=False)
    report = _by_dist(host)
    assert report["harness-ir"]["error"] is None
    comps = report["harness-ir"]["components"]
    assert {"bm25", "dense", "candidates"} <= set(comps["retriever"])
    assert {"trec-dl19", "trec-dl20", "noveleval", "scifact", "demo"} <= set(comps["task"])
    assert {"nDCG", "MRR", "Recall", "P", "MAP"} <= set(comps["metric"])
    assert all(c.description for kind in host.registry.components for c in host.registry.all(kind))


def test_broken_plugins_are_reported_and_the_rest_works(installed):
    host = plugins.PluginHost()
    report = _by_dist(host)
    assert "broken on purpose" in report["harness-broken"]["error"]
    assert report["harness-broken"]["error"].startswith("import")
    assert "missing config" in report["harness-badreg"]["error"]
    assert report["harness-echo"]["error"] is None
    assert report["harness-echo"]["version"] == "1.2.3"
    assert report["harness-echo"]["components"]["retriever"] == ["bm25", "echo"]
    # the good plugin's component works
    echo = host.registry.create("retriever", "plugin:echo")
    echo.index({"b": None, "a": None})
    assert echo.search({"q": "x"}, 1).doc_ids("q") == ["a"]


def test_strict_mode_raises(installed, monkeypatch):
    monkeypatch.setenv("HARNESS_STRICT_PLUGINS", "1")
    with pytest.raises(PluginError, match="broken on purpose"):
        plugins.PluginHost()


def test_block_and_allow_lists(installed, monkeypatch):
    monkeypatch.setenv("HARNESS_BLOCK_PLUGINS", "harness-broken,harness-badreg")
    ours = {"harness-ir", "harness-echo", "harness-broken", "harness-badreg"}
    assert set(_by_dist(plugins.PluginHost())) & ours == {"harness-ir", "harness-echo"}
    monkeypatch.delenv("HARNESS_BLOCK_PLUGINS")
    monkeypatch.setenv("HARNESS_PLUGINS", "harness-echo")
    assert set(_by_dist(plugins.PluginHost())) == {"harness-ir", "harness-echo"}
    monkeypatch.delenv("HARNESS_PLUGINS")
    monkeypatch.setenv("HARNESS_DISABLE_PLUGIN_AUTOLOAD", "1")
    assert set(_by_dist(plugins.PluginHost())) == {"harness-ir"}


def test_name_clash_is_an_error_listing_both(installed):
    reg = plugins.PluginHost().registry
    with pytest.raises(AmbiguousComponentError) as err:
        reg.create("retriever", "bm25")
    assert "harness-echo" in str(err.value) and "harness-ir" in str(err.value)
    assert type(reg.create("retriever", "builtin:bm25")).__name__ == "BM25Retriever"
    assert type(reg.create("retriever", "harness-ir:bm25")).__name__ == "BM25Retriever"
    assert type(reg.create("retriever", "plugin:bm25")).__name__ == "EchoRetriever"
    assert type(reg.create("retriever", "harness-echo:bm25")).__name__ == "EchoRetriever"


def test_unknown_name_lists_close_matches():
    reg = plugins.PluginHost(load_entry_points=False).registry
    with pytest.raises(UnknownComponentError, match="did you mean: bm25"):
        reg.create("retriever", "bm52")
    with pytest.raises(HarnessError, match="no retriever 'dense' from 'plugin'"):
        reg.create("retriever", "plugin:dense")


def test_spec_arguments_reach_the_factory(installed):
    reg = plugins.PluginHost().registry
    obj = reg.create("retriever", "plugin:echo:k_bonus=3")
    assert obj.k_bonus == 3
    with pytest.raises(HarnessError, match="bad arguments"):
        reg.create("retriever", "plugin:echo:nope=1")


def test_loading_plugins_imports_nothing_heavy():
    import subprocess

    code = (
        "import sys, harness.plugins.host as p; h = p.PluginHost(); "
        "bad = [m for m in ('torch', 'sentence_transformers', 'openai', 'anthropic', 'transformers', "
        "'ir_measures', 'pytrec_eval', 'rank_bm25', 'scipy') if m in sys.modules]; print(bad)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr


def test_a_misspelt_argument_gets_close_matches():
    reg = plugins.PluginHost(load_entry_points=False).registry
    with pytest.raises(HarnessError, match="unexpected keyword argument 'modle'; did you mean: model"):
        reg.create("retriever", "dense:modle=x")
    with pytest.raises(HarnessError, match="did you mean: k1"):
        reg.create("retriever", "bm25:k=3")
    with pytest.raises(HarnessError, match="it takes no arguments"):
        reg.create("retriever", "candidates:x=1")


def test_plugins_that_exit_are_reported_like_broken_ones(tmp_path, monkeypatch):
    """``sys.exit`` at import or ``SystemExit`` in a hook used to kill every command, list-plugins included."""
    import os
    import subprocess

    make_distribution(tmp_path, "harness-exits", "harness_exits_plugin", EXITS_AT_IMPORT)
    make_distribution(tmp_path, "harness-exits-hook", "harness_exits_hook_plugin", EXITS_IN_HOOK)
    make_distribution(tmp_path, "harness-echo", "harness_echo_plugin", GOOD_PLUGIN, "1.2.3")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delenv("HARNESS_STRICT_PLUGINS", raising=False)
    try:
        report = _by_dist(plugins.PluginHost())
        assert report["harness-exits"]["error"] == "import: SystemExit: this plugin exits at import"
        assert report["harness-exits-hook"]["error"] == "register (register_retrievers): SystemExit: 3"
        assert report["harness-echo"]["error"] is None
    finally:
        for m in ("harness_exits_plugin", "harness_exits_hook_plugin", "harness_echo_plugin"):
            sys.modules.pop(m, None)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])}
    for args in (["list-plugins"], ["eval", "--task", "demo", "-q", "--json", "--retriever", "builtin:bm25"]):
        out = subprocess.run([sys.executable, "-m", "harness.cli", *args], capture_output=True, text=True, env=env)
        assert out.returncode == 0, out.stderr
        assert "Traceback" not in out.stderr
    assert "SystemExit: this plugin exits at import" in subprocess.run(
        [sys.executable, "-m", "harness.cli", "list-plugins"], capture_output=True, text=True, env=env).stdout
