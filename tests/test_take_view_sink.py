"""The take strip's sink (studio/take_view.py) on its own: once a take has rendered, the finishing pass
draws the samples an export writes, and gives way at once to a command waiting on the engine thread."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from omnistudio.audio.finishing import FinishingOptions, finished_blocks
from omnistudio.studio.take_view import TakeView, block_peaks

RATE = 24_000


def _take(view: TakeView, preempted=None):  # noqa: ANN001, ANN202
    """Queue a 40-sentence take through the view's sink, end it; (sink calls of ``preempted``, chunks)."""
    rng = np.random.default_rng(5)
    chunks = [((0.1 * rng.standard_normal(RATE)).astype(np.float32), 0.3, i, True) for i in range(40)]
    sink = view.sink(SimpleNamespace(ring=SimpleNamespace(total_written=0)), preempted=preempted)
    sink.begin(SimpleNamespace(finishing=FinishingOptions()))
    for pcm, *_rest in chunks:
        sink.tail(pcm)
    assert view.shape.live and view.shape.frames == 40 * RATE
    sink.end(SimpleNamespace(chunks=chunks, sample_rate=RATE))
    return chunks


def test_the_finished_shape_is_the_exports_samples() -> None:
    view = TakeView()
    chunks = _take(view)
    with finished_blocks(chunks, RATE, FinishingOptions()) as (blocks, _spans):
        want = block_peaks(blocks)
    assert not view.shape.live
    assert np.array_equal(view.shape.peaks, want)


def test_a_waiting_command_stops_the_finishing_pass_at_once() -> None:
    view = TakeView()
    asked: list[int] = []

    def preempted() -> bool:  # a command arrives while the pass reads its second block
        asked.append(1)
        return len(asked) >= 2

    _take(view, preempted)
    assert len(asked) == 2  # given up at the next block, not at the end of the take
    assert view.shape.live and view.shape.frames == 40 * RATE  # the live shape stays


def test_a_background_wake_up_preempts_nothing_a_users_command_does() -> None:
    """The flag the strip's pass and the background builds check: the builds' own wake-up command (put by
    the UI when the script changes) is not a reason to give up; a play, export or takes command is."""
    from pathlib import Path

    from omnistudio.studio import commands as cmd
    from omnistudio.studio.prebuild import Preempted
    from omnistudio.take.options import TakeOptions

    commands = cmd.CommandQueue()
    flag = Preempted(commands)
    assert not flag.is_set()
    commands.put(cmd.BuildAhead())
    assert not flag.is_set()
    commands.put(cmd.Export((), Path("x.wav"), TakeOptions(), None, None))
    assert flag.is_set()
    assert isinstance(commands.get(), cmd.BuildAhead) and flag.is_set()  # the export still waits
    assert isinstance(commands.get(), cmd.Export) and not flag.is_set()  # taken: nothing waits
