"""Searching a built index (``dense:index=FOLDER``): the query encoder rebuilt from the manifest, the
corpus and the model checked against it, and the search itself: exact over the shards in bounded
memory (default), FAISS (``faiss=flat`` or ``faiss=hnsw``, with its recall against exact search
reported), or groups of shards in parallel on Ray (``search=ray``).

A manifest is a claim, not an instruction: whatever would run code or load other weights comes only
from the user's own options. ``trust_remote_code`` is never taken from it (an index built with it
needs ``dense:index=F,trust_remote_code=true``), a model folder it names is never followed (the user
passes ``model=FOLDER``), a model id it names is looked up on this machine only (never downloaded),
and the weights' fingerprint, computed from their files, must equal the manifest's before any model
is loaded."""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import MappingProxyType
from typing import Any

import numpy as np

from harness.concepts.errors import DataError, HarnessError
from harness.retrievers.dense.build import make_executor
from harness.retrievers.dense.embedding_index import MANIFEST, EmbeddingIndex, ids_digest
from harness.retrievers.dense.index_files import need_type
from harness.retrievers.dense.model import DEFAULT_ALIASES
from harness.runtime.extras import require

log = logging.getLogger("harness.index")
#: options that may differ from the manifest: where the weights are and how queries are encoded,
#: not what an embedding is
RUNTIME_OPTIONS = ("model", "query_model", "device", "batch_size", "cache", "cache_dir", "local_files_only",
                   "show_progress", "context")
#: options only the user decides, whatever the manifest says
USER_OPTIONS = ("trust_remote_code",)
#: the encoder settings a manifest records (DenseEncoder.settings()), with their types
SETTINGS: Mapping[str, tuple[type, ...]] = MappingProxyType({
    "model": (str,), "preset": (str,), "query_prompt": (str,), "doc_prompt": (str,), "instruction": (str,),
    "normalize": (bool,), "max_length": (int,), "revision": (str,), "trust_remote_code": (bool,),
    "padding_side": (str,), "dtype": (str,), "pooling": (str,), "query_model": (str,)})
_TEXT_LIMIT = 100_000
FAISS_KINDS = ("flat", "hnsw")
HNSW_M, HNSW_EF_CONSTRUCTION, HNSW_EF_SEARCH = 32, 200, 128


def manifest_settings(manifest: Mapping[str, Any], path: Path) -> dict[str, Any]:
    """The manifest's encoder settings, checked: only the keys a build records, each of its type."""
    settings = manifest.get("encoder")
    if not isinstance(settings, dict):
        raise DataError("encoder must be an object of encoder settings", path)
    unknown = sorted(k for k in settings if k not in SETTINGS)
    if unknown:
        raise DataError(f"encoder holds settings an index does not record: {', '.join(map(repr, unknown[:5]))}", path)
    for key, kinds in SETTINGS.items():
        value = need_type(settings, key, path, kinds, optional=key not in ("model", "normalize"))
        if isinstance(value, str) and len(value) > _TEXT_LIMIT:
            raise DataError(f"encoder {key} is longer than {_TEXT_LIMIT} characters", path)
    if settings.get("max_length") is not None and not 0 < settings["max_length"] <= 10**7:
        raise DataError(f"encoder max_length must be from 1 to 10000000, not {settings['max_length']}", path)
    return dict(settings)


def _names_a_folder(name: str) -> bool:
    return (name.startswith((".", "/", "~", "\\")) or os.sep in name.replace("/", "") or name.count("/") > 1
            or Path(name).expanduser().exists())


def refuse_api_index(manifest: Mapping[str, Any], folder: Path) -> None:
    """An index built through an embeddings API (``model.api`` in its manifest, no weights to load) is
    searched by that component: one message naming the spec that searches it."""
    model = manifest.get("model")
    api = model.get("api") if isinstance(model, dict) else None
    if api is None:
        return

    def shown(value: Any) -> str:
        return str(value)[:200] if isinstance(value, str | int) and not isinstance(value, bool) else "M"

    if api != "openai-embeddings":
        raise HarnessError(f"dense:index: {folder} was built with the API component {shown(api)!r}, not with local "
                           f"weights; dense cannot encode its queries: search it with that component")
    name = shown(model.get("model"))
    extra = f",dimensions={shown(model['dimensions'])}" if model.get("dimensions") is not None else ""
    encoder = manifest.get("encoder")
    preset = encoder.get("preset") if isinstance(encoder, dict) else None
    extra += f",preset={shown(preset)}" if isinstance(preset, str) and preset != "none" else ""
    raise HarnessError(f"dense:index: this index was built with the API model {name!r} (openai-embeddings); search "
                       f"it with openai-embeddings:index={folder},model={name}{extra}[,base_url=...]")


