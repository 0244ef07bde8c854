"""int8 linear layers in the backbone (``--quantize int8``): each layer against its float weights within a
bound derived from int8 arithmetic, the CPU rule that refuses it, and ``say --quantize int8`` end to end.

The bound, per layer call ``y = x W^T`` (x: rows of k features, W: n x k), with the weight scale of output
channel j ``s_j = max|W_j| / 127`` and the activation scale ``s_x = (max(x, 0) - min(x, 0)) / 127`` (the
kernel's 7-bit activations; 8 bits only halve it), both computed here from the float values:

- worst case, every element: ``|y_q - y| <= s_j/2 * |x|_1 + s_x/2 * (|W_j|_1 + k * s_j/2)`` (each weight
  off by at most half its step, each activation by at most half its step, the products summed);
- the layer's RMS error at most 1.25 x the RMS that rounding noise predicts (independent errors, uniform
  within half a step: variance ``s_j^2/12 * |x|_2^2 + s_x^2/12 * |W_j|_2^2`` per element); measured 0.99-1.00
  on the backbone's shapes, so 1.25 leaves room for the small layers and nothing for a wrong scale.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import soundfile as sf

from omnistudio.engine.reference import Reference
from omnistudio.errors import UserError
from support.audio import REF_TEXT
from support.cli import one_line_error

RMS_SLACK = 1.25
ONE = "Good evening and welcome to the news."
THREE = ["Good evening.", "The council met late into the night to vote.", "Rain is expected tomorrow."]


@pytest.fixture(scope="module")
def int8_engine(omnistudio_home: Path) -> Any:
    from omnistudio.engine.engine import Engine

    return Engine.load("tiny", device="cpu", dtype="fp32", quantize="int8")


def _calls(engine: Any, run: Any) -> list[tuple[str, Any, Any]]:
    """(layer name, input, output) of every int8 layer call while ``run()`` renders."""
    from omnistudio.engine.quantize import CastLinear

    seen: list[tuple[str, Any, Any]] = []
    hooks = [module.register_forward_hook(lambda _m, args, out, name=name: seen.append(
        (name, args[0].detach().clone(), out.detach().clone())))
             for name, module in engine.model.llm.named_modules() if isinstance(module, CastLinear)]
    try:
        run()
    finally:
        for hook in hooks:
            hook.remove()
    return seen


def _check(name: str, x: Any, y: Any, linear: Any, out_rounding: float = 0.0) -> float:
    """Assert the bound for one call; returns its RMS error over the predicted RMS. ``out_rounding``: the
    output dtype's relative rounding (a bf16 backbone's layer gives bf16), added to the worst case."""
    import torch

    k, n = linear.in_features, linear.out_features
    x64, y64 = x.reshape(-1, k).double(), y.reshape(-1, n).double()
    w = linear.weight.detach().double()
    ref = x64 @ w.t() + (linear.bias.detach().double() if linear.bias is not None else 0.0)
    err = (y64 - ref).abs()
    s_w = w.abs().amax(dim=1) / 127
    s_x = (x64.max().clamp_min(0) - x64.min().clamp_max(0)) / 127
    worst = x64.abs().sum(dim=1, keepdim=True) * s_w / 2 + s_x / 2 * (w.abs().sum(dim=1) + k * s_w / 2)
    over = err - (worst * (1 + 1e-5) + 1e-6 + out_rounding * (ref.abs() + worst))  # output rounding on top
    assert float(over.max()) <= 0, f"{name}: {int((over > 0).sum())} elements past the worst-case bound"
    if out_rounding:  # the RMS test is for fp32 output, where int8 rounding is all the noise there is
        return float(err.pow(2).mean().sqrt() / ref.pow(2).mean().sqrt())
    predicted = torch.sqrt(((s_w**2 / 12) * x64.pow(2).sum(dim=1, keepdim=True)
                            + (s_x**2 / 12) * w.pow(2).sum(dim=1)).mean())
    ratio = float(err.pow(2).mean().sqrt() / predicted)
    rel = float(err.pow(2).mean().sqrt() / ref.pow(2).mean().sqrt())
    assert ratio <= RMS_SLACK, f"{name}: RMS error {ratio:.2f}x the rounding noise predicted (relative {rel:.4f})"
    return ratio


def _check_all(calls: list[tuple[str, Any, Any]], float_llm: Any) -> None:
    names = {name for name, _x, _y in calls}
    assert len(names) == 7 * len(float_llm.layers), names  # q, k, v, o, gate, up, down in every layer
    ratios = [_check(name, x, y, float_llm.get_submodule(name)) for name, x, y in calls]
    assert min(ratios) > 0.5  # the noise is there: int8 really ran (a float layer would give ~0)


def test_every_backbone_linear_is_int8_and_the_rest_is_not(int8_engine: Any, tiny_engine: Any) -> None:
    import torch

    from omnistudio.engine.quantize import CastLinear

    model = int8_engine.model
    assert not any(type(m) is torch.nn.Linear for m in model.llm.modules())
    assert sum(isinstance(m, CastLinear) for m in model.llm.modules()) == 7 * len(model.llm.layers)
    assert type(model.audio_heads) is torch.nn.Linear  # the audio heads stay float
    assert torch.equal(model.audio_heads.weight, tiny_engine.model.audio_heads.weight)
    assert all(p.dtype == torch.float32 for p in model.audio_tokenizer.parameters())  # the vocoder fp32
    assert int8_engine.loaded.quantize == "int8" and int8_engine.loaded.label == "cpu · fp32 · int8"
    report = int8_engine.loaded.quantized
    assert report.layers == 7 * len(model.llm.layers) and report.int8_mb < report.float_mb / 3


def test_int8_layers_within_the_bound_one_sentence(int8_engine: Any, tiny_engine: Any, ref_wav: Path) -> None:
    voice = Reference(ref_wav, REF_TEXT)
    calls = _calls(int8_engine, lambda: int8_engine.synthesize(ONE, voice, num_step=4, seed=3, sampler=None))
    _check_all(calls, tiny_engine.model.llm)


def test_int8_layers_within_the_bound_batch_of_three(int8_engine: Any, tiny_engine: Any, ref_wav: Path) -> None:
    from omnistudio.engine.sampler import FastSampler

    voice = Reference(ref_wav, REF_TEXT)
    sampler = FastSampler(int8_engine.model)
    out: list[Any] = []
    calls = _calls(int8_engine, lambda: out.extend(int8_engine.synthesize_batch(
        THREE, [voice] * 3, ["en"] * 3, num_step=4, seeds=[1, 2, 3], sampler=sampler)))
    assert len(out) == 3 and all(np.abs(s.pcm).max() > 0 for s in out)
    assert max(x.reshape(-1, x.shape[-1]).shape[0] for _n, x, _y in calls) > 3 * 20  # three rows in a pass
    _check_all(calls, tiny_engine.model.llm)


def test_int8_on_a_bf16_backbone_takes_and_gives_bf16_within_the_bound(bf16_engine: Any, ref_wav: Path) -> None:
    """int8 layers in a bf16 backbone: bf16 in, bf16 out (so the rest of the backbone stays bf16), each call
    within the int8 bound plus bf16's output rounding (2^-8 relative), and int8 really ran (not the bf16 layer)."""
    import torch

    from omnistudio.engine.engine import Engine

    engine = Engine.load("tiny", device="cpu", dtype="bf16", quantize="int8")
    assert engine.loaded.label == "cpu · bf16 · int8"
    voice = Reference(ref_wav, REF_TEXT)
    calls = _calls(engine, lambda: engine.synthesize("Good evening.", voice, num_step=2, seed=3, sampler=None))
    assert {(x.dtype, y.dtype) for _n, x, y in calls} == {(torch.bfloat16, torch.bfloat16)}
    float_llm = bf16_engine.model.llm
    assert len({name for name, _x, _y in calls}) == 7 * len(float_llm.layers)
    errors = [_check(name, x.float(), y.float(), float_llm.get_submodule(name), out_rounding=2.0**-8)
              for name, x, y in calls]
    assert min(errors) > 5e-3  # int8 ran (1.3-5.5% measured): a bf16 layer errs ~0.1% (bf16 output rounding)


