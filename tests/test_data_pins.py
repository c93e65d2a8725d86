"""Every pinned URL names its commit by the full 40-hex id (the Hub resolves nothing shorter), no
branch is used as a pin, and every file outside the Hub has a sha256: checked on the source of
tasks/ and plugins/ (static) and on every registered task's files (as built, templates filled in)."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.data.hub import parse_hub_url
from harness.data.pins import pin_problem, pin_problems, url_source
from harness.testing import requires_plugin

REPO = Path(__file__).resolve().parents[1]
#: the plugins of this checkout (the README installs each; an example's tests build it): their tasks' files
PLUGINS = tuple(sorted(p.parent.name for p in (REPO / "plugins").glob("*/pyproject.toml")
                       if not p.parent.name.endswith("-example")))


def sources() -> list[Path]:
    """tasks/*.toml and the plugins' .py/.toml files, their tests and build outputs left out."""
    files = sorted((REPO / "tasks").glob("*.toml"))
    for p in sorted((REPO / "plugins").rglob("*")):
        rel = p.relative_to(REPO / "plugins").parts
        if p.suffix in (".py", ".toml") and p.is_file() and "tests" not in rel and "build" not in rel:
            files.append(p)
    return files


def test_no_abbreviated_or_floating_pin_in_tasks_or_plugins() -> None:
    files = sources()
    assert len(files) > 20 and any(f.suffix == ".toml" for f in files)
    problems = [p for f in files for p in pin_problems(f.read_text(encoding="utf-8"), str(f.relative_to(REPO)))]
    assert not problems, "\n".join(problems)


FULL = "3506f981b25db886390e23025be96052cc0fae57"


@pytest.mark.parametrize("text,bad", [
    (f'url = "https://huggingface.co/datasets/castorini/rank_llm_data/resolve/{FULL}/a/b.json"', False),
    ('url = "https://huggingface.co/datasets/castorini/rank_llm_data/resolve/3506f981/a/b.json"', True),
    ("BASE = 'https://raw.githubusercontent.com/BIRCO-benchmark/BIRCO/84b2b05c/datasets'", True),
    (f"BASE = 'https://raw.githubusercontent.com/BIRCO-benchmark/BIRCO/{FULL}/datasets'", False),
    ("x = 'https://raw.githubusercontent.com/o/r/main/file.txt'", True),
    ("x = 'https://raw.githubusercontent.com/o/r/refs/heads/main/file.txt'", True),
    ("see https://github.com/o/r/blob/master/README.md.", True),
    (f"see https://github.com/o/r/blob/{FULL}/README.md.", False),
    ("https://huggingface.co/nvidia/NV-Embed-v2 is the model page", False),  # names no revision: no pin
    ("https://github.com/SighingSnow/IFIR", False),
    ("https://huggingface.co/jianqunZ/Language-v1/resolve/HEAD/corpus.jsonl", True),
    (f"https://huggingface.co/jianqunZ/Language-v1/resolve/{FULL[:39]}/corpus.jsonl", True),
    (f"https://huggingface.co/jianqunZ/Language-v1/resolve/{FULL.upper()}/corpus.jsonl", True),
    ('f"https://huggingface.co/datasets/{repo}/resolve/{revision}/{file}"', False),  # a template: checked built
])
def test_the_checker_catches_a_planted_short_id_or_branch(text: str, bad: bool) -> None:
    assert bool(pin_problems(text)) is bad, pin_problems(text)


def test_the_checker_says_what_is_wrong() -> None:
    [short] = pin_problems('u = "https://huggingface.co/datasets/a/b/resolve/3506f981/x.json"', "tasks/x.toml")
    assert short.startswith("tasks/x.toml: ") and "'3506f981' is not a full 40-hex commit id" in short
    [branch] = pin_problems("https://raw.githubusercontent.com/o/r/master/x.txt")
    assert "branch 'master'" in branch


def registered_tasks() -> list:
    from harness.context import Context

    ctx = Context.create()
    return [ctx.registry.create("task", name, ctx) for name in ctx.registry.names("task")]


@requires_plugin(*PLUGINS)  # every task of the checkout
def test_every_registered_task_file_is_pinned_and_checksummed() -> None:
    tasks = registered_tasks()
    files = [(t.name, f) for t in tasks for f in t.files]
    assert {"trec-dl19", "scifact", "noveleval"} <= {t.name for t in tasks} and len(files) > 10
    problems, unpinned = [], set()
    for name, f in files:
        if not f.url:
            problems.append(f"{name}: {f.path} has no source URL")
            continue
        if f.unpinned:  # declared: a Hub file on a branch, resolved to its commit when downloaded
            unpinned.add(url_source(f.url).repo)
            if parse_hub_url(f.url) is None or url_source(f.url).revision != "main":
                problems.append(f"{name}: {f.path} is unpinned but not a Hub file on main ({f.url})")
            continue
        if url_source(f.url).repo and (why := pin_problem(f.url)):
            problems.append(f"{name}: {why}")
        if parse_hub_url(f.url) is None and not f.sha256:
            problems.append(f"{name}: {f.path} ({f.url}) is not on the Hub and has no sha256")
    assert not problems, "\n".join(problems)
    # the only releases of which no commit could be pinned (docs/data.md says why): a new one fails here
    assert unpinned == {"songtingyu/IFIR", "jianqunZ/Length-v1"}


def test_url_source_names_host_repository_and_revision() -> None:
    hub = url_source(f"https://huggingface.co/datasets/castorini/rank_llm_data/resolve/{FULL}/a/b.json")
    assert (hub.host, hub.kind, hub.repo, hub.revision, hub.path) == (
        "huggingface.co", "dataset", "castorini/rank_llm_data", FULL, "a/b.json")
    raw = url_source(f"https://raw.githubusercontent.com/castorini/anserini-tools/{FULL}/topics-and-qrels/q.txt")
    assert raw.describe() == f"github.com castorini/anserini-tools @{FULL}"
    assert url_source("https://example.org/x").describe() == "example.org"
    assert url_source(f"https://huggingface.co/o/m/resolve/{FULL}/w.bin").kind == "model"


# -- the table of every task's files in docs/data.md is generated from the task definitions -------------------
DOC = REPO / "docs" / "data.md"
BEGIN, END = "<!-- files table: generated by `python tests/test_data_pins.py` -->", "<!-- end of files table -->"


def files_table() -> str:
    """One row per file (the tasks using it first), then the tasks that publish no file."""
    rows: dict[str, list] = {}
    bare = []
    for task in sorted(registered_tasks(), key=lambda t: t.name):
        if task.is_suite:
            continue
        if not task.files:
            bare.append(task.name)
        for f in task.files:
            rows.setdefault(f.path, [f, []])[1].append(task.name)
    lines = ["| tasks | file | host | repository | pinned revision | size (bytes) | sha256 |",
             "|---|---|---|---|---|---|---|"]
    for path, (f, names) in sorted(rows.items(), key=lambda kv: (kv[1][1][0], kv[0])):
        src = url_source(f.url)
        repo = f"{src.kind} `{src.repo}`" if src.kind else f"`{src.repo}`" if src.repo else ""
        size = f"{f.size:,}" if f.size is not None else "—"
        note = " (optional)" if f.optional else ""
        digest = f"`{f.sha256}`" if f.sha256 else "— (checked by size)" if f.size is not None else "— (none published)"
        revision = f"`{src.revision}`" + (" (unpinned: resolved to its commit when downloaded)" if f.unpinned else "")
        lines.append(f"| {', '.join(f'`{n}`' for n in names)} | `{path}`{note} | {src.host} | {repo} | "
                     f"{revision} | {size} | {digest} |")
    if bare:
        lines.append(f"| {', '.join(f'`{n}`' for n in bare)} | none published for download | | | | | |")
    return "\n".join(lines)


@requires_plugin(*PLUGINS)  # the table lists every task of the checkout
def test_the_docs_table_lists_every_task_file_as_defined() -> None:
    text = DOC.read_text(encoding="utf-8")
    assert BEGIN in text and END in text, f"docs/data.md lacks the generated table markers {BEGIN!r}"
    current = text.split(BEGIN, 1)[1].split(END, 1)[0].strip()
    assert current == files_table(), "docs/data.md's files table is stale: run `python tests/test_data_pins.py`"


if __name__ == "__main__":  # rewrite the table in docs/data.md from the task definitions
    head, rest = DOC.read_text(encoding="utf-8").split(BEGIN, 1)
    DOC.write_text(f"{head}{BEGIN}\n{files_table()}\n{END}{rest.split(END, 1)[1]}", encoding="utf-8")
