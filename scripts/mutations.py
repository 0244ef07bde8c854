#!/usr/bin/env python3
"""Mutation check: break the product on purpose, one bug at a time, and show that a test fails.

Each mutation replaces one piece of product code (in a scratch copy of the checkout, never in
place) and runs the tests that must catch it. A mutation that no test notices, or whose code
is no longer where the script looks (the code moved: update the pattern), is reported and makes
the script exit 1.

    python scripts/mutations.py            # every mutation
    python scripts/mutations.py seed       # the ones whose name contains "seed"
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Mutation:
    name: str
    what: str
    file: str
    old: str
    new: str
    tests: tuple[str, ...]


MUTATIONS = [
    Mutation("swap-dialogue-voices", "lines 2 and 3 of a script are spoken with each other's voice",
             "omnistudio/take/stream.py",
             "voice_for=lambda item: pick(by_index[item.index])",
             "voice_for=lambda item: pick(by_index[{1: 2, 2: 1}.get(item.index, item.index)])",
             ("tests/test_dialogue.py::test_each_streamed_line_is_its_speaker_and_seed",)),
    Mutation("blend-wrong-positions", "a blend is written one frame after the reference frames",
             "omnistudio/engine/morph.py",
             "embeds[row, start:start + override.size(0)] = override.to(embeds.dtype)",
             "embeds[row, start + 1:start + 1 + override.size(0)] = override.to(embeds.dtype)",
             ("tests/test_blend.py::test_blend_of_a_voice_with_itself_is_that_voice",
              "tests/test_blend.py::test_alpha_zero_is_b_written_at_a_positions")),
    Mutation("ignore-instruct", "voice design renders an anchor's reference without its instruct",
             "omnistudio/voices/prompts.py",
             "instruct=source.instruct,",
             "instruct=None,",
             ("tests/test_prompt_recipes.py::test_design_prompts_are_rendered_from_each_anchors_recipe",)),
    Mutation("wrong-batch-seed", "the second item of a batch gets the seed + 1",
             "omnistudio/engine/engine.py",
             "for sd in seed_list]",
             "for sd in [*seed_list[:1], *[s + 1 for s in seed_list[1:2]], *seed_list[2:]]]",
             ("tests/test_dialogue.py::test_each_streamed_line_is_its_speaker_and_seed",
              "tests/test_blend.py::test_batched_dialogue_equals_one_at_a_time")),
    Mutation("blend-at-one-own-key", "a blend at alpha 1 keeps its blend key (and so another seed than the voice's)",
             "omnistudio/voices/resolve.py",
             "if self.blend is not None and self.blend.alpha == 1.0:",
             "if self.blend is not None and self.blend.alpha == 2.0:",
             ("tests/test_blend.py::test_say_with_a_blend_writes_audio",
              "tests/test_blend_paths.py::test_render_blend_at_one_is_the_voice_alone_and_at_zero_the_engine_blend")),
    Mutation("int8-wrong-scale", "the int8 weights' scale is half what it must be (the largest weights clip)",
             "omnistudio/engine/quantize.py",
             "return amax.clamp_min(torch.finfo(torch.float32).tiny) / QMAX",
             "return amax.clamp_min(torch.finfo(torch.float32).tiny) / (2 * QMAX)",
             ("tests/test_quantize.py::test_int8_layers_within_the_bound_one_sentence",
              "tests/test_quantize.py::test_int8_layers_within_the_bound_batch_of_three")),
    Mutation("int8-rows-against-own-engine", "the bench compares int8 rows with stock on the int8 engine itself",
             "omnistudio/bench/quantized.py",
             "bench.variants[i] = replace(v, stock=plain)",
             "pass",
             ("tests/test_quantize.py::test_bench_quantize_axis_in_one_run",)),
    Mutation("studio-never-narrow", "the studio never folds its side columns (the -narrow class is never set)",
             "omnistudio/screens/main.py",
             'self.set_class(narrow, "-narrow")',
             'self.set_class(False, "-narrow")',
             ("tests/test_studio_layout.py::test_layout_fits_and_every_function_is_reachable[80x24]",)),
    Mutation("take-strip-live-shape", "the take strip keeps the live pieces' waveform, never the export's samples",
             "omnistudio/studio/take_view.py",
             "self.view.shape = Shape(peaks, frames[0], sentences, live=False)",
             "pass",
             ("tests/test_studio_take_view.py::test_strip_follows_the_play_position_and_draws_the_exported_samples",)),
    Mutation("take-strip-position-queued", "the take strip's position is the frame queued, not the frame heard",
             "omnistudio/studio/take_view.py",
             "self.position(self._player.ring.total_read)",
             "self.position(self._player.ring.total_written)",
             ("tests/test_studio_take_view.py::test_strip_follows_the_play_position_and_draws_the_exported_samples",)),
    Mutation("prebuild-not-preempted", "a play waits for the background build to finish (no command pre-empts it)",
             "omnistudio/studio/prebuild.py",
             "return not self._commands.empty()",
             "return False",
             ("tests/test_studio_prebuild.py::test_a_play_preempts_a_background_build_within_one_step",)),
    Mutation("prebuild-builds-nothing", "the background builds mark voices ready without preparing them",
             "omnistudio/studio/prebuild.py",
             "link.prepare([want], None, preempted)",
             "link.voices()",
             ("tests/test_studio_prebuild.py::test_first_f5_after_the_background_builds_runs_no_prepare_step",
              "tests/test_studio_prebuild.py::test_through_a_remote_link_the_builds_are_the_servers_prepares")),
    Mutation("picker-ignores-build-marks", "the anchor list shows the roster's states, not the background builds'",
             "omnistudio/widgets/anchor_picker.py",
             'return self.marks.get((row.id, self.lang)) or row.state.get(self.lang, "missing")',
             'return row.state.get(self.lang, "missing")',
             ("tests/test_studio_prebuild.py::test_the_anchor_list_shows_missing_building_ready",)),
    Mutation("ray-ignores-project", "render --ray/--out-dir renders whole scripts and ignores --project/--verify",
             "omnistudio/commands/render_ray.py",
             "    refuse_takes(args)\n",
             "",
             ("tests/test_cluster_errors.py::test_takes_flags_are_refused_not_ignored",)),
    Mutation("ray-mounts-mcp", "a serve --ray replica builds its app from the config as given (MCP tools mounted)",
             "omnistudio/cluster/serve.py",
             "build_server(replace(config, mcp=False))",
             "build_server(config)",
             ("tests/test_cluster_serve.py::test_mcp_answers_a_404_that_says_why",)),
    Mutation("no-mcp-bare-404", "a server without the MCP tools answers /mcp with FastAPI's bare Not Found",
             "omnistudio/mcp/http.py",
             "    app.add_api_route(MCP_ROUTE, no_mcp,",
             "    return\n    app.add_api_route(MCP_ROUTE, no_mcp,",
             ("tests/test_server_factory.py::test_every_serve_option_reaches_a_ray_replica",)),
    Mutation("check-take-ignores-text", "the MCP tool check_take checks the take against a fixed text, not the one given",
             "omnistudio/mcp/work.py",
             "check_file(path, text, lang,",
             "check_file(path, 'Good evening.', lang,",
             ("tests/test_mcp.py::test_check_take_gives_omnistudio_checks_transcript_and_verdict",)),
    Mutation("compile-child-same-session", "the compile child shares the terminal's session: Ctrl+C on serve kills it",
             "omnistudio/engine/compiled_backbone.py", "start_new_session=True)", "start_new_session=False)",
             ("tests/test_compile_slot.py::test_the_compile_child_runs_in_its_own_session_and_waits_for_the_slot_lock",)),
    Mutation("compile-child-ignores-warm-slot", "a second first start's child compiles again after the first filled the slot",
             "omnistudio/engine/compile_child.py", 'if asked.state() == "warm":', "if False:",
             ("tests/test_compile_slot.py::test_the_compile_child_runs_in_its_own_session_and_waits_for_the_slot_lock",)),
    Mutation("failed-compile-retried", "a compile that failed under this key is tried again on every start",
             "omnistudio/engine/compiled_backbone.py", "if failed is not None:", "if False:",
             ("tests/test_compile_slot.py::test_a_failed_compile_is_not_tried_again_under_the_same_key",)),
    Mutation("unsaved-cache-says-failed", "a cache that cannot be saved after a good switch reports failed",
             "omnistudio/engine/compiled_backbone.py", "except Exception as exc:  # compiled all the same",
             "except ZeroDivisionError as exc:  # compiled all the same",
             ("tests/test_compile_slot.py::test_a_cache_that_cannot_be_saved_leaves_the_backbone_compiled",)),
    Mutation("empty-slot-without-its-inductor", "a slot with empty artifacts is warm after its inductor folder is gone",
             "omnistudio/engine/compile_cache.py", "if self.artifacts.stat().st_size == 0 and inductor != inductor_id():",
             "if False:",
             ("tests/test_compile_slot.py::test_inductor_folders_are_per_torch_and_empty_artifacts_need_theirs",)),
    Mutation("strip-finishing-not-preempted", "the take strip's finishing pass runs to the end while a command waits",
             "omnistudio/studio/take_view.py", "                    if self.preempted():", "                    if False:",
             ("tests/test_take_view_sink.py::test_a_waiting_command_stops_the_finishing_pass_at_once",)),
    Mutation("background-wakeup-preempts", "the background builds' own wake-up counts as a user's command",
             "omnistudio/studio/prebuild.py", 'return any(name != "prebuild" for name, _args in self._commands.queue)',
             "return bool(self._commands.queue)",
             ("tests/test_take_view_sink.py::test_a_background_wake_up_preempts_nothing_a_users_command_does",)),
    Mutation("serve-imports-before-checks", "serve imports the server and the take pipeline before it checks its port",
             "omnistudio/commands/serve.py", "    from omnistudio.commands.flags.ray import check_serve_options\n",
             "    from omnistudio.commands.flags.ray import check_serve_options\n    import omnistudio.server.scheduler  # noqa: F401\n",
             ("tests/test_cli_startup.py::test_a_refused_serve_says_why_before_the_servers_imports",)),
    Mutation("inductor-default-as-choice", "torch's own default inductor folder counts as the user's choice",
             "omnistudio/engine/compile_cache.py",
             "if not chosen or os.path.abspath(chosen) == os.path.abspath(default_cache_dir()):",
             "if not chosen:",
             ("tests/test_compile_slot.py::test_the_folder_under_the_cache_is_used_after_torch_sets_its_default",)),
    Mutation("signal-raises-after-the-command", "a signal between the command's end and its ending raises",
             "omnistudio/signals.py", "    if _ended[0]:\n        _late.append(signum)\n        return\n", "",
             ("tests/test_signals.py::test_a_signal_between_the_commands_end_and_its_ending_leaves_with_its_status",)),
    Mutation("static-step-host-read", "the static step reads its step counter on the host (.item()): a sync a "
             "captured graph cannot hold", "omnistudio/engine/static_step.py",
             "ks = self.schedule.index_select(0, self.step_idx).squeeze(0)",
             "ks = self.schedule[int(self.step_idx.item())]",
             ("tests/test_static_step.py::test_no_op_inside_a_step_reads_a_tensor_on_the_host",)),
    Mutation("static-step-python-branch", "the static step picks the first step's input with a Python branch on "
             "a tensor (same tokens, a host read and a graph break)", "omnistudio/engine/static_step.py",
             "embeds = torch.where(self.is_target & ~first, gathered, self.prefix)",
             "embeds = torch.where(self.is_target, gathered, self.prefix) if bool(~first) else self.prefix",
             ("tests/test_static_step.py::test_no_op_inside_a_step_reads_a_tensor_on_the_host",
              "tests/test_static_step.py::test_the_step_compiles_whole_for_each_bucket")),
    Mutation("static-step-shape-drifts", "after the first step the backbone gets no positions (an input that "
             "changes shape mid-sentence)", "omnistudio/engine/static_step.py",
             "attention_mask=self.masks, position_ids=self.position_ids,",
             "attention_mask=self.masks, position_ids=self.position_ids if sampler._step == 0 else None,",
             ("tests/test_static_step.py::test_every_step_of_a_sentence_sees_the_same_shapes",)),
    Mutation("int8-per-tensor-scale", "int8 weights get one scale per tensor instead of one per output channel",
             "omnistudio/engine/quantize.py",
             "amax = weight.detach().abs().amax(dim=1).double()",
             "amax = weight.detach().abs().amax().double().expand(weight.size(0))",
             ("tests/test_quantize.py::test_one_scale_per_output_channel_keeps_small_rows_exact",)),
    Mutation("compile-key-without-dtype", "the compile cache key leaves out the dtype (fp32 and bf16 share a slot)",
             "omnistudio/engine/compile_cache.py",
             "return CacheKey(torch.__version__, loaded.fingerprint, geometry, loaded.dtype_name, device,",
             "return CacheKey(torch.__version__, loaded.fingerprint, geometry, \"any\", device,",
             ("tests/test_compile_slot.py::test_configurations_differing_in_one_setting_get_different_keys_and_folders",)),
    Mutation("spanish-no-feminine", "Spanish numbers never take the feminine form",
             "omnistudio/text/agreement.py",
             "    if lower in FEMININE_NOUNS or lower.endswith(FEMININE_ENDINGS):\n        return FEMININE\n",
             "",
             ("tests/test_text_frontend.py::test_spanish_numbers_agree_with_the_noun_they_count",)),
    Mutation("mcp-folder-prefix-check", "the MCP output folder compares resolved paths as strings (a sibling "
             "sharing the prefix passes)", "omnistudio/mcp/folder.py",
             "if not path.resolve().is_relative_to(self.root):  # a symlink inside that leads out",
             "if not str(path.resolve()).startswith(str(self.root)):  # a symlink inside that leads out",
             ("tests/test_mcp_folder.py::test_links_into_a_sibling_that_shares_the_prefix_are_refused",)),
    Mutation("forget-keeps-blends", "forgetting a voice drops its prompts but keeps the blends it is part of",
             "omnistudio/voices/state.py",
             "        for blend in [k for k in self.blends if anchor in k[:2]]:\n            del self.blends[blend]\n",
             "",
             ("tests/test_engine_session.py::test_forgetting_a_voice_through_a_link_drops_exactly_its_prompts_and_blends",)),
]


def scratch_copy() -> Path:
    """The checkout's tracked and untracked (not ignored) files, in a temporary folder."""
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=ROOT, check=True,
                           capture_output=True, text=True).stdout.splitlines()
    target = Path(tempfile.mkdtemp(prefix="omnistudio-mutants-"))
    for name in files:
        source = ROOT / name
        if source.is_file():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / name)
    return target


