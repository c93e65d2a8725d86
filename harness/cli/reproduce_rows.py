"""The table of published figures behind ``harness reproduce``: reading it (the packaged
``harness/data/reproductions.toml`` or a file given with ``--rows``, checked field by field with bounded
work: a file the harness did not write is untrusted), what a row needs that this machine lacks, and the
generated page ``docs/reproductions.md``."""

from __future__ import annotations

import math
import os
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.concepts.errors import HarnessError

if TYPE_CHECKING:  # pragma: no cover
    from harness.context import Context

PACKAGED = Path(__file__).resolve().parents[1] / "data" / "reproductions.toml"
MAX_BYTES = 1024 * 1024
MAX_ROWS = 1000
MAX_TEXT = 2000
_ID = re.compile(r"^[a-z0-9][a-z0-9._-]{0,63}$")
_ENV = re.compile(r"^[A-Z_][A-Z0-9_]{0,63}$")
_HUB_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,95}/[A-Za-z0-9][A-Za-z0-9_.\-]{0,95}$")
_PATH_PART = re.compile(r"^[A-Za-z0-9_.=+\- ]{1,255}$")
_ROW_KEYS = frozenset({"id", "task", "dataset", "retriever", "rerankers", "llm", "metrics", "depth", "metric",
                       "published", "scale", "tolerance", "source", "note", "blocked", "needs"})
_NEEDS_KEYS = frozenset({"data", "extras", "models", "gpu", "env"})


@dataclass(frozen=True)
class Needs:
    """What a row needs besides the harness: ``data`` (paths in the data folder), ``extras`` (the core's
    optional parts), ``models`` (Hub ids in the local cache), ``gpu``, ``env`` (API keys: the network)."""

    data: tuple[str, ...] = ()
    extras: tuple[str, ...] = ()
    models: tuple[str, ...] = ()
    gpu: bool = False
    env: tuple[str, ...] = ()


@dataclass(frozen=True)
class Row:
    """One published figure and the system that should reproduce it (see the packaged file's header)."""

    id: str
    metric: str
    published: float
    tolerance: float
    source: str
    task: str | None = None
    dataset: str | None = None
    retriever: str | None = None
    rerankers: tuple[str, ...] = ()
    llm: str | None = None
    metrics: tuple[str, ...] = ()
    depth: int | None = None
    scale: float = 1.0
    note: str = ""
    blocked: str = ""
    needs: Needs = field(default_factory=Needs)

    @property
    def where(self) -> str:
        """The task, or ``--dataset SPEC``."""
        return self.task or f"--dataset {self.dataset}"

    @property
    def system(self) -> str:
        """``retriever -> reranker -> ...`` with the LLM, as ``harness eval`` takes them."""
        if self.blocked:
            return "none in the harness"
        stages = [self.retriever or "the task's first stage", *self.rerankers]
        return " -> ".join(stages) + (f" (--llm {self.llm})" if self.llm else "")

    def command(self) -> str:
        """The ``harness eval`` line that computes the row's figure."""
        parts = ["harness eval", f"--task {self.task}" if self.task else f"--dataset '{self.dataset}'"]
        parts += [f"--retriever '{self.retriever}'"] if self.retriever else []
        parts += [f"--reranker '{r}'" for r in self.rerankers]
        parts += [f"--llm {self.llm}"] if self.llm else []
        parts += [f"--metric '{m}'" for m in self.metrics]
        parts += [f"--depth {self.depth}"] if self.depth else []
        return " ".join(parts)


# -- reading --------------------------------------------------------------------------------------------------
def load_rows(path: str | os.PathLike[str] | None = None) -> list[Row]:
    """The rows of ``path`` (default: the packaged table); a :class:`HarnessError` naming the file and
    the row for anything malformed."""
    file = Path(path).expanduser() if path is not None else PACKAGED
    where = str(file)
    try:
        if not file.is_file():
            raise HarnessError(f"{where}: not a file (give a TOML table of rows with --rows FILE)")
        if file.stat().st_size > MAX_BYTES:
            raise HarnessError(f"{where}: larger than {MAX_BYTES:,} bytes; a table of rows is far smaller")
        with open(file, "rb") as fh:
            raw = fh.read(MAX_BYTES + 1)
    except OSError as exc:
        raise HarnessError(f"{where}: {exc.strerror or exc}") from None
    try:
        doc = tomllib.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise HarnessError(f"{where}: not a valid TOML file: {exc}") from None
    return _rows(doc, where)


