"""Bringing a server's engine up: load, prepare the default voice, warm up, publish the link.

Used by ``omnistudio serve`` (in a thread while uvicorn answers 503) and by each Ray Serve replica
(``omnistudio serve --ray``, in the replica's constructor, before it takes traffic)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from omnistudio.errors import first_line
from omnistudio.server.factory import ServerConfig

if TYPE_CHECKING:
    from omnistudio.server.app import ServerState


class Stoppable(Protocol):
    """The ASGI server (uvicorn's, or a Ray replica's stand-in): told to exit when the engine cannot start."""

    should_exit: bool


def start_engine(config: ServerConfig, state: ServerState, server: Stoppable) -> None:
    """Load, warm up, then publish the link (the routes answer 503 until then)."""
    # lazy: start-up (concurrent, numpy, pydantic, pyebur128, rich, scipy)
    from omnistudio.console import status
    from omnistudio.protocol import DEFAULT_VOICE
    from omnistudio.server.pipeline import LocalEngine, parse_voice
    from omnistudio.server.scheduler import BatchingLink
    from omnistudio.voices.session import open_engine, warm_engine

    try:
        with status("loading model") as update:
            engine = open_engine(config.engine, progress=update)
            state.status = "warming"
            # the default voice first, so the warm-up always has a prompt to warm with
            warm_engine(engine, update, voices=[(parse_voice(DEFAULT_VOICE)[0], "en")], warm=config.warm_up,
                        compile_backbone=config.engine.compile, batches=range(1, config.max_batch + 1))
        state.engine = engine
        state.link = BatchingLink(LocalEngine(engine), config.max_batch,
                                  on_pass=lambda size, _s: state.metrics.batch_size.observe(size))
        state.status = "ready"
        # lazy: start-up (rich)
        from omnistudio.console import err_console

        host = f"[{config.host}]" if ":" in config.host else config.host
        # One unwrapped line that names the bound port (`serve --port 0` picks one; tests read it here).
        err_console.print(f"omnistudio: serving {engine.loaded.spec.name} on http://{host}:{config.port} "
                          f"(max batch {config.max_batch}, max queue {config.max_queue})", markup=False, highlight=False,
                          soft_wrap=True)
    except Exception as exc:  # noqa: BLE001 - the server stops with one line
        state.status, state.detail = "failed", first_line(exc)
        server.should_exit = True