def run(mutation: Mutation, tree: Path) -> tuple[str, str, float]:
    """("killed" | "survived" | "missing" | "error", detail, seconds)."""
    path = tree / mutation.file
    original = path.read_text(encoding="utf-8")
    if original.count(mutation.old) != 1:
        return "missing", f"pattern found {original.count(mutation.old)} times in {mutation.file}", 0.0
    path.write_text(original.replace(mutation.old, mutation.new), encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(tree), "PYTHONDONTWRITEBYTECODE": "1"}
    env.pop("CI", None)  # a skip must stay a skip here, not count as a kill
    started = time.perf_counter()
    try:
        proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "addopts=",
                               *mutation.tests], cwd=tree, env=env, capture_output=True, text=True, timeout=1800)
    finally:
        path.write_text(original, encoding="utf-8")
    seconds = time.perf_counter() - started
    failed = re.findall(r"^FAILED (\S+)", proc.stdout, flags=re.M)
    summary = (proc.stdout.strip().splitlines() or ["(no output)"])[-1]
    if proc.returncode == 1 and failed:
        return "killed", f"{summary}; failed: {', '.join(f.split('::')[-1] for f in failed)}", seconds
    if proc.returncode == 0:
        return "survived", summary, seconds
    return "error", f"pytest exit {proc.returncode}: {summary}", seconds


