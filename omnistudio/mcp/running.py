"""A tool's work on a thread: progress notifications as it goes, and a cancel within one diffusion step.

The work (a take through the pipeline, a check, a voice added) runs on its own thread with a
``threading.Event`` as its cancel flag, which the take pipeline checks before every diffusion step.
Its progress reports come back to the event loop in order and go out as MCP progress notifications.
When the client cancels the request (``notifications/cancelled``), the SDK cancels the tool's task:
the flag is set, the thread is waited for (it stops at the next diffusion step, nothing written),
and a log message says at which diffusion step the cancel came and where the render stopped.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import anyio

T = TypeVar("T")
Report = Callable[[float, float | None, str], None]  # progress, total, message


@dataclass
class _Outcome(Generic[T]):
    value: T | None = None
    error: BaseException | None = None


class Steps:
    """Where the work's diffusion steps are read (a take's stream counts them); 0 until it renders."""

    def __init__(self) -> None:
        self.read: Callable[[], int] = lambda: 0


async def run_work(ctx: Any, work: Callable[[threading.Event, Report, Steps], T], what: str) -> T:
    """Run ``work(cancel, report, steps)`` on a thread; its reports become progress notifications of
    ``ctx``'s request. A cancelled request sets ``cancel``, waits for the work to stop, and logs where it stopped."""
    loop = asyncio.get_running_loop()
    events: asyncio.Queue[tuple[float, float | None, str] | None] = asyncio.Queue()
    cancel = threading.Event()
    steps = Steps()
    outcome: _Outcome[T] = _Outcome()

    def report(progress: float, total: float | None, message: str) -> None:
        loop.call_soon_threadsafe(events.put_nowait, (progress, total, message))

    def target() -> None:
        try:
            outcome.value = work(cancel, report, steps)
        except BaseException as exc:  # noqa: BLE001 - handed to the event loop's side
            outcome.error = exc
        finally:
            loop.call_soon_threadsafe(events.put_nowait, None)

    threading.Thread(target=target, name=f"omnistudio-mcp-{what}", daemon=True).start()
    try:
        while (event := await events.get()) is not None:
            await ctx.report_progress(*event)
    except anyio.get_cancelled_exc_class():
        cancel.set()
        asked = steps.read()
        with anyio.CancelScope(shield=True):
            while await events.get() is not None:
                pass
            await ctx.info(f"{what} cancelled at diffusion step {asked}; it stopped at diffusion step "
                           f"{steps.read()}, nothing written")
        raise
    if outcome.error is not None:
        raise outcome.error
    return outcome.value  # type: ignore[return-value]