def _rows(doc: dict[str, Any], where: str) -> list[Row]:
    unknown = sorted(set(doc) - {"format", "rows"})
    if unknown:
        raise HarnessError(f"{where}: unknown top-level key {unknown[0]!r} (expected format = 1 and [[rows]])")
    if doc.get("format", 1) != 1:
        raise HarnessError(f"{where}: format must be 1, not {doc.get('format')!r}")
    raw = doc.get("rows")
    if not isinstance(raw, list) or not raw or not all(isinstance(r, dict) for r in raw):
        raise HarnessError(f"{where}: no rows: give one [[rows]] table per published figure")
    if len(raw) > MAX_ROWS:
        raise HarnessError(f"{where}: {len(raw):,} rows; at most {MAX_ROWS:,}")
    rows: list[Row] = []
    seen: set[str] = set()
    for i, entry in enumerate(raw, 1):
        row = _row(entry, f"{where}, row {i}")
        if row.id in seen:
            raise HarnessError(f"{where}, row {i}: the id {row.id!r} is used twice")
        seen.add(row.id)
        rows.append(row)
    return rows


def _row(entry: dict[str, Any], where: str) -> Row:
    unknown = sorted(set(entry) - _ROW_KEYS)
    if unknown:
        raise HarnessError(f"{where}: unknown key {unknown[0]!r}; keys: {', '.join(sorted(_ROW_KEYS))}")
    rid = _text(entry, "id", where, required=True)
    if not _ID.match(rid):
        raise HarnessError(f"{where}: id {rid[:80]!r} must be lowercase letters, digits, '.', '_' or '-' "
                           "(at most 64)")
    where = f"{where} ({rid})"
    if bool(entry.get("task")) == bool(entry.get("dataset")):
        raise HarnessError(f"{where}: give exactly one of task and dataset")
    published = _number(entry, "published", where, required=True)
    tolerance = _number(entry, "tolerance", where, required=True, low=0.0)
    scale = _number(entry, "scale", where, low=0.0) if "scale" in entry else 1.0
    if scale <= 0:
        raise HarnessError(f"{where}: scale must be above 0")
    depth = entry.get("depth")
    if depth is not None and (type(depth) is not int or not 1 <= depth <= 1_000_000):
        raise HarnessError(f"{where}: depth must be a whole number from 1 to 1,000,000, not {depth!r}")
    return Row(id=rid, metric=_text(entry, "metric", where, required=True), published=published,
               tolerance=tolerance, source=_text(entry, "source", where, required=True),
               task=_text(entry, "task", where) or None, dataset=_text(entry, "dataset", where) or None,
               retriever=_text(entry, "retriever", where) or None, rerankers=_texts(entry, "rerankers", where),
               llm=_text(entry, "llm", where) or None, metrics=_texts(entry, "metrics", where), depth=depth,
               scale=scale, note=_text(entry, "note", where), blocked=_text(entry, "blocked", where),
               needs=_needs(entry.get("needs", {}), where))


def _needs(raw: Any, where: str) -> Needs:
    from harness.runtime.extras import EXTRAS

    if not isinstance(raw, dict):
        raise HarnessError(f"{where}: needs must be a table (needs.data = [...], needs.gpu = true, ...)")
    unknown = sorted(set(raw) - _NEEDS_KEYS)
    if unknown:
        raise HarnessError(f"{where}: unknown key needs.{unknown[0]}; keys: {', '.join(sorted(_NEEDS_KEYS))}")
    gpu = raw.get("gpu", False)
    if not isinstance(gpu, bool):
        raise HarnessError(f"{where}: needs.gpu must be true or false")
    data = tuple(_data_path(p, where) for p in _texts(raw, "data", where, "needs."))
    extras = _texts(raw, "extras", where, "needs.")
    models = _texts(raw, "models", where, "needs.")
    env = _texts(raw, "env", where, "needs.")
    for name, values, ok in (("extras", extras, lambda v: v in EXTRAS), ("models", models, _HUB_ID.match),
                             ("env", env, _ENV.match)):
        bad = [v for v in values if not ok(v)]
        if bad:
            raise HarnessError(f"{where}: needs.{name}: {bad[0][:80]!r} is not "
                               + {"extras": f"an extra ({', '.join(EXTRAS)})", "models": "a Hub id OWNER/NAME",
                                  "env": "an environment variable name"}[name])
    return Needs(data=data, extras=extras, models=models, gpu=gpu, env=env)


def _data_path(path: str, where: str) -> str:
    """A path inside the data folder: relative, '/'-separated, no '..' and no odd characters."""
    parts = path.split("/")
    if path.startswith("/") or "\\" in path or not all(_PATH_PART.match(p) and p not in (".", "..") for p in parts):
        raise HarnessError(f"{where}: needs.data: {path[:120]!r} is not a path inside the data folder "
                           "(relative, '/'-separated, no '..')")
    return path


def _text(entry: dict[str, Any], key: str, where: str, required: bool = False) -> str:
    value = entry.get(key, "")
    if not isinstance(value, str) or len(value) > MAX_TEXT or (required and not value.strip()):
        raise HarnessError(f"{where}: {key} must be " + ("a non-empty " if required else "a ")
                           + f"string of at most {MAX_TEXT} characters")
    return value


