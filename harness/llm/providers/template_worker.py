"""The process that renders a GGUF chat template for :mod:`harness.llm.providers.chat_template`.

Run as ``python -I template_worker.py`` (the standard library and jinja2 only: it imports nothing of
the harness). The first line on stdin is ``{"template", "memory", "max_chars"}``: the process caps
its address space at ``memory`` bytes, compiles the template in jinja2's immutable sandbox, exactly as
llama-cpp-python's ``Jinja2ChatFormatter`` does (refusing a constant folded at compile time that
is longer than ``max_chars`` or runs out of memory: :class:`_Folds`), and answers ``{"ready": true}``
or an error. Each
next line is one request ``{"messages", "bos_token", "eos_token", "max_chars", "seconds"}`` (and
``"variables"``: the template's switches, of :data:`SWITCHES`, e.g. ``enable_thinking``), answered
by one line ``{"prompt": ...}`` or ``{"error": KIND, "message": ...}``. Before each render the
process sets its CPU-time limit to what it has used plus ``seconds`` (plus one), so a runaway
template ends even if the harness is gone; the harness also kills it at the call's deadline. The
process ends when stdin closes.
"""

from __future__ import annotations

import json
import math
import sys
from datetime import datetime
from typing import Any

#: the template variables a request may set (a model's thinking switch, as Qwen3's template reads it)
SWITCHES = ("enable_thinking",)


class _Oversize(Exception):
    """The rendered prompt passed ``max_chars``."""


def _limit(kind: str, soft: int) -> None:
    try:
        import resource

        which = getattr(resource, kind)
        _, hard = resource.getrlimit(which)
        if hard != resource.RLIM_INFINITY:
            soft = min(soft, hard)
        resource.setrlimit(which, (soft, hard))
    except (ImportError, AttributeError, ValueError, OSError):  # not on this platform: the parent's kill bounds it
        pass


def _cpu_used() -> float:
    try:
        import resource

        use = resource.getrusage(resource.RUSAGE_SELF)
        return use.ru_utime + use.ru_stime
    except ImportError:
        return 0.0


def _environment() -> Any:
    """llama-cpp-python's ``Jinja2ChatFormatter`` environment (0.3.x), attribute for attribute."""
    import jinja2
    import jinja2.ext
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    class IgnoreGenerationTags(jinja2.ext.Extension):
        """Pass-through for HuggingFace's ``{% generation %}`` chat-template tag."""

        tags = {"generation"}

        def parse(self, parser: Any) -> Any:
            parser.stream.skip(1)
            return parser.parse_statements(("name:endgeneration",), drop_needle=True)

    env = ImmutableSandboxedEnvironment(loader=jinja2.BaseLoader(), trim_blocks=True, lstrip_blocks=True,
                                        extensions=[IgnoreGenerationTags, jinja2.ext.loopcontrols])
    env.filters["tojson"] = _tojson
    return env


def _tojson(x: Any, ensure_ascii: bool = False, indent: int | None = None, separators: Any = None,
            sort_keys: bool = False) -> str:
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


def _strftime_now(f: str) -> str:
    return datetime.now().strftime(f)


def _raise_exception(message: str) -> None:
    raise ValueError(message)


def _render(template: Any, request: dict[str, Any]) -> str:
    cap = int(request["max_chars"])
    chunks: list[str] = []
    size = 0
    switches = {k: bool(v) for k, v in (request.get("variables") or {}).items() if k in SWITCHES}
    for chunk in template.generate(messages=request["messages"], eos_token=request["eos_token"],
                                   bos_token=request["bos_token"], raise_exception=_raise_exception,
                                   add_generation_prompt=True, functions=None, function_call=None, tools=None,
                                   tool_choice=None, strftime_now=_strftime_now, **switches):
        size += len(chunk)
        if size > cap:
            raise _Oversize(f"the prompt it renders passes {cap:,} characters")
        chunks.append(chunk)
    return "".join(chunks)