def encoder_options(manifest: Mapping[str, Any], given: Mapping[str, Any], path: Path | str = MANIFEST
                    ) -> dict[str, Any]:
    """The encoder's arguments: the manifest's settings, then the runtime options given. A setting
    given that differs from the manifest's is an error (queries must be encoded as the documents were).
    ``trust_remote_code`` is the user's alone (default false); without ``model=``, the manifest's model
    must be an id found on this machine, never a folder (see the module docstring). An index built
    through an embeddings API is refused with the spec that searches it (:func:`refuse_api_index`)."""
    path = Path(path)
    refuse_api_index(manifest, path.parent)
    settings = manifest_settings(manifest, path)
    allowed = RUNTIME_OPTIONS + USER_OPTIONS
    clash = sorted(k for k, v in given.items() if k not in allowed and k in settings and v != settings[k])
    unknown = sorted(k for k in given if k not in allowed and k not in settings)
    if clash or unknown:
        what = [f"{k}={given[k]!r} (the index has {settings[k]!r})" for k in clash] + [f"{k}" for k in unknown]
        raise HarnessError(f"dense:index: {', '.join(what)}: an index fixes how texts are embedded; only "
                           f"{', '.join(o for o in allowed if o != 'context')} may be given with it")
    trust = given.get("trust_remote_code", False)
    if not isinstance(trust, bool):
        raise HarnessError(f"dense:index: trust_remote_code must be true or false, not {trust!r}")
    folder = path.parent
    if settings.get("trust_remote_code") and not trust:
        raise DataError(f"the index was built with trust_remote_code=true; an index never decides to run a model's "
                        f"own code: if you trust the code of model {settings['model']!r}, pass "
                        f"dense:index={folder},trust_remote_code=true", path)
    options = {**settings, **given, "trust_remote_code": trust}
    if given.get("model") is None:
        name = settings["model"]
        if name.strip().lower() not in DEFAULT_ALIASES and _names_a_folder(name):
            raise DataError(f"names the model folder {name!r}; an index never chooses a folder of weights to load: "
                            f"pass dense:index={folder},model=FOLDER (its weights are checked against the index's "
                            f"fingerprint)", path)
        options["local_files_only"] = True  # found on this machine; never downloaded because a file says so
    qname = settings.get("query_model")
    if qname is not None and given.get("query_model") is None and _names_a_folder(qname):
        raise DataError(f"names the query model folder {qname!r}; an index never chooses a folder of weights to "
                        f"load: pass dense:index={folder},query_model=FOLDER (checked against the index)", path)
    return options