def _texts(entry: dict[str, Any], key: str, where: str, prefix: str = "") -> tuple[str, ...]:
    value = entry.get(key, [])
    if (not isinstance(value, list) or len(value) > 100
            or not all(isinstance(v, str) and v and len(v) <= MAX_TEXT for v in value)):
        raise HarnessError(f"{where}: {prefix}{key} must be a list of at most 100 non-empty strings")
    return tuple(value)


def _number(entry: dict[str, Any], key: str, where: str, required: bool = False, low: float | None = None) -> float:
    value = entry.get(key)
    if value is None and not required:
        return 0.0
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise HarnessError(f"{where}: {key} must be a finite number, not {value!r}")
    if low is not None and value < low:
        raise HarnessError(f"{where}: {key} must be >= {low}, not {value!r}")
    return float(value)


def select(rows: list[Row], ids: tuple[str, ...]) -> list[Row]:
    """The rows named by ``ids`` (all when none), in the table's order; an unknown id is an error."""
    if not ids:
        return rows
    known = {r.id for r in rows}
    unknown = [i for i in ids if i not in known]
    if unknown:
        import difflib

        close = difflib.get_close_matches(unknown[0], sorted(known), n=3, cutoff=0.5)
        hint = f"; did you mean: {', '.join(close)}?" if close else f"; rows: {', '.join(r.id for r in rows)}"
        raise HarnessError(f"no row {unknown[0][:80]!r} in the table{hint}")
    wanted = set(ids)
    return [r for r in rows if r.id in wanted]


# -- what this machine lacks ---------------------------------------------------------------------------------
class Machine:
    """What this machine has, probed on first use (the GPU through torch, imported only when a row asks)."""

    def __init__(self, context: Context, environ: dict[str, str] | None = None):
        self.context = context
        self.environ = dict(os.environ if environ is None else environ)
        self._gpu: bool | None = None

    @property
    def gpu(self) -> bool:
        if self._gpu is None:
            from harness.runtime.extras import available

            self._gpu = False
            if available("torch"):
                import torch

                self._gpu = bool(torch.cuda.is_available())
        return self._gpu

    def missing_components(self, row: Row) -> list[str]:
        """The task, dataset, retriever and rerankers no installed plugin registers."""
        wanted = [("task", row.task), ("dataset", row.dataset), ("retriever", row.retriever),
                  *(("reranker", r) for r in row.rerankers)]
        out = []
        for kind, spec in wanted:
            if not spec:
                continue
            try:
                self.context.registry.resolve(kind, spec)
            except HarnessError as exc:
                name = spec.split(":", 1)[0] if kind != "task" else spec
                out.append(f"{kind} {name!r} is not registered: its plugin is not installed"
                           if str(exc).startswith("unknown ") else str(exc))
        return out

    def missing_data(self, row: Row) -> list[str]:
        folder = self.context.data
        absent = [p for p in row.needs.data if not _exists(folder.path / p)]
        if not absent:
            return []
        fetch = (f"`harness data download {row.task}`" if row.task
                 else f"one `harness eval --dataset '{row.dataset}'` with the network")
        return [f"data not downloaded: {', '.join(absent)} (fetch with {fetch})"]

    def missing_software(self, row: Row) -> list[str]:
        from harness.runtime.extras import EXTRAS, available, install_line

        out = [f"needs {dist}: {install_line(extra)}" for extra in row.needs.extras
               for module, dist in EXTRAS[extra] if not available(module)]
        out += [f"weights of {m} not on this machine (not in the Hugging Face cache; fetch with `hf download {m}`)"
                for m in row.needs.models if not _model_cached(m)]
        if row.needs.gpu and not self.gpu:
            out.append("needs a GPU (torch sees no CUDA device)")
        return out

    def why_not(self, row: Row, offline_only: bool) -> list[str]:
        """Why ``row`` cannot run here (empty: it can)."""
        if row.blocked:
            return [f"no harness system computes it: {row.blocked}"]
        out = []
        if row.needs.env and offline_only:
            out.append(f"needs the network and an API key (${', $'.join(row.needs.env)}); --offline-only leaves "
                       "it out")
        out += self.missing_components(row) + self.missing_software(row) + self.missing_data(row)
        if not offline_only:
            out += [f"needs ${v} (an API key) in the environment" for v in row.needs.env if not self.environ.get(v)]
        return out


def _exists(path: Path) -> bool:
    try:
        return path.exists()
    except OSError:
        return False


