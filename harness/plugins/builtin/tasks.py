"""Built-in tasks: one per ``*.toml`` file of the task folders (the packaged ones first)."""

from __future__ import annotations

from harness.concepts.task import load_task_file, task_dirs
from harness.plugins.hookspecs import hookimpl


@hookimpl
def register_tasks(register):
    seen: set[str] = set()
    for folder in task_dirs():
        for path in sorted(folder.glob("*.toml")):
            if path.stem in seen:
                continue
            seen.add(path.stem)
            register(path.stem, _task_factory(path, load_task_file), _first_line(path))


def _task_factory(path, loader):
    def factory():
        return loader(path)

    factory.path = path
    return factory


def _first_line(path) -> str:
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("description"):
            return line.split("=", 1)[1].strip().strip('"')
    return ""