def _error(exc: BaseException) -> dict[str, Any]:
    import jinja2
    from jinja2.exceptions import SecurityError

    text = str(exc)
    text = text if len(text) <= 300 else text[:297] + "..."
    if isinstance(exc, SecurityError):
        kind = "sandbox"
    elif isinstance(exc, _Oversize):
        kind = "size"
    elif isinstance(exc, MemoryError):
        kind, text = "memory", "it needs more memory than the renderer's limit"
    elif isinstance(exc, RecursionError):
        kind, text = "recursion", "it recurses too deeply"
    elif isinstance(exc, jinja2.TemplateSyntaxError):
        kind = "syntax"
    elif isinstance(exc, ValueError) and exc.__traceback__ is not None and _raised_by_template(exc):
        kind = "refused"
    else:
        kind, text = "error", f"{type(exc).__name__}: {text}"
    return {"error": kind, "message": text}


def _raised_by_template(exc: BaseException) -> bool:
    tb = exc.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code is _raise_exception.__code__:
            return True
        tb = tb.tb_next
    return False


def _send(obj: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(obj, ensure_ascii=True) + "\n")
    sys.stdout.flush()


class _Folds:
    """What constant folding at compile time met: Jinja evaluates constant expressions while it compiles
    (``'x' * 10**9``, ``'x'|center(10**9)``) and silently keeps them for run time when that fails. In this
    process a fold that runs out of memory fails, but llama-cpp-python compiles the same template in
    the harness's process, without a bound: so a fold that fails for memory, or makes a constant
    longer than ``max_chars``, refuses the template here."""

    def __init__(self, max_chars: int) -> None:
        self.max_chars = max_chars
        self.problem: str | None = None

    def watch(self) -> None:
        """Wrap every ``as_const`` of jinja2's nodes (this process only)."""
        from jinja2 import nodes

        for cls in list(vars(nodes).values()):
            if isinstance(cls, type) and issubclass(cls, nodes.Node) and "as_const" in cls.__dict__:
                cls.as_const = self._wrapped(cls.__dict__["as_const"])

    def _wrapped(self, fn: Any) -> Any:
        def as_const(node: Any, *args: Any, **kwargs: Any) -> Any:
            try:
                value = fn(node, *args, **kwargs)
            except Exception as exc:  # Jinja wraps the failure: Impossible() from MemoryError
                cause: BaseException | None = exc
                while cause is not None and self.problem is None:
                    if isinstance(cause, MemoryError | RecursionError):
                        self.problem = f"a constant it computes while compiling needs too much ({type(cause).__name__})"
                    cause = cause.__cause__ or cause.__context__
                raise
            self._check(value)
            return value

        return as_const

    def _check(self, value: Any) -> None:
        size = len(value) if isinstance(value, str | bytes | list | tuple | dict) else 0
        if isinstance(value, int) and value.bit_length() > 14_000:  # about 4,300 decimal digits
            size = self.max_chars + 1
        if size > self.max_chars and self.problem is None:
            self.problem = (f"a constant it computes while compiling is longer than {self.max_chars:,} "
                            "(characters, items or digits)")
        if size > self.max_chars:
            raise ValueError(self.problem)


def main() -> None:
    init = json.loads(sys.stdin.readline() or "{}")
    _limit("RLIMIT_AS", int(init.get("memory", 1 << 30)))
    folds = _Folds(int(init.get("max_chars", 1 << 20)))
    try:
        folds.watch()
        template = _environment().from_string(init["template"])
    except Exception as exc:  # any failure is reported, never raised
        _send(_error(exc) if folds.problem is None else {"error": "constant", "message": folds.problem})
        return
    if folds.problem is not None:
        _send({"error": "constant", "message": folds.problem})
        return
    _send({"ready": True})
    for line in sys.stdin:
        try:
            request = json.loads(line)
            _limit("RLIMIT_CPU", math.ceil(_cpu_used() + float(request["seconds"])) + 1)
            _send({"prompt": _render(template, request)})
        except Exception as exc:  # MemoryError and RecursionError included: reported, never raised
            _send(_error(exc))


if __name__ == "__main__":
    main()