def _model_cached(repo: str) -> bool:
    """Whether the Hub model ``repo`` is in the local Hugging Face cache (no network)."""
    try:
        from huggingface_hub import snapshot_download
    except ImportError:
        return False
    try:
        snapshot_download(repo, local_files_only=True)
    except Exception:  # not cached: LocalEntryNotFoundError; an unusable cache folder: OSError
        return False
    return True


# -- the generated page ---------------------------------------------------------------------------------------
INTRO = """\
# Published figures the harness reproduces

<!-- generated from harness/data/reproductions.toml by `harness reproduce --markdown > docs/reproductions.md`;
tests/test_reproduce.py fails when the two differ -->

Researchers trust a tool by the published figures it reproduces. This is that table: one row per figure, the
system that should give it (as `harness eval` takes it), the source it was read from (a paper table, or a
repository file at a commit), the tolerance it must meet and what it needs. The rows live in
`harness/data/reproductions.toml`, shipped with the package.

```bash
harness reproduce --offline-only      # every row this machine can run without the network (CI runs this)
harness reproduce                     # also the rows that call an API where their keys are set (billed)
harness reproduce dl19-bm25 birco-wtb-e5-ndcg   # some rows
harness reproduce --list              # what can run here and why the rest cannot, without running anything
harness reproduce --rows my-rows.toml # another table in the same format
```

- **What runs.** A row runs when everything it needs is here: its task's plugin, the extras, the data files in
  the data folder (`--data-dir`, `$HARNESS_DATA`), the model weights in the Hugging Face cache, a GPU, its API
  key. Nothing is downloaded: automatic download is off for these runs. Every other row is listed with why
  (data not downloaded, weights not on this machine, no GPU, no key, `--offline-only`, or no harness system
  computes the figure). Each row runs through `harness.evaluate`, as `harness eval` would (the embedding and
  LLM caches apply).
- **The verdict.** measured × scale − published is printed as the difference; a row passes when its absolute
  value is at most the tolerance. Exit status: 0 when every row that ran passed; 1 when a row is outside
  its tolerance or failed (its error is printed and the other rows still run); 3 when a row's LLM requests got
  no usable reply (INCOMPLETE) and none failed; 2 for a bad table, an unknown row or another input error (one
  message). `--json` prints one object per row.
- **Tolerances.** A figure the harness reproduces to the printed digits gets half a unit of the last digit
  (a dense model's figure 0.0001: another CPU's float arithmetic may swap near-tied documents). A figure
  computed another way gets a band that covers the measured difference (SciFact BM25: pyserini's Lucene
  BM25 0.6789, the harness's rank_bm25 BM25Okapi 0.6827). A row nobody has run yet says so in its note: its
  band is a first guess, to be narrowed by the first run.
- **CI** runs `harness reproduce --offline-only` (`tests/test_reproduce.py`, marked slow: it encodes SciFact
  with all-MiniLM-L6-v2 on the CPU; the other offline rows take seconds).
"""


def _needs_cell(row: Row) -> str:
    n = row.needs
    parts = (["data"] if n.data else []) + [f"`[{e}]`" for e in n.extras] + (["GPU"] if n.gpu else [])
    parts += [f"`{m}`" for m in n.models] + [f"`${v}`" for v in n.env]
    return ", ".join(parts) or "-"


def plain(x: float) -> str:
    """A number as written, never in exponent form (``0.00005``, ``-0.003451558``, ``65.8``)."""
    from decimal import Decimal

    return format(Decimal(repr(x)), "f")


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _system_cell(row: Row) -> str:
    if row.blocked:
        return row.system
    stages = [f"`{row.retriever}`" if row.retriever else "the task's first stage", *(f"`{r}`" for r in row.rerankers)]
    return " → ".join(stages) + (f" (`--llm {row.llm}`)" if row.llm else "")


def render_markdown(rows: list[Row]) -> str:
    """``docs/reproductions.md``: the intro, the table, then each row's source, note and data files."""
    lines = [INTRO, "| row | task | system | metric | published | tolerance | needs |",
             "|---|---|---|---|---|---|---|"]
    for r in rows:
        published = plain(r.published) + (f" (×{r.scale:g})" if r.scale != 1 else "")
        lines.append(f"| `{r.id}` | `{_cell(r.where)}` | {_cell(_system_cell(r))} | `{_cell(r.metric)}` | {published} "
                     f"| {plain(r.tolerance)} | {_cell(_needs_cell(r))} |")
    lines += ["", "## Sources and notes", ""]
    for r in rows:
        lines.append(f"- **`{r.id}`**: {r.source}.")
        lines += [f"  {r.note}"] if r.note else []
        lines += [f"  - not computed by the harness: {r.blocked}"] if r.blocked else [f"  - run: `{r.command()}`"]
        lines += [f"  - data: {', '.join(f'`{p}`' for p in r.needs.data)}"] if r.needs.data else []
    return "\n".join(lines) + "\n"