@pytest.mark.parametrize(("flags", "feature"), [
    ({"sse2", "avx", "avx2", "fma"}, "AVX2"),
    ({"avx2", "avx512f", "avx512_vnni"}, "AVX512-VNNI"),
    ({"avx2", "avx_vnni"}, "AVX-VNNI"),
    ({"avx2", "avx512_vnni", "amx_tile", "amx_int8", "amx_bf16"}, "AMX-INT8"),
    ({"sse2", "sse4_2", "avx"}, None),
    (set(), None),  # no flags line (not an x86 CPU)
])
def test_int8_acceleration_is_a_function_of_the_cpu_flags(flags: set[str], feature: str | None) -> None:
    from omnistudio.engine.quantize import check_quantize, int8_feature

    assert int8_feature(flags) == feature
    if feature is None:
        with pytest.raises(UserError, match="no int8 acceleration"):
            check_quantize("int8", "cpu", frozenset(flags))
    else:
        assert check_quantize("int8", "cpu", frozenset(flags)) == "int8"
    assert check_quantize("none", "cpu", frozenset(flags)) == "none"


def test_int8_is_refused_off_the_cpu_and_unknown_names_are_refused() -> None:
    from omnistudio.engine.quantize import check_quantize

    with pytest.raises(UserError, match="runs on the CPU"):
        check_quantize("int8", "cuda:0", frozenset({"avx2"}))
    with pytest.raises(UserError, match="unknown --quantize 'int4'"):
        check_quantize("int4", "cpu", frozenset({"avx2"}))


