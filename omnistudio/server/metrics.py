"""Prometheus figures of one server (its own registry, so several servers in one process do not mix)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, disable_created_metrics, generate_latest

if TYPE_CHECKING:
    from omnistudio.server.scheduler import BatchingLink
    from omnistudio.take.pipeline import TakeCache

disable_created_metrics()  # type: ignore[no-untyped-call]  # no *_created series: they only add noise

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.requests = Counter("omnistudio_requests", "Requests by route and status", ["route", "status"], registry=r)
        self.queue_depth = Gauge("omnistudio_queue_depth", "Requests admitted and not finished", registry=r)
        self.batch_size = Histogram("omnistudio_batch_size", "Items per diffusion pass",
                                    buckets=(1, 2, 3, 4, 6, 8, 12, 16), registry=r)
        self.ttfa = Histogram("omnistudio_ttfa_seconds", "Time to first audio",
                              buckets=(0.05, 0.1, 0.2, 0.3, 0.5, 1, 2, 5, 10, 30), registry=r)
        self.rtf = Histogram("omnistudio_rtf", "Wall time over audio time per request",
                             buckets=(0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10), registry=r)
        self.audio_seconds = Counter("omnistudio_audio_seconds", "Seconds of audio served", registry=r)
        self.cancelled = Counter("omnistudio_cancelled_requests", "Requests cancelled (client gone, "
                                 "cancel message, time limit)", registry=r)
        self.steps_after_cancel = Gauge("omnistudio_steps_after_cancel", "Diffusion steps started after a "
                                        "cancel was asked, summed (0: every cancel stopped within one step)",
                                        registry=r)
        self.cache_hits = Gauge("omnistudio_take_cache_hits", "Sentences served from the take cache", registry=r)
        self.cache_bytes = Gauge("omnistudio_take_cache_bytes", "Audio held by the take cache", registry=r)
        self.cancelled_passes = Gauge("omnistudio_cancelled_passes", "Diffusion passes stopped by a cancel",
                                      registry=r)

    def render(self, link: BatchingLink | None, active: int, cache: TakeCache | None = None) -> bytes:
        self.queue_depth.set(active)
        if cache is not None:
            self.cache_hits.set(cache.hits)
            self.cache_bytes.set(cache.bytes)
        if link is not None:
            self.steps_after_cancel.set(link.stats.steps_after_cancel)
            self.cancelled_passes.set(link.stats.cancelled_passes)
        return generate_latest(self.registry)
