"""A tool's work on a thread: progress notifications as it goes, and a cancel within one diffusion step.

The work (a take through the pipeline, a check, a voice added) runs on its own thread with a
``threading.Event`` as its cancel flag, which the take pipeline checks before every diffusion step.
Its progress reports come back to the event loop in order and go out as MCP progress notifications.
When the client cancels the request (``notifications/cancelled``), the SDK cancels the tool's task:
the flag is set, the thread is waited for (it stops at the next diffusion step, nothing written),
and a log message says at which diffusion step the cancel came and where the render stopped. Over HTTP
a client that goes away sends no such notification: the request's connection is watched (as
``/v1/audio/speech`` watches its own), and a closed one sets the flag too.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar, cast

import anyio

T = TypeVar("T")
log = logging.getLogger(__name__)
WATCH_S = 0.25  # how often an HTTP tool call's connection is looked at
_QUIET = object()  # no event within WATCH_S
Report = Callable[[float, float | None, str], None]  # progress, total, message


@dataclass
class _Outcome(Generic[T]):
    value: T | None = None
    error: BaseException | None = None


class Steps:
    """Where the work's diffusion steps are read (a take's stream counts them); 0 until it renders."""

    def __init__(self) -> None:
        self.read: Callable[[], int] = lambda: 0


def _disconnected(ctx: Any) -> Callable[[], Any] | None:
    """``request.is_disconnected`` of the HTTP request a tool call came in on (None over stdio)."""
    try:
        request = getattr(ctx.request_context, "request", None)
    except (AttributeError, ValueError):  # outside a request
        return None
    check = getattr(request, "is_disconnected", None)
    return check if callable(check) else None


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
    gone = _disconnected(ctx)
    watch_at = loop.time() + WATCH_S
    try:
        while True:
            event: tuple[float, float | None, str] | object | None
            try:
                event = await asyncio.wait_for(events.get(), WATCH_S) if gone is not None else await events.get()
            except TimeoutError:
                event = _QUIET
            if gone is not None and loop.time() >= watch_at:  # every WATCH_S, busy or quiet
                watch_at = loop.time() + WATCH_S
                if not cancel.is_set() and await gone():
                    cancel.set()  # the work stops within a diffusion step; its end comes as an event
                    log.info("%s: the client went away; cancelled at diffusion step %d", what, steps.read())
            if event is _QUIET:
                continue
            if event is None:
                break
            assert isinstance(event, tuple)
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
    return cast(T, outcome.value)  # set when the work returned (no error)
