"""Where one diffusion step's time goes on this machine (issue 52): the backbone's attention projections,
its attention core (scores, softmax, rotary, the cache), its MLP, the rest of the backbone (norms,
embeddings), and everything outside the backbone (the sampler, the audio heads' logits, Python).

Each part is timed by forward hooks on the backbone's modules (a synchronised device on CUDA), summed
over a render of one sentence and divided by its steps; the first render (two steps) warms the kernels.
Where the static step runs the backbone itself (engine/step_backbone.py: no module call for the whole
backbone or its attention), only the projections and the MLP are split out, the rest is "everything else".

    python -m omnistudio.bench.probe --profile --model full --device cpu [--dtype fp32 --quantize int8]
"""

from __future__ import annotations

import time
from typing import Any

from omnistudio.bench.corpus import reference_prompt
from omnistudio.engine.calibration import TEXT  # the sentence the calibration times
PROJECTIONS = ("q_proj", "k_proj", "v_proj", "o_proj")


def step_profile(engine: Any, num_step: int = 6) -> dict[str, Any]:
    """Milliseconds per step of each part of ``engine``'s diffusion step, and each part's share."""
    # lazy: start-up (torch)
    import torch

    cuda = str(engine.model.device).startswith("cuda")
    sums: dict[str, float] = {}
    llm = engine.model.llm
    parts = [("backbone", llm)] + [("attention", layer.self_attn) for layer in llm.layers]
    parts += [("mlp", layer.mlp) for layer in llm.layers]
    parts += [("projections", getattr(layer.self_attn, p)) for layer in llm.layers for p in PROJECTIONS]
    started: dict[int, float] = {}

    def now() -> float:
        if cuda:
            torch.cuda.synchronize()
        return time.perf_counter()

    def timed(name: str) -> tuple[Any, Any]:
        def pre(module: Any, *_: Any) -> None:
            started[id(module)] = now()

        def post(module: Any, *_: Any) -> None:
            sums[name] = sums.get(name, 0.0) + now() - started.pop(id(module))
        return pre, post

    hooks = []
    for name, module in parts:
        pre, post = timed(name)
        hooks += [module.register_forward_pre_hook(pre), module.register_forward_hook(post)]
    prompt = reference_prompt(engine)
    try:
        engine.render_tokens([TEXT], [prompt], ["en"], num_step=2, seeds=[1])  # warm-up
        sums.clear()
        begin = now()
        engine.render_tokens([TEXT], [prompt], ["en"], num_step=num_step, seeds=[1])
        total = now() - begin
    finally:
        for hook in hooks:
            hook.remove()
    ms = {name: sums.get(name, 0.0) / num_step * 1e3 for name in ("backbone", "attention", "mlp", "projections")}
    step = total / num_step * 1e3
    if ms["backbone"] and ms["attention"]:  # the backbone's own forward: every part has its module
        split = {"attention projections": ms["projections"], "attention core": ms["attention"] - ms["projections"],
                 "mlp": ms["mlp"], "backbone other": ms["backbone"] - ms["attention"] - ms["mlp"],
                 "outside the backbone": step - ms["backbone"]}
    else:  # the static step's backbone calls the projections and the MLP alone (engine/step_backbone.py)
        split = {"attention projections": ms["projections"], "mlp": ms["mlp"],
                 "everything else": step - ms["projections"] - ms["mlp"]}
    return {"model": engine.loaded.spec.name, "device": str(engine.model.device), "dtype": engine.loaded.dtype_name,
            "quantisation": engine.loaded.quantize, "num_step": num_step, "ms_per_step": round(step, 1),
            "parts_ms": {k: round(v, 1) for k, v in split.items()},
            "parts_share": {k: round(v / step, 3) if step else None for k, v in split.items()}}
