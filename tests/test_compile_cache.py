"""The persistent compiled backbone (engine/compiled_backbone.py, engine/compile_cache.py) on ``tiny``.

One compilation for the module (the ``compiled`` fixture): every test reuses its engine, its cache slot
and dynamo's graphs (a new ``torch.compile`` of the same forward on the same module finds them)."""

from __future__ import annotations

import json
import os
import shutil
import threading
from dataclasses import asdict
from pathlib import Path
from typing import Any

import pytest
import torch

from torch._dynamo.utils import counters

from omnistudio.engine.compile import eager
from omnistudio.engine.compile_cache import cache_key
from omnistudio.engine.compiled_backbone import CompiledBackbone, is_compiled, trial_inputs
from omnistudio.engine.reference import Reference
from support.audio import REF_TEXT
from support.server import restored_environ
from support.stream import open_stream
from support.wait import HANG_S, wait_until

# The dtype's bound for one backbone forward, relative to the largest hidden value: fp32 sums in
# another order (fused kernels, masked SDPA instead of attention per block) drift by rounding only.
BOUND = {torch.float32: 1e-4}


@pytest.fixture(scope="module")
def compiled(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """A tiny engine of its own (its backbone is switched) with the fast sampler, compiled once into a
    cache slot under a fresh root."""
    from omnistudio.engine.settings import EngineConfig
    from omnistudio.voices.session import open_engine

    engine = open_engine(EngineConfig("tiny", "cpu"))
    root = tmp_path_factory.mktemp("compile")
    with restored_environ():  # the start points TORCHINDUCTOR_CACHE_DIR under root: this module's only
        backbone = CompiledBackbone(engine, root).start(background=False)
        assert backbone.state == "compiled", backbone.detail
        assert os.environ["TORCHINDUCTOR_CACHE_DIR"].startswith(str(root))  # inductor's folder under the root
        yield backbone


@pytest.fixture
def eager_engine(compiled: CompiledBackbone) -> Any:
    """The fixture's engine with its eager backbone, restored to compiled after the test."""
    engine = compiled.engine
    forward = vars(engine.model.llm).pop("forward", None)
    saved = engine.compiled
    yield engine
    vars(engine.model.llm).pop("forward", None)
    if forward is not None:
        engine.model.llm.forward = forward
    engine.compiled = saved


def test_compiled_backbone_agrees_with_eager_within_the_dtype_bound(compiled: CompiledBackbone) -> None:
    model = compiled.engine.model
    assert is_compiled(model) and compiled.engine.compile_state == "compiled" and compiled.source == "fresh"
    hidden = int(model.config.llm_config.hidden_size)
    dtype = next(model.llm.parameters()).dtype
    gen = torch.Generator().manual_seed(3)
    graphs = counters["stats"]["unique_graphs"]
    for rows, length in ((1, 37), (3, 52)):  # one sentence alone, a batch: lengths the trial never ran
        with torch.inference_mode():  # made as the sampler makes them (inference tensors: the trial's graph)
            inputs = trial_inputs(rows, length, hidden, dtype, "cpu")
            inputs["inputs_embeds"] = torch.randn(inputs["inputs_embeds"].shape, generator=gen, dtype=dtype)
            inputs["attention_mask"][:, :, :, length - 9:] = False  # padding at the end, as a packed row has
            got = model.llm(**inputs)[0]
            with eager(model):
                assert not is_compiled(model)
                want = model.llm(**inputs)[0]
        assert is_compiled(model)
        scale = float(want.abs().max())
        assert float((got - want).abs().max()) <= BOUND[dtype] * scale, (rows, length)
    assert counters["stats"]["unique_graphs"] == graphs  # the trial's graphs served both: nothing compiled


def test_the_slot_holds_the_key_and_a_second_start_loads_it(compiled: CompiledBackbone, eager_engine: Any,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    slot = compiled.slot
    assert slot.state() == "warm"
    assert json.loads(slot.key_file.read_text()) == asdict(cache_key(eager_engine.loaded))
    loads: list[bytes] = []
    real = torch.compiler.load_cache_artifacts
    monkeypatch.setattr(torch.compiler, "load_cache_artifacts", lambda data: loads.append(data) or real(data))

    def no_build(_backbone: CompiledBackbone) -> None:
        raise AssertionError("a warm slot was compiled again")

    again = CompiledBackbone(eager_engine, compiled.root, build=no_build).start(background=True)
    assert again.done.is_set() and again.state == "compiled" and again.source == "cache"  # before start returned
    assert loads == [slot.artifacts.read_bytes()]
    assert is_compiled(eager_engine.model) and eager_engine.compile_state == "compiled"


@pytest.mark.parametrize("field", ["torch", "model", "geometry", "dtype", "quantize"])
def test_a_cache_from_another_torch_or_model_is_rebuilt_never_loaded(
        compiled: CompiledBackbone, eager_engine: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        field: str) -> None:
    root = tmp_path / "compile"
    shutil.copytree(compiled.slot.folder, root / compiled.slot.folder.name)
    key = json.loads((root / compiled.slot.folder.name / "key.json").read_text())
    key[field] = f"another {key[field]}"
    (root / compiled.slot.folder.name / "key.json").write_text(json.dumps(key))
    loads: list[bytes] = []
    monkeypatch.setattr(torch.compiler, "load_cache_artifacts", loads.append)
    builds: list[str] = []

    def build(backbone: CompiledBackbone) -> None:  # the child process's place: what it is handed
        builds.append(backbone.slot.state())
        raise RuntimeError("stand-in build")

    backbone = CompiledBackbone(eager_engine, root, build=build).start(background=True)
    assert backbone.wait(HANG_S)
    assert builds == ["cold"]  # the stale slot emptied, then rebuilt
    assert loads == [] and not backbone.slot.artifacts.exists()
    assert backbone.state == "failed" and not is_compiled(eager_engine.model)


class SpyLock:
    """The engine's lock, telling when the compile thread asks for it."""

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.asked = threading.Event()

    def __enter__(self) -> bool:
        if threading.current_thread().name == "omnistudio-compile":
            self.asked.set()
        return self.lock.__enter__()

    def __exit__(self, *exc: object) -> None:
        self.lock.__exit__(*exc)


def test_the_switch_waits_for_the_sentence_in_flight(compiled: CompiledBackbone, eager_engine: Any,
                                                     ref_wav: Path, tmp_path: Path) -> None:
    """A take rendered while the compile finishes: the compile is ready during sentence 2's third step;
    sentence 2 ends eager, every sentence is wholly eager or wholly compiled, the last ones compiled."""
    engine, model = eager_engine, eager_engine.model
    voice = engine.prompt_for(Reference(ref_wav, REF_TEXT))
    renderer: list[int] = []
    spy = SpyLock()
    engine._lock = spy
    filled, ran = threading.Event(), []  # ran: (pass, step, compiled) per backbone call of the take
    steps: dict[int, int] = {}

    def build(backbone: CompiledBackbone) -> None:  # the child process's place: the slot filled on a signal
        assert filled.wait(HANG_S)
        shutil.copytree(compiled.slot.folder, backbone.slot.folder, dirs_exist_ok=True)

    def hook(_module: Any, _args: Any) -> None:
        if not renderer:
            renderer.append(threading.get_ident())
        if threading.get_ident() != renderer[0]:
            return
        n = engine.passes
        steps[n] = steps.get(n, 0) + 1
        ran.append((n, steps[n], is_compiled(model)))
        if n == start + 2 and steps[n] == 3:
            filled.set()  # the compile is ready: it now waits for the lock (or switches at once without it)
            wait_until(lambda: spy.asked.is_set() or is_compiled(model), what="the switch")

    start = engine.passes
    handle = model.llm.register_forward_pre_hook(hook)
    try:
        backbone = CompiledBackbone(engine, tmp_path / "compile", build=build).start(background=True)
        assert backbone.state == "compiling"
        stream = open_stream(engine, "One two. Three four. Five six. Seven eight. Nine ten.", voice, num_step=6)
        chunks = list(stream)
        assert stream.join(timeout=HANG_S) and all(c.ok for c in chunks)
        assert backbone.wait(HANG_S) and backbone.state == "compiled", backbone.detail
    finally:
        handle.remove()
        engine._lock = threading.RLock()
    per_pass: dict[int, set[bool]] = {}
    for n, _step, on in ran:
        per_pass.setdefault(n, set()).add(on)
    assert len(per_pass) == 5
    assert all(len(kinds) == 1 for kinds in per_pass.values()), per_pass  # never half and half
    kinds = [next(iter(per_pass[n])) for n in sorted(per_pass)]
    assert kinds[:2] == [False, False] and kinds[-1] is True and kinds == sorted(kinds)
    assert backbone.switched_at is not None and backbone.switched_at >= start + 2


def test_on_by_default_on_the_cpu_only(monkeypatch: pytest.MonkeyPatch) -> None:
    from omnistudio.config import compile_backbone

    monkeypatch.delenv("OMNISTUDIO_COMPILE", raising=False)
    assert compile_backbone("cpu") and not compile_backbone("cuda:0") and not compile_backbone("mps")
    assert compile_backbone("cpu", "full") and not compile_backbone("cpu", "tiny")  # tiny never pays it back
    monkeypatch.setenv("OMNISTUDIO_COMPILE", "0")
    assert not compile_backbone("cpu")
    monkeypatch.setenv("OMNISTUDIO_COMPILE", "1")
    assert compile_backbone("cuda")


def test_the_link_health_and_telemetry_say_the_state(compiled: CompiledBackbone) -> None:
    """What /health's engine block (the link's info as the server sends it) and the studio's telemetry show."""
    from omnistudio.protocol import EngineInfo
    from omnistudio.take.link import LocalEngine
    from omnistudio.widgets.telemetry import Telemetry

    info = LocalEngine(compiled.engine).info
    assert info.compile == "compiled"
    assert EngineInfo(**asdict(info)).model_dump()["compile"] == "compiled"
    saved, compiled.state = compiled.state, "compiling"
    try:
        assert LocalEngine(compiled.engine).info.compile == "compiling"
    finally:
        compiled.state = saved
    telemetry = Telemetry()
    telemetry.backbone = "compiling"
    rows = [str(cell) for column in telemetry.render().columns for cell in column.cells]
    assert "backbone" in rows and any("compiling" in row for row in rows)
