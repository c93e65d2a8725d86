"""Where a task file comes from (host, repository, revision), and whether its URL is pinned.

A pin names its commit by the FULL 40-hex id: the Hugging Face Hub does not resolve abbreviated
ids (an 8-character id is a ``404 RevisionNotFound``), and a branch name (``main``, ``master``,
``HEAD``, ``refs/...``) moves. :func:`pin_problems` finds the URLs of GitHub and the Hub in any text
(a task file, a plugin's source) and says what is wrong with each pin.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit

FULL_COMMIT = re.compile(r"^[0-9a-f]{40}$")
BRANCH_NAMES = ("main", "master", "head", "refs")
#: GitHub and Hub URLs in source text (a URL ends at a quote, a space, a bracket or a backtick)
URL_IN_TEXT = re.compile(r"https?://(?:raw\.githubusercontent\.com|github\.com|huggingface\.co)/[^\s\"'<>`)\]]+")

_RAW = re.compile(r"^/([^/]+/[^/]+)/([^/]+)/(.+)$")  # raw.githubusercontent.com/{owner}/{repo}/{rev}/{path}
_GITHUB = re.compile(r"^/([^/]+/[^/]+)/(?:raw|blob|tree)/([^/]+)(?:/(.*))?$")
_GITHUB_ARCHIVE = re.compile(r"^/([^/]+/[^/]+)/archive/(.+?)(?:\.zip|\.tar\.gz)$")
_HUB = re.compile(r"^/(?:(datasets|spaces)/)?([^/]+/[^/]+)/(?:resolve|blob|raw|tree)/([^/]+)(?:/(.*))?$")


@dataclass(frozen=True)
class Source:
    """``host``; ``repo`` (``owner/name``, with ``dataset``/``model``/``space`` for the Hub in
    ``kind``) and ``revision`` when the URL names a file at a revision; else both empty."""

    host: str
    repo: str = ""
    revision: str = ""
    path: str = ""
    kind: str = ""

    def describe(self) -> str:
        """``huggingface.co dataset castorini/rank_llm_data @<revision>`` / ``example.org``."""
        if not self.repo:
            return self.host or "no source URL"
        what = f"{self.kind} {self.repo}" if self.kind else self.repo
        return f"{self.host} {what} @{self.revision}"


def url_source(url: str) -> Source:
    """What ``url`` points at (a URL that names no repository revision gives just its host)."""
    if not url:
        return Source("")
    parts = urlsplit(url)
    host, path = parts.hostname or "", unquote(parts.path)
    if host == "raw.githubusercontent.com" and (m := _RAW.match(path)):
        return Source("github.com", m.group(1), m.group(2), m.group(3))
    if host == "github.com":
        if m := _GITHUB.match(path):
            return Source("github.com", m.group(1), m.group(2), m.group(3) or "")
        if m := _GITHUB_ARCHIVE.match(path):
            return Source("github.com", m.group(1), m.group(2), "")
    if host == "huggingface.co" and (m := _HUB.match(path)):
        kind = {"datasets": "dataset", "spaces": "space"}.get(m.group(1) or "", "model")
        return Source("huggingface.co", m.group(2), m.group(3), m.group(4) or "", kind)
    return Source(host)


def pin_problem(url: str) -> str | None:
    """What is wrong with the pin in ``url`` (None: a full commit id, or a URL that names no
    revision, such as a repository's page). A ``{placeholder}`` revision is a template: the
    formatted URL is checked where it is built."""
    src = url_source(url)
    if not src.repo:
        return None
    rev = src.revision
    if "{" in rev:
        return None
    if FULL_COMMIT.match(rev):
        return None
    if rev.lower() in BRANCH_NAMES or rev.lower().startswith("refs"):
        return f"{url}: pins the branch {rev!r}, which moves; use the full 40-hex commit id"
    return f"{url}: revision {rev!r} is not a full 40-hex commit id (the Hub does not resolve abbreviated ids)"


def pin_problems(text: str, where: str = "") -> list[str]:
    """Every badly pinned GitHub or Hub URL in ``text``, as ``where: url: why``."""
    out = []
    for m in URL_IN_TEXT.finditer(text):
        problem = pin_problem(m.group(0).rstrip(".,;:"))
        if problem:
            out.append(f"{where}: {problem}" if where else problem)
    return out
