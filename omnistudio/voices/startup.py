"""Engine start for voices: load every saved prompt onto the device, build the canonical duos,
warm the engine up (one sentence, then a batch of three)."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from omnistudio.errors import UserError
from omnistudio.voices.blend import warm_duos
from omnistudio.voices.prompts import LoadReport, Progress, cache_for, log
from omnistudio.voices.roster import Roster, load_roster

if TYPE_CHECKING:
    from omnistudio.engine.engine import Engine


def start_prompts(engine: Engine, roster: Roster | None = None, progress: Progress | None = None,
                  warm: bool = True) -> LoadReport:
    """At engine start: load every ready prompt onto the device, build the canonical duos whose
    prompts are ready, then warm up (B=1, then B=3)."""
    roster = roster or load_roster()
    say = progress or (lambda _m: None)
    say("loading voice prompts")
    report = cache_for(engine).load_all(roster, engine.loaded.fingerprint, engine.loaded.device)
    for error in report.errors:
        log.warning("%s", error)
    report.duos = warm_duos(engine, roster, ready_only=True)  # canonical duos kept on the device
    if warm:
        warm_up(engine, progress=say)
    return report


WARM_UP_BATCH = 3  # the warm-up's batch (one B=3 pass)


def longest_row(engine: Engine) -> int:
    """The longest backbone row this engine's loaded prompts can meet (the engine's allowance for a
    10 s reference, or more where a loaded prompt's reference is longer)."""
    # lazy: start-up (the model stack: omnistudio.engine.model and what it loads)
    from omnistudio.engine.engine import LONGEST_ROW

    cache = cache_for(engine)
    refs = [int(p.ref_audio_tokens.size(-1)) for key in cache.keys() if (p := cache.get(*key)) is not None]
    return LONGEST_ROW + max(0, max(refs, default=0) - 250)


WARM_UP_TEXT = {"en": ["Good evening.", "Here is the news.", "More after the break."],
                "es": ["Buenas noches.", "Estas son las noticias.", "Volvemos enseguida."]}


def warm_up(engine: Engine, progress: Progress | None = None, num_step: int = 4) -> dict[str, float]:
    """One single-sentence pass (B=1) and one three-sentence batch (B=3); returns their seconds."""
    cache = cache_for(engine)
    prompts = [prompt for key in cache.keys()[:3] if (prompt := cache.get(*key)) is not None]
    if not prompts:
        raise UserError("no voice prompt is ready to warm up with: run `omnistudio prevectorize`")
    prompts = (prompts * WARM_UP_BATCH)[:WARM_UP_BATCH]
    texts = [WARM_UP_TEXT[p.lang][i] for i, p in enumerate(prompts)]
    if progress:
        progress("warming up the engine")
    started = time.perf_counter()
    engine.synthesize(texts[0], prompts[0], language=prompts[0].lang, num_step=num_step)
    single = time.perf_counter() - started
    # The engine's own batch path: one B=3 diffusion pass with the fast sampler (per-item seeds);
    # the stock loop renders a batch one line at a time, so that is what it warms.
    engine.synthesize_batch(texts, prompts, [p.lang for p in prompts], num_step=num_step, seeds=[0, 1, 2])
    return {"single_s": single, "batch3_s": time.perf_counter() - started - single}
