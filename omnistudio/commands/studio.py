"""`omnistudio studio` (also `omnistudio` with no subcommand): open the Textual studio."""

from __future__ import annotations

import argparse
from pathlib import Path

from omnistudio.commands.studio_terminal import library_output_to_log
from omnistudio.config import locations
from omnistudio.engine.settings import EngineConfig
from omnistudio.flags.engine import add_model_options, add_server_options, check_link_args, remote_link
from omnistudio.studio.settings import load_settings


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("studio", help="open the studio (the default when no command is given)")
    p.add_argument("--audio", choices=["auto", "device", "virtual"], default="auto",
                   help="auto: the sound card if there is one, else play silently (default); "
                        "virtual: never open a device")
    p.add_argument("--project", type=Path, metavar="NAME.omniproj",
                   help="open a project: its script, every take of every sentence, the chosen ones")
    add_model_options(p)
    add_server_options(p)


def run(args: argparse.Namespace) -> int:
    # lazy: start-up (the model stack, textual, numpy, scipy: the studio's command alone needs them)
    from omnistudio.app import StudioApp
    from omnistudio.engine.model import check_model_dir, pick_device, resolve_model
    from omnistudio.studio.controller import Studio
    from omnistudio.studio.welcome import studio_model

    settings, warning = load_settings()
    # The engine side is chosen here and nowhere else: a speech server (--server, or the saved setting
    # when no --model is given) or the model in this process. The studio only sees the link.
    check_link_args(args)  # --server with --model, or a key file without a server: one line
    server = getattr(args, "server", None) or ("" if getattr(args, "model", None) else settings.server)
    key_file = getattr(args, "api_key_file", None) or settings.api_key_file or None
    link = remote_link(server, key_file) if server else None
    if link is not None:
        studio = Studio(link=link, settings=settings, audio=getattr(args, "audio", "auto"))
        subtitle, banner = f"server {link.address}", None
    else:
        model, banner = studio_model(getattr(args, "model", None))  # tiny + a demo banner when offline
        spec = resolve_model(model)  # a bad --model is one line and exit 2, before any screen
        if spec.kind == "dir" and spec.path is not None:
            check_model_dir(spec.path)
        dtype = getattr(args, "dtype", None) or settings.dtype  # --dtype, else the saved setting (default auto)
        quantize = getattr(args, "quantize", None) or settings.quantize  # --quantize, else the saved setting
        if quantize != "none":  # refused (one line, exit 2) before any screen where int8 would not run
            # lazy: start-up (torch)
            from omnistudio.engine.quantize import check_quantize

            quantize = check_quantize(quantize, pick_device(getattr(args, "device", None)))
        studio = Studio(EngineConfig(model, getattr(args, "device", None), dtype, quantize=quantize),
                        settings=settings, audio=getattr(args, "audio", "auto"))
        subtitle = f"model {model}" + (" (demo: noise, not speech)" if banner else "")
    if getattr(args, "project", None) is not None:
        # lazy: start-up (numpy)
        from omnistudio.projects.project import MANIFEST, SCRIPT, check_project_path

        path = check_project_path(args.project)
        exists = (path / MANIFEST).exists() or (path / SCRIPT).exists()
        # lazy: start-up (urllib)
        from omnistudio.studio.welcome import EXAMPLE_SCRIPT

        studio.takes.open(path, None if exists else EXAMPLE_SCRIPT)

    # what a C library prints (ALSA's "underrun occurred") goes to the log, not over the screen
    with library_output_to_log(locations().studio_log):
        app = StudioApp(studio, subtitle=subtitle, banner=banner)
        if warning:
            app.call_later(app.notify, warning, severity="warning")
        app.run()
    return 0
