"""The whole-take routes: ``POST /tts/generate`` (a Broadcast Wave: loudness in headers and in its ``bext``,
a cue marker per sentence) and ``POST /tts/generate-shm``
(the samples in /dev/shm, the figures in JSON and, with ``timestamps``, every sentence's span and words)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response

from omnistudio import protocol as wire
from omnistudio.audio import bwf
from omnistudio.audio.bwf import LoudnessFields
from omnistudio.audio.dsp import SentenceSpan
from omnistudio.audio.loudness import measure
from omnistudio.errors import UserError
from omnistudio.server import encode, jobs
from omnistudio.server.app import finish, first_events, link_info, read_json, server_state, start_take
from omnistudio.server.serving import Done, TakeRun
from omnistudio.server.timestamps import sentence_time
from omnistudio.take.delivery import broadcast_info

router = APIRouter()


async def _whole_take(request: Request, req: wire.GenerateRequest, timed: bool = False) -> tuple[TakeRun, Done]:
    """The request's take rendered whole: its run and its end (the samples, the figures, the sentences;
    ``timed``: each sentence's span even when the request asks for no timestamps)."""
    state = server_state(request)
    job = jobs.generate_job(req)
    if timed and job.timestamps is None:
        job = replace(job, timestamps="sentence")
    run = await start_take(state, request, job)
    seen, _ = await first_events(state, request, run, (Done,))
    finish(state, run)
    done = seen[-1]
    assert isinstance(done, Done)  # first_events stops at the first Done (a failure raised before it)
    return run, done


@router.post("/tts/generate")
async def generate(request: Request) -> Response:
    req = await read_json(request, wire.GenerateRequest)
    if req.timestamps is not None:
        raise UserError("timestamps: /tts/generate answers a WAV alone; ask /tts/generate-shm or /v1/audio/speech "
                        "for the sentence and word times")
    run, done = await _whole_take(request, req, timed=True)
    samples = encode.pcm16(done.pcm)
    report = measure(np.frombuffer(samples, "<i2") / 32768.0, run.link.sample_rate)  # of the samples sent
    body = bwf.wav_file(samples, _broadcast(req, done, link_info(server_state(request))), run.link.sample_rate,
                        loudness=LoudnessFields.of(report))
    headers = {"X-TTS-Loudness-LUFS": _header(report.integrated_lufs),
               "X-TTS-True-Peak-dB": _header(report.true_peak_dbtp),
               "X-TTS-Crest-Factor-dB": _header(report.crest_factor_db),
               "X-TTS-RTF": _header(done.summary["rtf"] or 0.0),
               "X-TTS-TTFA-s": _header(done.summary["ttfa_s"])}
    return Response(body, media_type="audio/wav", headers=headers)


@router.post("/tts/generate-shm")
async def generate_shm(request: Request) -> JSONResponse:
    # lazy: looked up when called (tests replace it)
    from omnistudio.audio.shm import check_shm_name, check_shm_target, write_shm

    req = await read_json(request, wire.GenerateRequest)
    name = check_shm_name(req.name)
    check_shm_target(name)  # before anything renders: no /dev/shm, a symlink or another user's file there
    run, done = await _whole_take(request, req)
    path = write_shm(name, done.pcm, run.link.sample_rate)
    mode = req.timestamps
    times = [sentence_time(t, mode) for t in done.sentences] if mode is not None else None
    body = wire.ShmTake(**{**done.summary, "name": name, "path": str(path), "frames": int(len(done.pcm)),
                           "sample_rate": run.link.sample_rate, "sentence_times": times})
    return JSONResponse(body.model_dump(exclude={"sentence_times"} if mode is None else None))


def _broadcast(req: wire.GenerateRequest, done: Done, engine: dict[str, object]) -> bwf.Broadcast:
    """What the WAV says about itself, as `render -o` of the same script says it (take.delivery.describe:
    a cue marker per sentence, a region per story, the take's and the engine's fields), and how its loudness
    was measured."""

    spans = [SentenceSpan(k, t.start, t.end, t.index) for k, t in enumerate(done.sentences)]
    info = broadcast_info(done.rows, spans, done.options, engine)
    return replace(info, user=(*info.user, *((("profile", req.profile),) if req.profile else ()),
                               ("loudness_measurement", "dual-mono")))  # one channel, as heard on two loudspeakers


def _header(value: float) -> str:
    return f"{value:.3f}" if value == value and abs(value) != float("inf") else "-inf"
