"""`omnistudio bench`: the fields it reports and its input checks (tiny checkpoint; no timing thresholds)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from omnistudio.cli import main
from omnistudio.bench.speed import Bench, BenchSettings, make_variants

FIELDS = {"name", "techniques", "ratio", "loop_ratio", "ms_per_step", "vocoder_ms", "rtf", "ttfa_s",
          "peak_mem_mb", "tokens_identical", "max_abs_diff", "steps", "total_s", "audio_s"}


def test_bench_reports_every_field_and_parity(tiny_engine: Any) -> None:
    labels: list[str] = []
    result = Bench(tiny_engine, BenchSettings(sentences=2, variants=["lossless"]),
                   progress=lambda done, total, label: labels.append(label)).run()
    names = [v["name"] for v in result["variants"]]
    assert names == ["stock", "lossless"]
    assert len(result["sentences"]) == 2 and all(s["target_frames"] > 0 for s in result["sentences"])
    assert labels[-1] == "done" and any("lossless" in label for label in labels)
    for v in result["variants"]:
        assert FIELDS <= set(v)
        assert v["total_s"] > 0 and v["audio_s"] > 0 and v["ratio"] > 0 and v["vocoder_ms"] > 0
        assert v["steps"] == 2 * 10  # two sentences, ten steps each
        assert v["peak_mem_mb"] > 0
        assert v["tokens_identical"] is True
        assert v["max_abs_diff"] == 0.0
    assert result["variants"][0]["ratio"] == 1.0
    json.dumps(result)  # serialisable as is


def test_variants_cover_every_technique() -> None:
    names = [v.name for v in make_variants(BenchSettings(compile="default"), "cpu")]
    assert names[0] == "stock"
    for technique in ("sliced_projection", "static_prefix", "inplace_scatter", "trimmed_guidance",
                      "length_bucketing", "early_exit", "block_attention", "static_step", "lossless", "default",
                      "default+compile"):
        assert technique in names
    steps = make_variants(BenchSettings(variants=["steps"]), "cuda")
    assert [v.name for v in steps] == ["stock", "stepwise", "static eager", "static replayed"]
    assert steps[-1].stock == "static eager"  # the replayed step's tokens are compared with the eager step's
    assert steps[-1].options is not None and steps[-1].options.cuda_graphs and steps[-1].options.static_step
    assert steps[-2].options is not None and not steps[-2].options.cuda_graphs
    assert steps[1].options is not None and not steps[1].options.static_step


def test_cli_json(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["bench", "--model", "tiny", "--device", "cpu", "--sentences", "1", "--only", "combined",
                 "--threads", "1", "--json"])
    assert code == 0
    result = json.loads(capsys.readouterr().out)
    assert result["mode"] == "sentences" and result["model"] == "tiny"
    assert [v["name"] for v in result["variants"]] == ["stock", "lossless", "default"]
    for v in result["variants"]:  # what README's speed table claims for both: stock's tokens and samples
        assert v["tokens_identical"] is True and v["max_abs_diff"] == 0.0, v
    # compile off: no backbone built, nothing compiled (builds: the compiled backbones' build records)
    assert result["compile"] == {"backbone": "off", "vocoder": "off", "recompiles_after_warmup": 0, "builds": []}
    assert result["dtype"] == "fp32" and result["variants"][1]["dtype"] == "fp32"


@pytest.mark.parametrize(("args", "message"), [
    (["--sentences", "0"], "--sentences 0 is out of range"),
    (["--sentences", "many"], "--sentences must be a whole number"),
    (["--num-step", "0"], "num_step 0 is out of range"),
    (["--threads", "0"], "--threads must be at least 1"),
])
def test_cli_bad_input(capsys: pytest.CaptureFixture[str], args: list[str], message: str) -> None:
    assert main(["bench", "--model", "tiny", *args]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1


def test_bench_stream_dialogue_and_meter_modes(tiny_engine: Any, capsys: pytest.CaptureFixture[str],
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """Each mode measures what it says: the stream's every step and its first audio before the end; the
    dialogue's batched lines checked sample for sample (a batch that swaps its lines' seeds is reported);
    the two live meters fed 60 s in 100 ms blocks, then the whole signal once."""
    from omnistudio.audio.loudness import LoudnessMeter
    from omnistudio.bench.dialogue import dialogue_benchmark
    from omnistudio.bench.corpus import reference_prompt
    from omnistudio.engine.engine import Engine
    from omnistudio.engine.sampler import FastSampler

    assert main(["bench", "--model", "tiny", "--device", "cpu", "--stream", "--sentences", "3", "--num-step", "4",
                 "--json"]) == 0
    stream = json.loads(capsys.readouterr().out)
    assert stream["mode"] == "stream" and stream["sentences"] == 3 and stream["failed"] == 0
    assert stream["steps"] == 3 * 4 and stream["audio_s"] > 0
    assert 0 < stream["ttfa_s"] < stream["total_s"]  # three sentences: the first is heard before the last renders
    assert stream["ttfa_ratio"] == pytest.approx(stream["ttfa_s"] / stream["total_s"], abs=1e-3)
    assert stream["rtf"] == pytest.approx(stream["total_s"] / stream["audio_s"], rel=1e-2)

    assert main(["bench", "--model", "tiny", "--device", "cpu", "--dialogue", "--sentences", "4", "--num-step", "4",
                 "--json"]) == 0
    dialogue = json.loads(capsys.readouterr().out)
    assert dialogue["mode"] == "dialogue" and dialogue["batch"] == 2 and dialogue["lines"] == 4
    assert dialogue["max_abs_diff"] == 0.0  # batched items equal the sequential ones
    assert dialogue["throughput_ratio"] == pytest.approx(dialogue["sequential_s"] / dialogue["batched_s"], rel=1e-2)
    # The comparison is real: a batch that swaps its lines' seeds is reported (in process: no second load).
    fast = Engine(tiny_engine.loaded, sampler=FastSampler(tiny_engine.model))
    voices = [reference_prompt(fast, 3.0), reference_prompt(fast, 4.0)]
    real_batch = Engine.synthesize_batch
    with monkeypatch.context() as patch:
        patch.setattr(Engine, "synthesize_batch", lambda self, texts, voices, langs, **options: real_batch(
            self, texts, voices, langs, **{**options, "seeds": options["seeds"][::-1]}))
        swapped = dialogue_benchmark(fast, voices, batch=2, lines=2, repeats=1, num_step=2)
    assert swapped["max_abs_diff"] > 0

    fed: list[int] = []
    real_add = LoudnessMeter.add
    monkeypatch.setattr(LoudnessMeter, "add", lambda self, pcm: fed.append(len(pcm)) or real_add(self, pcm))
    assert main(["bench", "--meter", "--json"]) == 0
    meter = json.loads(capsys.readouterr().out)
    assert meter["mode"] == "meter" and meter["blocks"] == 600 and meter["block_ms"] == 100.0
    assert meter["sample_rate"] == 24_000 and meter["whole_signal_s"] == 60.0
    assert meter["per_block_ms"] > 0 and meter["per_block_ms_with_true_peak"] > 0
    assert fed[:1200] == [2400] * 1200  # 600 blocks of 100 ms at 24 kHz, for each of the two live meters
    assert sum(fed[1200:]) == 60 * 24_000  # then the whole signal, measured once


def test_bench_output_names_commit_machine_and_load(capsys: pytest.CaptureFixture[str]) -> None:
    """Every mode's output carries the provenance block (JSON) or line (printed): commit, CPU, cores, load."""
    import os

    assert main(["bench", "--meter", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    block = result["provenance"]
    assert {"commit", "date", "cpu", "cores", "gpu", "load"} <= set(block)
    assert block["commit"] and block["commit"] != "unknown"  # the tests run in a checkout
    assert block["cpu"] and block["cores"] == os.cpu_count()
    assert len(block["load"]) == 3 and all(x >= 0 for x in block["load"])
    assert main(["bench", "--meter"]) == 0
    out = capsys.readouterr().out.strip().splitlines()
    assert out[-1].startswith(f"measured at commit {block['commit']}") and "cores" in out[-1]
    assert "load average" in out[-1]


def test_bench_modes_bad_input(capsys) -> None:  # noqa: ANN001
    from omnistudio.cli import main

    assert main(["bench", "--model", "tiny", "--dialogue", "--batch", "1"]) == 2
    assert "--batch" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["bench", "--stream", "--dialogue"])


def test_bench_compares_dtypes_in_one_run(tiny_engine: Any, bf16_engine: Any) -> None:
    engines = {"fp32": tiny_engine, "bf16": bf16_engine}
    result = Bench(engines, BenchSettings(sentences=1, variants=["lossless", "default"])).run()
    rows = {v["name"]: v for v in result["variants"]}
    assert list(rows) == ["stock fp32", "lossless fp32", "default fp32", "stock bf16", "lossless bf16", "default bf16"]
    assert result["dtypes"] == ["fp32", "bf16"] and result["baseline"] == "stock fp32"
    assert result["auto_dtype"] == "fp32" and result["default_variant"] == "default fp32"  # capability forced off
    assert [rows[n]["dtype"] for n in rows] == ["fp32"] * 3 + ["bf16"] * 3
    assert rows["stock fp32"]["ratio"] == 1.0 and rows["stock bf16"]["ratio"] != 1.0  # against stock fp32
    for name in ("lossless fp32", "lossless bf16", "default fp32"):  # parity against stock at the same dtype
        assert rows[name]["tokens_identical"] and rows[name]["token_agreement"] == 1.0, name
    assert 0.0 < rows["default bf16"]["token_agreement"] <= 1.0
    # agreement with the baseline (stock fp32): exact for the fp32 lossless set, measured for bf16
    assert rows["stock fp32"]["baseline_agreement"] == rows["lossless fp32"]["baseline_agreement"] == 1.0
    assert 0.0 < rows["stock bf16"]["baseline_agreement"] <= 1.0
    assert result["compile"]["recompiles_after_warmup"] == 0


@pytest.mark.parametrize(("args", "message"), [
    (["--dtypes", "fp32,int4"], "--dtypes fp32,int4: give a comma-separated list"),
    (["--dtypes", "bf16,bf16"], "names a dtype twice"),
    (["--dtypes", "fp32,bf16", "--stream"], "--dtypes compares sentence synthesis"),
])
def test_cli_bad_dtypes(capsys: pytest.CaptureFixture[str], args: list[str], message: str) -> None:
    assert main(["bench", "--model", "tiny", *args]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1


def test_graphs_mode_compares_the_replayed_step_with_the_eager_one(capsys: pytest.CaptureFixture[str]) -> None:
    """``--only graphs``: the step before the static step, the static step eager and replayed (eager on a CPU),
    each with its median and worst step; the replayed rows' tokens are checked against the eager static step's."""
    code = main(["bench", "--model", "tiny", "--device", "cpu", "--sentences", "1", "--only", "graphs",
                 "--threads", "1", "--json"])
    assert code == 0
    result = json.loads(capsys.readouterr().out)
    rows = {v["name"]: v for v in result["variants"]}
    assert list(rows) == ["stock", "stepwise", "static eager", "static replayed"]
    assert rows["static replayed"]["tokens_identical"] is True and rows["static replayed"]["max_abs_diff"] == 0.0
    for row in rows.values():
        assert 0 < row["median_step_ms"] <= row["worst_step_ms"]
        assert 0 < row["first_worst_step_ms"] <= row["worst_step_ms"]
    assert result["graphs"] == {}  # nothing captured without CUDA


def test_vocoder_mode_separates_the_suspects(capsys: pytest.CaptureFixture[str]) -> None:
    """``--vocoder``: the decode right after diffusion and again, cudnn.benchmark on, and a lower precision
    with its distance to fp32 (bf16 on a CPU)."""
    code = main(["bench", "--model", "tiny", "--device", "cpu", "--sentences", "1", "--vocoder", "--threads", "1",
                 "--json"])
    assert code == 0
    result = json.loads(capsys.readouterr().out)
    rows = result["rows"]
    assert set(rows) == {"after_diffusion", "again", "cudnn_benchmark", "bfloat16"}
    assert all(row["median_ms"] > 0 for row in rows.values())
    assert 0 < rows["bfloat16"]["max_abs_diff"] < 1 and 0 < rows["bfloat16"]["worst_snr_db"] < 200
    assert len(result["frames"]) == 1 and result["frames"][0] > 0
    from omnistudio.bench.vocoder import BUCKETS

    assert set(result["buckets"]) == {"float32", "bfloat16"}  # every dtype, each length first and repeated
    for rows in result["buckets"].values():
        assert [r["frames"] for r in rows] == list(BUCKETS) and all(r["first_ms"] > 0 and r["repeat_ms"] > 0 for r in rows)
    assert 0 < result["padding"]["changed_tail_ms"] <= 1000 and result["padding"]["max_abs_diff"] > 0


def test_studio_mode_reports_each_key_to_first_sound(capsys: pytest.CaptureFixture[str]) -> None:
    """``--studio``: the real studio driven through the pilot, each key's rows with finite times for every try
    (the cached rows from the take cache), and the table naming them beside the goals; no time is asserted."""
    import math

    from omnistudio.bench import studio

    assert main(["bench", "--studio", "--model", "tiny", "--device", "cpu", "--tries", "1", "--sentences", "2",
                 "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["mode"] == "studio" and result["tries"] == 1 and result["paragraphs"] == 2
    assert result["rest_s"] == 0.25 and "PlaybackStarted" in result["first_sound"]
    rows = result["rows"]
    assert list(rows) == ["audition_cold", "audition_ab", "slider_cold", "slider_neighbour", "f5"]
    for name, row in rows.items():
        assert row["tries"] == 1 and len(row["key_ms"]) == len(row["asked_ms"]) == 1, name
        for key in ("key_p50_ms", "key_p95_ms", "asked_p50_ms", "asked_p95_ms", *row["key_ms"], *row["asked_ms"]):
            value = row[key] if isinstance(key, str) else key
            assert math.isfinite(value) and value > 0, (name, key)
        assert row["key_p50_ms"] <= row["key_p95_ms"]
    assert rows["audition_ab"]["cache_hits"] == rows["slider_neighbour"]["cache_hits"] == 1  # nothing rendered
    assert rows["audition_cold"]["cache_hits"] == rows["slider_cold"]["cache_hits"] == rows["f5"]["cache_hits"] == 0
    assert [rows[n]["goal_p95_ms"] for n in rows] == [600.0, 150.0, 600.0, 150.0, None]
    assert {rows[n]["goal_on"] for n in ("slider_cold", "slider_neighbour")} == {"rest"}

    studio.print_result(result)
    table = capsys.readouterr().out
    for row in rows.values():
        assert row["label"][:20] in table
    assert "rest" in table and "first sound" in table


def test_stream_input_mode_types_the_script_and_compares_it_with_the_whole(capsys: pytest.CaptureFixture[str]) -> None:
    """``--stream-input`` (issue 51): the script typed in at a rate through an incoming take; the first audio is
    timed from the first sentence's last character, every sentence is heard, and the whole script is timed too."""
    code = main(["bench", "--model", "tiny", "--device", "cpu", "--sentences", "3", "--stream-input", "--rate", "200",
                 "--num-step", "2", "--json"])
    assert code == 0
    result = json.loads(capsys.readouterr().out)
    assert result["mode"] == "stream-input" and result["sentences"] == 3 and result["rate_tokens_s"] == 200
    assert 0 < result["first_audio_after_sentence_p50_ms"] <= result["first_audio_after_sentence_p95_ms"]
    assert result["engine_gaps"] >= 0 and result["writer_waits"] >= 0
    assert 0 < result["whole_ttfa_s"] <= result["whole_total_s"] and result["streamed_total_s"] >= result["typing_s"]


def test_step_profile_splits_a_step_into_parts_that_add_up(capsys: pytest.CaptureFixture[str]) -> None:
    """``probe --profile``: each part of the step timed by hooks; the parts are the step (issue 52)."""
    from omnistudio.bench.probe import main

    assert main(["--profile", "--model", "tiny", "--quantize", "int8"]) == 0
    report = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    parts = report["parts_ms"]
    assert set(parts) in ({"attention projections", "attention core", "mlp", "backbone other", "outside the backbone"},
                          {"attention projections", "mlp", "everything else"})
    assert report["quantisation"] == "int8" and all(parts[k] > 0 for k in ("attention projections", "mlp"))
    assert abs(sum(parts.values()) - report["ms_per_step"]) <= 0.5  # rounded to 0.1 ms each
