"""`omnistudio mos`: a MOS 2.8.5 device for a newsroom computer system (profiles 0, 1, 2, 4): running orders
in, each story's audio out to a delivery folder and back to the NCS as a MOS object (docs/mos.md).

Every option may also come from ``--config FILE.toml`` (the same names, ``_`` for ``-``); a flag given on
the command line wins."""

from __future__ import annotations

import argparse
import logging
import tomllib
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from omnistudio.commands.flags.frontend import add_frontend_options
from omnistudio.commands.flags.take import take_options
from omnistudio.errors import UserError
from omnistudio.flags.engine import add_model_options, add_server_options
from omnistudio.flags.synthesis import add_synthesis_options
from omnistudio.mos.store import Rundowns
from omnistudio.mos.wire import MosError
from omnistudio.voices.resolve import parse_voice

if TYPE_CHECKING:
    from omnistudio.mos.gateway import MosConfig

# option: (default, kind) for what a config file may hold
SETTINGS: Mapping[str, object] = {"mos_id": None, "ncs_id": None, "ncs_host": "127.0.0.1",
                                  "ncs_ports": "10540,10541", "host": "127.0.0.1", "ports": "10540,10541,10542",
                                  "delivery": None, "state": None, "heartbeat": 10.0, "voice": None, "lang": "en",
                                  "format": "wav"}


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    # lazy: start-up (numpy, pyebur128, scipy)
    from omnistudio.commands.flags.captions import add_caption_options
    from omnistudio.commands.flags.finishing import add_finishing_options

    p = sub.add_parser("mos", help="MOS device for a newsroom system: rundowns in, each story's audio out")
    p.add_argument("--config", type=Path, metavar="FILE.toml", help="the options below as TOML (flags win)")
    p.add_argument("--mos-id", help="this device's MOS ID (e.g. omnistudio.tts.newsroom)")
    p.add_argument("--ncs-id", help="the NCS's MOS ID")
    p.add_argument("--ncs-host", help="the NCS's address, for the messages this device starts (default 127.0.0.1)")
    p.add_argument("--ncs-ports", metavar="LOWER,UPPER", help="the NCS's lower and upper ports (default 10540,10541)")
    p.add_argument("--host", help="address to listen on (default 127.0.0.1: this machine only; give the "
                   "interface the NCS reaches, e.g. 0.0.0.0)")
    p.add_argument("--ports", metavar="LOWER,UPPER,QUERY", help="ports to listen on (default 10540,10541,10542)")
    p.add_argument("--delivery", type=Path, metavar="DIR", help="where each story's audio is written "
                   "(DIR/RUNNING_ORDER/STORY.wav with its sidecar)")
    p.add_argument("--state", type=Path, metavar="FILE", help="the running-order store (default "
                   "DIR/.omnistudio-mos.db, SQLite)")
    p.add_argument("--heartbeat", type=float, metavar="S", help="seconds between heartbeats to the NCS (default 10)")
    p.add_argument("--voice", help="anchor for stories whose metadata and slug name none (e.g. ruby, ruby+storm@0.7)")
    p.add_argument("--lang", help="language of stories that name none: en or es (default en)")
    p.add_argument("--format", choices=["wav", "flac", "mp3", "m4a"], help="delivered files (default wav: "
                   "Broadcast Wave)")
    add_synthesis_options(p, "base seed of every story (each sentence's seed is a hash of it, the text and voice)")
    p.set_defaults(batch=1)
    add_finishing_options(p)
    add_caption_options(p)
    add_frontend_options(p)
    add_model_options(p)
    add_server_options(p)


