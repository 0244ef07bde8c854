"""The MCP tools, each a typed schema, a description an agent reads, and one call into :mod:`.work`.

``list_voices``, ``speak``, ``render_script``, ``check_take``, ``normalize_text`` (and ``add_voice``,
:mod:`.voices`). A render reports progress (voices prepared, sentences rendered) and stops within
one diffusion step when the request is cancelled (:mod:`.running`); an error is the CLI's one line
as a tool error (:mod:`.errors`); every file is in the output folder (:mod:`.folder`).
"""

from __future__ import annotations

from typing import Annotated, Any

import anyio
from mcp.server.fastmcp import Context
from pydantic import Field

from omnistudio.checks import DEFAULT_NUM_STEP, check_text
from omnistudio.mcp import work
from omnistudio.mcp.backend import Backend
from omnistudio.mcp.errors import StudioMCP
from omnistudio.mcp.folder import OutputFolder
from omnistudio.mcp.running import run_work
from omnistudio.mcp.voices import add_voice_tool
from omnistudio.protocol import DEFAULT_VOICE, NormalizeResponse, VoiceListing

INSTRUCTIONS = (
    "OmniStudio speaks text in news anchors' cloned voices (English and Spanish) and writes loudness-finished "
    "audio files. list_voices names the voices; speak renders one text, render_script a script with [anchor] "
    "speaker tags; check_take measures a take's word error rate with speech recognition; normalize_text shows "
    "what a text will be said as (numbers, money, dates). Files go to the server's output folder; tools take and "
    "answer names inside it.")

Voice = Annotated[str | None, Field(description="an anchor id from list_voices ('ruby'), with a language "
                                    "('ruby:es'), or a blend of two anchors 'a+b@alpha' (alpha in [0, 1], 1 is a alone)")]
Language = Annotated[str | None, Field(description="'en' or 'es' (default: the voice's ':lang', else en)")]
Seed = Annotated[int, Field(description="base seed: the same text, voice, seed and steps give the same audio")]
Steps = Annotated[int, Field(description=f"diffusion steps, 1..64 (default {DEFAULT_NUM_STEP}; fewer is faster)")]
Format = Annotated[work.AudioFormat, Field(description="audio file format")]
Name = Annotated[str | None, Field(description="file name inside the output folder (no '..', no absolute path; "
                                   "default: a fresh one); the format's suffix is added")]


def build_mcp(backend: Backend, folder: OutputFolder, **settings: Any) -> StudioMCP:
    """The MCP server with every tool; ``settings`` go to FastMCP (transport security, paths)."""
    server = StudioMCP("omnistudio", instructions=INSTRUCTIONS, log_level="WARNING", **settings)

    @server.tool(description="The voices this server speaks with: every anchor (id, name, languages, prompt "
                             "state) and the canonical duos (blends), written as the voice strings speak takes.")
    async def list_voices() -> VoiceListing:
        listing: VoiceListing = await anyio.to_thread.run_sync(work.list_voices, backend)
        return listing

    @server.tool(description="Speak one text in a voice (or a blend of two) and write a loudness-finished audio "
                             "file with its JSON sidecar in the output folder. Answers the file's name and path, "
                             "its duration and loudness figures. Reports progress; cancel stops it at once.")
    async def speak(ctx: Context[Any, Any, Any], text: Annotated[str, Field(description="what to say")],
                    voice: Voice = DEFAULT_VOICE, language: Language = None, seed: Seed = 0,
                    num_step: Steps = DEFAULT_NUM_STEP, format: Format = "wav", name: Name = None) -> work.RenderedFile:
        ask = work.RenderAsk(check_text(text), voice, language, seed, num_step, format,
                             name or work.default_name("speak"))  # say's limit
        return await run_work(ctx, lambda cancel, report, steps: work.render(backend, folder, ask, cancel, report,
                                                                             steps), "speak")

    @server.tool(description="Render a script: one paragraph a line, [anchor] or [anchor:lang] or [a+b@0.7] tags "
                             "at line starts switch the speaker, [pause] inserts a pause. Writes the finished file, "
                             "its sidecar and (when asked) SRT/WebVTT captions in the output folder. Reports "
                             "progress per sentence; cancel stops within one diffusion step, nothing written.")
    async def render_script(ctx: Context[Any, Any, Any],
                            script: Annotated[str, Field(description="the script text (UTF-8, en/es)")],
                            voice: Annotated[str | None, Field(description="voice of lines without a speaker tag "
                                                               "(as in speak); none: every line needs a tag")] = None,
                            language: Annotated[str, Field(description="language of untagged lines: en or es")] = "en",
                            seed: Seed = 0, num_step: Steps = DEFAULT_NUM_STEP, format: Format = "wav",
                            name: Name = None,
                            captions: Annotated[list[work.CaptionFormat], Field(
                                description="caption files to write beside the audio: srt, vtt")] = []  # noqa: B006
                            ) -> work.RenderedFile:
        ask = work.RenderAsk(script, voice, language, seed, num_step, format, name or work.default_name("script"),
                             tuple(captions))
        return await run_work(ctx, lambda cancel, report, steps: work.render(backend, folder, ask, cancel, report,
                                                                             steps), "render_script")

    @server.tool(description="Speech-recognition check of a take in the output folder: what Whisper hears, its "
                             "word error rate against the text, and whether it passes the threshold "
                             "(omnistudio check FILE --text).")
    async def check_take(name: Annotated[str, Field(description="the take's name in the output folder")],
                         text: Annotated[str, Field(description="what the take should say")],
                         language: Annotated[str, Field(description="en or es")] = "en",
                         threshold: Annotated[float, Field(description="WER above which it fails, 0..1")] = 0.15
                         ) -> work.TakeCheck:
        checked: work.TakeCheck = await anyio.to_thread.run_sync(
            lambda: work.check_take(backend, folder, name, text, language, threshold))
        return checked

    @server.tool(description="What a text will be said as: the text front-end's spoken form (numbers, money, "
                             "dates, units, abbreviations, the pronunciation lexicon), each changed span with the "
                             "rule that changed it, and warnings for what it could not read.")
    async def normalize_text(text: Annotated[str, Field(description="the text as written")],
                             language: Annotated[str, Field(description="en or es")] = "en") -> NormalizeResponse:
        answer: NormalizeResponse = await anyio.to_thread.run_sync(work.normalize_text, text, language)
        return answer

    add_voice_tool(server, backend, folder)
    return server
