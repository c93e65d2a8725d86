"""A real llama.cpp server for tests: ``python -m llama_cpp.server`` (llama-cpp-python's, the
``local`` extra) with the packaged Gemma 3 270M (or any GGUF) on a free loopback port.

    with LlamaServer() as server:                        # up in about 2 s, about 850 MB resident
        client = get_client(server.spec(), cache_dir=tmp)  # openai-compatible:gemma:base_url=.../v1

    with LlamaServer(embedding=True) as server:          # POST /v1/embeddings, one pooled vector per input
        spec = server.embeddings_spec()                  # openai-embeddings:model=gemma,base_url=.../v1

Embedding mode starts the server with ``--embedding true --kv_overrides ARCH.pooling_type=int:N``
(llama-cpp-python 0.3.x: ``ServerSettings.embedding`` and ``kv_overrides``, ``key=type:value``): the
packaged Gemma GGUF records no pooling type, and without one the server returns one vector per token
(``LLAMA_POOLING_TYPE_NONE``), not the OpenAI shape. ``pooling`` names llama.cpp's ``enum
llama_pooling_type`` (none 0, mean 1, cls 2, last 3, rank 4); ``arch`` is the GGUF's
``general.architecture`` (``gemma3`` for the packaged model). The server embeds each request's inputs
together in batches of ``n_batch`` tokens (512 by default; a longer input is cut to that), so a vector
depends slightly on the other inputs of its request.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from types import MappingProxyType
from typing import Any

from harness.llm.providers.local import packaged_gguf

#: llama.cpp's ``enum llama_pooling_type``
POOLING = MappingProxyType({"none": 0, "mean": 1, "cls": 2, "last": 3, "rank": 4})


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


class LlamaServer:
    """``gguf``: the model file (None: the packaged Gemma 3 270M, assembled under ``cache_dir`` or
    the default cache root); ``alias``: the model name clients send; ``n_ctx``, ``n_threads``,
    ``chat_format`` (``gemma`` for the packaged base model; None: the GGUF's own template);
    ``embedding``: serve ``/v1/embeddings`` instead of chat, pooled by ``pooling`` (see the module docstring)."""

    __test__ = False

    def __init__(self, gguf: str | os.PathLike[str] | None = None, *, alias: str = "gemma", n_ctx: int = 2048,
                 n_threads: int | None = None, chat_format: str | None = "gemma", host: str = "127.0.0.1",
                 cache_dir: str | os.PathLike[str] | None = None, startup_timeout: float = 120.0,
                 embedding: bool = False, pooling: str = "mean", arch: str = "gemma3") -> None:
        if pooling not in POOLING:
            raise ValueError(f"pooling must be one of {', '.join(POOLING)}, not {pooling!r}")
        self.gguf, self.alias, self.n_ctx, self.n_threads = gguf, alias, int(n_ctx), n_threads
        self.embedding, self.pooling, self.arch = bool(embedding), pooling, arch
        self.chat_format, self.host, self.cache_dir = chat_format, host, cache_dir
        self.startup_timeout = float(startup_timeout)
        self.port = 0
        self.proc: subprocess.Popen | None = None
        self._log: Any = None
        self.startup_seconds = 0.0

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def spec(self, provider: str = "openai-compatible") -> str:
        """An LLM spec for this server (``openai-compatible`` or ``openai``)."""
        return f"{provider}:{self.alias}:base_url={self.url}/v1"

    def embeddings_spec(self) -> str:
        """An ``openai-embeddings`` spec for this server (embedding mode)."""
        return f"openai-embeddings:model={self.alias},base_url={self.url}/v1"

    def start(self) -> LlamaServer:
        path = Path(self.gguf) if self.gguf else packaged_gguf(self.cache_dir)[0]
        self.port = free_port(self.host)
        cmd = [sys.executable, "-m", "llama_cpp.server", "--model", str(path), "--host", self.host,
               "--port", str(self.port), "--n_ctx", str(self.n_ctx), "--model_alias", self.alias]
        if self.n_threads:
            cmd += ["--n_threads", str(self.n_threads)]
        if self.embedding:
            cmd += ["--embedding", "true", "--kv_overrides", f"{self.arch}.pooling_type=int:{POOLING[self.pooling]}"]
        elif self.chat_format:
            cmd += ["--chat_format", self.chat_format]
        t = time.perf_counter()
        self._log = tempfile.TemporaryFile(mode="w+")  # a file, not a pipe: a full pipe would stall the server
        self.proc = subprocess.Popen(cmd, stdout=self._log, stderr=subprocess.STDOUT, text=True)
        deadline = time.monotonic() + self.startup_timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                self._log.seek(0)
                raise RuntimeError(f"llama.cpp server exited ({self.proc.returncode}): {self._log.read()[-2000:]}")
            if self.models() is not None:
                self.startup_seconds = time.perf_counter() - t
                return self
            time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"llama.cpp server not up within {self.startup_timeout:g} s")

    def models(self) -> Any:
        try:
            with urllib.request.urlopen(f"{self.url}/v1/models", timeout=1.0) as resp:  # noqa: S310 - loopback
                return json.loads(resp.read())
        except (OSError, ValueError):
            return None

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None
        if self._log is not None:
            self._log.close()
            self._log = None

    def __enter__(self) -> LlamaServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