def settings(args: argparse.Namespace) -> dict[str, Any]:
    """The options: the config file's, then the flags given; checked, one line each."""
    values: dict[str, Any] = dict(SETTINGS)  # the flags' and the config file's (TOML: any type), checked below
    if args.config is not None:
        values.update(_config_file(args.config))
    for key in SETTINGS:
        given = getattr(args, key, None)
        if given is not None:
            values[key] = given
    for key in ("mos_id", "ncs_id", "delivery"):
        if not values[key]:
            raise UserError(f"--{key.replace('_', '-')} is required (or {key} in --config)")
    for key in ("mos_id", "ncs_id"):
        if len(str(values[key])) > 128 or not str(values[key]).strip():
            raise UserError(f"--{key.replace('_', '-')} must be 1 to 128 characters")
    if not 0.5 <= float(values["heartbeat"]) <= 300:
        raise UserError(f"--heartbeat {values['heartbeat']} is out of range 0.5..300 s")
    return values


def _config_file(path: Path) -> dict[str, object]:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UserError(f"--config {path} does not exist") from None
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise UserError(f"--config {path} is not a TOML file ({str(exc).splitlines()[0]})") from None
    unknown = sorted(set(data) - set(SETTINGS))
    if unknown:
        raise UserError(f"--config {path}: unknown setting '{unknown[0]}' (known: {', '.join(SETTINGS)})")
    return dict(data)


def _ports(value: object, count: int, flag: str) -> list[int]:
    parts = str(value).split(",")
    try:
        ports = [int(p) for p in parts]
    except ValueError:
        raise UserError(f"{flag} {value}: give {count} port numbers separated by commas") from None
    if len(ports) != count or any(not 0 <= p <= 65535 for p in ports):
        raise UserError(f"{flag} {value}: give {count} port numbers in 0..65535 separated by commas")
    return ports


def run(args: argparse.Namespace) -> int:
    # lazy: start-up (asyncio, numpy, rich); looked up when called (tests replace it)
    from omnistudio.commands.flags.captions import caption_options
    from omnistudio.console import status
    from omnistudio.flags.engine import check_link_args, open_link
    from omnistudio.mos.gateway import MosConfig
    from omnistudio.mos.service import run as serve

    values = settings(args)
    if getattr(args, "shm", None):
        raise UserError("--shm hands one take to one process; the MOS gateway delivers a file per story")
    lower, upper, query = _ports(values["ports"], 3, "--ports")
    ncs_lower, ncs_upper = _ports(values["ncs_ports"], 2, "--ncs-ports")
    delivery = Path(values["delivery"])
    if delivery.exists() and not delivery.is_dir():
        raise UserError(f"--delivery {delivery} is a file, not a folder")
    config = MosConfig(str(values["mos_id"]), str(values["ncs_id"]), str(values["ncs_host"]), ncs_lower, ncs_upper,
                       str(values["host"]), lower, upper, query, delivery,
                       Path(values["state"]) if values["state"] else None, float(values["heartbeat"]),
                       "." + str(values["format"]))
    args.lang = values["lang"]
    options = take_options(args)
    if values["voice"]:
        ref, lang = parse_voice(str(values["voice"]))
        options = replace(options, voice=ref, lang=lang or options.lang)
    captions = caption_options(args)

    try:
        Rundowns(config.store, config.legacy_store).load().close()  # an unreadable store: one line, before the model
    except MosError as exc:
        raise UserError(str(exc)) from None
    check_link_args(args)
    _check_ports(config)
    with status("loading model") as update:
        link = open_link(args, progress=update)
    log = logging.getLogger("omnistudio.mos")
    log.setLevel(logging.INFO)

    def ready(ports: list[int]) -> None:
        print(f"omnistudio mos: {config.mos_id} listening on {config.host} ports {','.join(map(str, ports))}; "
              f"the NCS {config.ncs_id} at {config.ncs_host}:{ncs_lower},{ncs_upper}; delivering to {delivery}",
              flush=True)

    try:
        serve(config, link, options, captions, ready)
    finally:
        link.close()
    return 0


def _check_ports(config: MosConfig) -> None:
    # lazy: looked up when called (tests replace it)
    from omnistudio.commands.serve import check_port

    for port in (config.lower, config.upper, config.query):
        if port:
            check_port(config.host, port)
