"""Which engine a command renders through: the model in this process (``--model/--device/--dtype``,
``--sampler``), or a speech server (``--server/--api-key-file``).

The choice is made here, where a client is built, and nowhere else: the take pipeline, the studio and
the commands only ever see an :class:`~omnistudio.take.link.EngineLink`.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, TypedDict, Unpack

from omnistudio.engine.settings import EngineConfig
from omnistudio.errors import UserError

if TYPE_CHECKING:
    from omnistudio.client.engine import RemoteEngine
    from omnistudio.engine.engine import Engine
    from omnistudio.take.link import EngineLink


def add_model_options(parser: argparse.ArgumentParser) -> None:
    """--model/--device/--dtype, shared by every command that loads a model."""
    parser.add_argument("--model", help="hub id, checkpoint directory, or tiny|mid|full "
                        "(random weights: noise, not speech); default $OMNISTUDIO_MODEL or k2-fsa/OmniVoice")
    parser.add_argument("--device", help="cpu, cuda, cuda:N or mps (default: cuda > mps > cpu)")
    parser.add_argument("--dtype", help="backbone dtype: auto (default), fp32, bf16 or fp16; auto is fp16 on "
                        "CUDA; on a CPU, the fastest measured at the model's first start there (bf16 only where "
                        "the CPU has AMX-BF16 or AVX512-BF16; tiny: that rule, unmeasured); the vocoder stays fp32")
    parser.add_argument("--quantize", metavar="none|int8|auto", help="int8: the backbone's linear layers in int8 "
                        "(CPU only, refused without AVX2/VNNI/AMX int8; opt-in; quality on the real weights "
                        "unmeasured); auto: int8 where the CPU calibration finds it faster; default none; "
                        "bench takes a list, e.g. none,int8")


def add_server_options(parser: argparse.ArgumentParser) -> None:
    """--server/--api-key-file: render on an `omnistudio serve` instead of loading a model here."""
    parser.add_argument("--server", metavar="URL", help="render on the speech server at URL "
                        "(http://HOST:PORT, started with `omnistudio serve`); no model is loaded here")
    parser.add_argument("--api-key-file", type=Path, metavar="FILE", help="file holding the server's API key "
                        "(sent as Authorization: Bearer)")


class EngineSettings(TypedDict, total=False):
    """:class:`EngineConfig`'s fields, any of them: what a command decides itself in ``engine_config``."""

    model: str | None
    device: str | None
    dtype: str | None
    sampler: str
    quantize: str
    compile: bool | None
    threads: int | None


def engine_config(args: argparse.Namespace, **given: Unpack[EngineSettings]) -> EngineConfig:
    """``--model/--device/--dtype/--quantize/--sampler`` as the one engine settings value (``given``: settings
    the command decides itself, e.g. the sampler of a bench row); checked by name, nothing loaded."""
    values: EngineSettings = {"model": getattr(args, "model", None), "device": getattr(args, "device", None),
                              "dtype": getattr(args, "dtype", None),
                              "quantize": getattr(args, "quantize", None) or "none",
                              "sampler": getattr(args, "sampler", None) or "fast", **given}
    return EngineConfig(**values).checked()


def engine_from_args(args: argparse.Namespace, progress: Callable[[str], None] | None = None) -> Engine:
    """The flags' engine, loaded (through the core's open_engine)."""
    # lazy: start-up (numpy)
    from omnistudio.voices.session import open_engine

    return open_engine(engine_config(args), progress=progress)


def remote_link(server: str | None, api_key_file: Path | str | None = None) -> RemoteEngine | None:
    """A RemoteEngine for ``server`` (checked, key read), or None when no server is given."""
    # lazy: start-up (httpx, numpy, pydantic, pyebur128, scipy, urllib, websockets)
    from omnistudio.client.connection import parse_server_url, read_api_key
    from omnistudio.client.engine import RemoteEngine

    if not server:
        if api_key_file:
            raise UserError("--api-key-file needs --server URL")
        return None
    return RemoteEngine(parse_server_url(server), read_api_key(api_key_file))


def check_link_args(args: argparse.Namespace) -> RemoteEngine | None:
    """The cheap checks of --server/--api-key-file (before anything loads); the remote link or None."""
    link = remote_link(getattr(args, "server", None), getattr(args, "api_key_file", None))
    if link is not None and getattr(args, "model", None):
        raise UserError("give either --server (the server's model renders) or --model, not both")
    return link


def open_link(args: argparse.Namespace, progress: Callable[[str], None] | None = None) -> EngineLink:
    """The link a command renders through: the server's when --server is given, else a local engine."""
    link = check_link_args(args)
    if link is not None:
        if progress is not None:
            progress(f"connecting to {link.address}")
        info = link.wait_ready(progress)  # now: an unreachable server or a wrong key is one line, before any work
        if progress is not None:
            progress(f"server {link.address}: {info.model} on {info.device}")
        return link
    # lazy: start-up (numpy, pyebur128, scipy)
    from omnistudio.take.link import LocalEngine

    return LocalEngine(engine_from_args(args, progress=progress))
