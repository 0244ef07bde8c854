"""The gateway running: its ports, its links to the NCS and its render thread, until a signal stops it."""

from __future__ import annotations

import asyncio
import logging
import signal
from collections.abc import Callable
from typing import TYPE_CHECKING

from omnistudio.mos.gateway import Gateway, MosConfig
from omnistudio.mos.network import listen
from omnistudio.mos.renderer import StoryRenderer

if TYPE_CHECKING:
    from omnistudio.captions.formats import CaptionOptions
    from omnistudio.take.link import EngineLink
    from omnistudio.take.options import TakeOptions

log = logging.getLogger("omnistudio.mos")


def run(config: MosConfig, link: EngineLink, options: TakeOptions, captions: CaptionOptions | None = None,
        ready: Callable[[list[int]], None] | None = None) -> None:
    """Serve until SIGINT or SIGTERM; ``ready(ports)`` is called once every port listens."""
    asyncio.run(_serve(config, link, options, captions, ready))


async def _serve(config: MosConfig, link: EngineLink, options: TakeOptions, captions: CaptionOptions | None,
                 ready: Callable[[list[int]], None] | None) -> None:
    config.delivery.mkdir(parents=True, exist_ok=True)
    gateway = Gateway(config, lambda gate: StoryRenderer(link, options, config.delivery, gate.lookup, gate.rendered,
                                                         captions, config.suffix))
    gateway.loop = asyncio.get_running_loop()
    renderer = gateway.renderer
    servers = [await listen(config.host, port, name, gateway.handle)
               for name, port in (("lower", config.lower), ("upper", config.upper), ("query", config.query))]
    links = [asyncio.create_task(gateway.lower.run()), asyncio.create_task(gateway.upper.run())]
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    gateway.resume()
    if ready is not None:
        ready([server.port for server in servers])
    try:
        await stop.wait()
    finally:
        log.info("stopping: %d stories waited to render", len(renderer.pending()))
        for server in servers:
            await server.close()  # the NCS's connections end here, not in asyncio.run's teardown
        for task in links:
            task.cancel()
        await asyncio.gather(*links, return_exceptions=True)  # a cancelled link is expected, not logged
        await asyncio.to_thread(renderer.close)
        gateway.store.close()
