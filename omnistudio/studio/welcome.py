"""First start: the example script an empty editor gets, the anchor selected, the demo banner, and
which model the studio opens when none is named (the real one; ``tiny`` only when the hub cannot be
reached and nothing is cached)."""

from __future__ import annotations

import os
import socket
from collections.abc import Callable, Sequence
from urllib.parse import urlparse

from omnistudio.config import DEFAULT_MODEL

# Two anchors, one blend tag, English and Spanish: F5 plays it as is.
EXAMPLE_SCRIPT = ("[ruby] Good evening. Here are tonight's headlines.\n"
                  "[valentina:es] Buenas noches. Estas son las noticias de hoy.\n"
                  "[ruby+valentina@0.6:en] And now, the weather, read by both of us at once.\n")
FIRST_ANCHOR = "ruby"

DEMO_BANNER = ("DEMO: the model hub cannot be reached, so the studio runs on 'tiny', a random-weight model "
               "that makes noise, not speech. For real voices: download k2-fsa/OmniVoice where the hub is "
               "reachable (huggingface-cli download k2-fsa/OmniVoice) and run `omnistudio --model DIR` "
               "(or set OMNISTUDIO_MODEL=DIR).")


def first_anchor(ids: Sequence[str]) -> str | None:
    """The anchor selected on first start: the example's first speaker if the roster has it."""
    if FIRST_ANCHOR in ids:
        return FIRST_ANCHOR
    return ids[0] if ids else None


def hub_reachable(timeout: float = 3.0) -> bool:
    """Whether the model hub answers a TCP connection (HF_HUB_OFFLINE=1: never)."""
    if os.environ.get("HF_HUB_OFFLINE", "").strip() not in ("", "0"):
        return False
    url = urlparse(os.environ.get("HF_ENDPOINT") or "https://huggingface.co")
    port = url.port or (443 if url.scheme == "https" else 80)
    try:
        with socket.create_connection((url.hostname or "huggingface.co", port), timeout=timeout):
            return True
    except OSError:
        return False


def hub_cached(repo: str) -> bool:
    try:
        # lazy: start-up (huggingface_hub)
        from huggingface_hub import snapshot_download

        snapshot_download(repo, local_files_only=True)
        return True
    except Exception:  # noqa: BLE001 - not cached (or no hub library): not usable offline
        return False


def studio_model(requested: str | None, reachable: Callable[[], bool] = hub_reachable,
                 cached: Callable[[str], bool] = hub_cached) -> tuple[str, str | None]:
    """(model to open, banner or None). ``--model`` / OMNISTUDIO_MODEL are used as given; with
    neither, the real model (downloaded with progress on first use), or ``tiny`` plus the demo banner
    when the hub cannot be reached and the model is not cached."""
    chosen = requested or os.environ.get("OMNISTUDIO_MODEL")
    if chosen:
        return chosen, None
    if cached(DEFAULT_MODEL) or reachable():
        return DEFAULT_MODEL, None
    return "tiny", DEMO_BANNER