def main(argv: list[str]) -> int:
    chosen = [m for m in MUTATIONS if not argv or any(a in m.name for a in argv)]
    tree = scratch_copy()
    try:
        # The unmutated tree must pass the same tests, or a "kill" would mean nothing.
        baseline = {t for m in chosen for t in m.tests}
        env = {**os.environ, "PYTHONPATH": str(tree)}
        env.pop("CI", None)
        proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "addopts=",
                               *sorted(baseline)], cwd=tree, env=env, capture_output=True, text=True, timeout=1800)
        print(f"baseline (no mutation): {(proc.stdout.strip().splitlines() or ['?'])[-1]}", flush=True)
        if proc.returncode != 0:
            print(proc.stdout[-3000:], file=sys.stderr)
            print("the tests fail without any mutation: fix them first", file=sys.stderr)
            return 1
        bad = 0
        for mutation in chosen:
            verdict, detail, seconds = run(mutation, tree)
            bad += verdict != "killed"
            print(f"{mutation.name:22} {verdict.upper():8} ({seconds:5.0f} s) {mutation.what}\n"
                  f"{'':22} {detail}", flush=True)
        print(f"{len(chosen) - bad} of {len(chosen)} mutations made a test fail")
        return 1 if bad else 0
    finally:
        shutil.rmtree(tree, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