class IndexSearch:
    """An opened index and the way to search it (see the module docstring)."""

    def __init__(self, folder: str, faiss: str | None = None, search: str | None = None, verify: bool = True
                 ) -> None:
        if not isinstance(verify, bool):
            raise HarnessError(f"dense:index: verify must be true or false, not {verify!r}")
        self.index = EmbeddingIndex(folder, verify=verify)
        if self.index.checksums is None:
            log.warning("dense:index: %s records no checksums (built before they were recorded); its shards are "
                        "checked for shape, dtype and ids only", self.index.folder)
        if faiss is not None and str(faiss) not in FAISS_KINDS:
            raise HarnessError(f"dense:index: faiss must be one of {', '.join(FAISS_KINDS)}, got {faiss!r}")
        if faiss is not None:
            require("faiss", "faiss", "FAISS search")
        if faiss is not None and search is not None:
            raise HarnessError("dense:index: give faiss= or search=, not both")
        self.faiss, self.search_on = faiss, search
        self._ray: Any = None
        if search is not None:
            self._ray = make_executor(search)
            if self._ray.name != "ray":
                self._ray = None  # search=local: the default
        self._faiss_index: Any = None
        self._stats: dict[str, Any] = {"index_documents": self.index.count, "index_shards": len(self.index.shards)}

    # -- checks --------------------------------------------------------------------------------
    def check_corpus(self, ids: Sequence[str]) -> None:
        m = self.index.manifest
        if len(ids) != self.index.count or ids_digest(ids) != m["ids_sha256"]:
            raise HarnessError(f"dense:index: {self.index.folder} was built from another corpus ({self.index.count} "
                               f"documents, ids sha256 {m['ids_sha256'][:12]}...; this dataset has {len(ids)}, "
                               f"{ids_digest(ids)[:12]}...); build an index of this dataset")

    def check_model(self, encoder: Any) -> None:
        """The weights are the index's: their fingerprint, computed from their files (nothing is
        loaded or imported), equals the manifest's; the query template too."""
        path = self.index.folder / MANIFEST
        claimed = self.index.manifest.get("model")
        want = claimed.get("fingerprint") if isinstance(claimed, dict) else None
        if not isinstance(want, str) or not want:
            raise DataError("records no weights fingerprint (model.fingerprint), so the weights to encode the "
                            "queries with cannot be checked; rebuild the index", path)
        if encoder.local_dir is None:
            raise HarnessError(f"dense:index: the weights of model {encoder.model_name!r} are not in a folder on this "
                               f"machine; they are checked against the index before anything is loaded: download "
                               f"them first (`hf download {encoder.model_name}`) or pass model=FOLDER")
        got = encoder.identity().get("fingerprint")
        if got != want:
            raise DataError(f"records weights fingerprint {want} (model {claimed.get('model')!r}); the weights at "
                            f"{encoder.local_dir} have fingerprint {got}: they are not the weights the index was "
                            f"built with", path)
        self._check_query_model(encoder, claimed, path)
        if encoder.query_template != self.index.manifest.get("query_template"):
            raise DataError(f"query template {self.index.manifest.get('query_template')!r} differs from the "
                            f"encoder's {encoder.query_template!r}", path)

    @staticmethod
    def _check_query_model(encoder: Any, claimed: Mapping[str, Any], path: Path) -> None:
        """A two-encoder index (DPR): the query encoder's weights are the ones it recorded."""
        want = claimed.get("query_fingerprint")
        sub = getattr(encoder, "query_encoder", None)
        if want is None and sub is None:
            return
        if sub is None or not isinstance(want, str):
            raise DataError("records a separate query encoder, or the encoder has one the index does not record: "
                            "they must agree", path)
        if sub.local_dir is None:
            raise HarnessError(f"dense:index: the weights of query model {sub.model_name!r} are not in a folder on "
                               f"this machine; download them first or pass query_model=FOLDER")
        got = sub.identity().get("fingerprint")
        if got != want:
            raise DataError(f"records query-encoder fingerprint {want}; the weights at {sub.local_dir} have "
                            f"fingerprint {got}: not the query encoder the index was built with", path)

    # -- search --------------------------------------------------------------------------------
    def search(self, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        k = min(int(k), self.index.count)
        t = time.perf_counter()
        if self.faiss is not None:
            idx, val = self._faiss_search(queries, k)
        elif self._ray is not None:
            idx, val = self._ray.search(self.index, queries, k)
        else:
            idx, val = self.index.search(queries, k)
        self._stats["search_seconds"] = round(self._stats.get("search_seconds", 0.0) + time.perf_counter() - t, 3)
        return idx, val

    def _faiss_search(self, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        import faiss

        if self._faiss_index is None:
            t = time.perf_counter()
            vectors = self.index.load()
            if self.faiss == "flat":
                fi = faiss.IndexFlatIP(vectors.shape[1])
            else:
                fi = faiss.IndexHNSWFlat(vectors.shape[1], HNSW_M, faiss.METRIC_INNER_PRODUCT)
                fi.hnsw.efConstruction = HNSW_EF_CONSTRUCTION
                fi.hnsw.efSearch = HNSW_EF_SEARCH
            fi.add(vectors)
            self._faiss_index = fi
            self._stats["faiss_build_seconds"] = round(time.perf_counter() - t, 3)
        val, idx = self._faiss_index.search(np.ascontiguousarray(queries, dtype=np.float32), k)
        exact_idx, _ = self.index.search(queries, k)  # the recall FAISS is reported with
        hits = sum(len(set(a[a >= 0]) & set(b)) for a, b in zip(idx, exact_idx, strict=True))
        self._stats[f"faiss_recall@{k}"] = round(hits / max(1, exact_idx.size), 6)
        if self._stats[f"faiss_recall@{k}"] < 1.0:
            log.warning("dense:index: FAISS %s found %.4f of the exact top-%d", self.faiss,
                        self._stats[f"faiss_recall@{k}"], k)
        return idx.astype(np.int64), val.astype(np.float32)

    def stats(self) -> dict[str, Any]:
        return dict(self._stats)

    def describe(self) -> dict[str, Any]:
        m = self.index.manifest
        return {"folder": str(self.index.folder), "documents": self.index.count, "shards": len(self.index.shards),
                "dtype": self.index.dtype, "dimension": self.index.dimension, "ids_sha256": m["ids_sha256"],
                "model_fingerprint": (m.get("model") or {}).get("fingerprint"), "source": m.get("source"),
                "search": "faiss-" + self.faiss if self.faiss else ("ray" if self._ray is not None else "exact"),
                **({"faiss": {"M": HNSW_M, "efConstruction": HNSW_EF_CONSTRUCTION, "efSearch": HNSW_EF_SEARCH}}
                   if self.faiss == "hnsw" else {})}