def test_say_refuses_int8_on_a_cpu_without_int8(tmp_path: Path, ref_wav: Path, monkeypatch: pytest.MonkeyPatch,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    from omnistudio.cli import main

    monkeypatch.setenv("OMNISTUDIO_CPU_FLAGS", "fpu sse sse2 ssse3 sse4_1 sse4_2 avx fma")
    out = tmp_path / "refused.wav"
    rc = main(["say", "--model", "tiny", "--device", "cpu", "--quantize", "int8", "--ref-audio", str(ref_wav),
               "--ref-text", REF_TEXT, "Hello.", "-o", str(out)])
    assert rc != 0 and not out.exists()
    one_line_error(capsys, "no int8 acceleration")


def test_say_int8_end_to_end(tmp_path: Path, ref_wav: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from omnistudio.cli import main

    out = tmp_path / "int8.wav"
    rc = main(["say", "--model", "tiny", "--device", "cpu", "--dtype", "fp32", "--quantize", "int8",
               "--ref-audio", str(ref_wav), "--ref-text", REF_TEXT, ONE, "-o", str(out), "--json"])
    assert rc == 0
    said = json.loads(capsys.readouterr().out)
    assert said["quantisation"] == "int8" and said["dtype"] == "fp32"
    pcm, rate = sf.read(out, dtype="float32")
    assert rate == 24_000 and len(pcm) == round(said["audio_s"] * rate)
    assert np.all(np.isfinite(pcm)) and np.abs(pcm).max() > 0


def test_render_records_int8_in_its_sidecar(tmp_path: Path, ref_wav: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A take's record names what its samples depend on: an int8 render says int8 (the reproducibility contract)."""
    from omnistudio.cli import main

    script = tmp_path / "s.txt"
    script.write_text("Good evening.\n", encoding="utf-8")
    out = tmp_path / "out.wav"
    assert main(["render", str(script), "--model", "tiny", "--device", "cpu", "--quantize", "int8", "--ref-audio",
                 str(ref_wav), "--ref-text", REF_TEXT, "--num-step", "2", "-o", str(out), "--json"]) == 0
    said = json.loads(capsys.readouterr().out)
    sidecar = json.loads(Path(said["sidecar"]).read_text())
    assert sidecar["engine"]["quantisation"] == said["quantisation"] == "int8"


def test_bench_quantize_axis_in_one_run(capsys: pytest.CaptureFixture[str]) -> None:
    """bench --quantize none,int8: one engine each, every row at each, int8 rows paired with stock unquantized."""
    from omnistudio.cli import main

    assert main(["bench", "--model", "tiny", "--device", "cpu", "--dtypes", "fp32", "--quantize", "none,int8",
                 "--only", "combined", "--sentences", "1", "--num-step", "4", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    rows = {v["name"]: v for v in result["variants"]}
    assert list(rows) == ["stock fp32", "lossless fp32", "default fp32",
                          "stock fp32 int8", "lossless fp32 int8", "default fp32 int8"]
    assert result["baseline"] == "stock fp32" and result["quantize"] == ["none", "int8"]
    for name, row in rows.items():
        assert row["total_s"] > 0 and row["ms_per_step"] > 0 and row["rtf"] > 0 and row["ttfa_s"] > 0, name
    # int8 changes tokens; its rows are compared with stock fp32 (their own dtype, unquantized), not with
    # stock on the int8 engine: both agreements are the same figure here
    int8 = rows["stock fp32 int8"]
    assert 0.0 < int8["baseline_agreement"] < 1.0 and int8["token_agreement"] == int8["baseline_agreement"]
    assert rows["lossless fp32 int8"]["token_agreement"] == rows["lossless fp32 int8"]["baseline_agreement"]
    assert rows["lossless fp32"]["tokens_identical"] and not int8["tokens_identical"]
    loads = {e["engine"]: e for e in result["engines"]}
    assert loads["fp32"]["linear_mb"] is None and loads["fp32 int8"]["quantize"] == "int8"
    assert loads["fp32 int8"]["linear_mb"][1] < loads["fp32 int8"]["linear_mb"][0]
    assert result["int8_default"] is None  # no bf16 in this run to hold it against


@pytest.mark.parametrize("value", ["none,int4", "int8,int8", ","])
def test_bench_refuses_a_bad_quantize_list(value: str, capsys: pytest.CaptureFixture[str]) -> None:
    from omnistudio.cli import main

    assert main(["bench", "--model", "tiny", "--quantize", value, "--sentences", "1"]) == 2
    one_line_error(capsys, f"--quantize {value}: give a comma-separated list", alone=False)


def test_one_scale_per_output_channel_keeps_small_rows_exact() -> None:
    """A weight whose rows differ 100x in size (as real layers' outlier channels do; tiny's random rows
    do not): each row gets its own scale, and each row's output error stays small relative to that row.
    One scale for the whole tensor would round the small rows to a few levels (about 50% error)."""
    import torch

    from omnistudio.engine.quantize import QMAX, int8_linear, weight_scales

    torch.manual_seed(3)
    linear = torch.nn.Linear(256, 8, bias=False)
    with torch.no_grad():
        linear.weight.mul_(torch.tensor([1.0] * 4 + [0.01] * 4).unsqueeze(1))
    scales = weight_scales(linear.weight)
    assert scales.shape == (8,)
    assert torch.allclose(scales, linear.weight.abs().amax(dim=1).double() / QMAX)
    x = torch.randn(64, 256)
    ref, got = linear(x), int8_linear(linear)(x)
    error = ((got - ref).norm(dim=0) / ref.norm(dim=0)).tolist()
    assert max(error) < 0.05, error  # every row, the small ones included
