"""The compliance report of a file as one self-contained HTML page: the verdict, the programme's figures,
a plot of momentary and short-term loudness over time with the rule's target band and every true-peak
overshoot marked (an SVG drawn by matplotlib, embedded as a data URI), and a row per story and sentence.

The page needs nothing from the network (no scripts, fonts or images from elsewhere): it opens from a
mail attachment or an archive as it is.
"""

from __future__ import annotations

import base64
import io
import math
from collections.abc import Callable
from pathlib import Path

import matplotlib
import numpy as np
from matplotlib.figure import Figure

from omnistudio.audio.compliance import Compliance

PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>Loudness report: {{ name }}</title>
<style>
body { font-family: sans-serif; margin: 2em; color: #222; }
.verdict { font-size: 1.6em; font-weight: bold; padding: .3em .6em; display: inline-block; }
.pass { background: #d7f5dd; color: #135c22; } .fail { background: #fbd9d9; color: #8a1111; }
table { border-collapse: collapse; margin: 1em 0; } td, th { border: 1px solid #bbb; padding: .25em .6em; }
td.num { text-align: right; font-variant-numeric: tabular-nums; } tr.story td { font-weight: bold; background: #f2f2f2; }
tr.off td.lufs, tr.over td.peak { color: #a00; }
img.plot { width: 100%; max-width: 1100px; border: 1px solid #ccc; }
</style></head><body>
<h1>Loudness report</h1>
<p><b>{{ name }}</b>: {{ "%.2f"|format(report.duration_s) }} s, {{ report.sample_rate }} Hz,
{{ report.channels }} channel(s), measured as {{ report.channel_mode }} (ITU-R BS.1770-4, EBU R128)</p>
<p class="verdict {{ 'pass' if verdict.passed else 'fail' }}" id="verdict">{{ verdict.rule.name }}:
{{ "PASS" if verdict.passed else "FAIL" }}</p>
<p>Rule: {{ "%g"|format(verdict.rule.target_lufs) }} LUFS &plusmn; {{ "%g"|format(verdict.rule.tolerance_lu) }} LU,
true peak at most {{ "%g"|format(verdict.rule.true_peak_dbtp) }} dBTP.</p>
<table id="figures"><tr><th>Figure</th><th>Value</th><th>Verdict</th></tr>
<tr><td>Integrated loudness</td><td class="num">{{ f(report.integrated_lufs) }} LUFS</td>
<td>{{ "ok" if verdict.loudness_ok else "outside the tolerance" }}</td></tr>
<tr><td>Loudness range</td><td class="num">{{ f(report.loudness_range_lu) }} LU</td><td></td></tr>
<tr><td>True peak</td><td class="num">{{ f(report.true_peak_dbtp) }} dBTP</td>
<td>{{ "ok" if verdict.true_peak_ok else "over the ceiling" }}</td></tr>
<tr><td>Momentary max (400 ms)</td><td class="num">{{ f(report.momentary_max_lufs) }} LUFS</td><td></td></tr>
<tr><td>Short-term max (3 s)</td><td class="num">{{ f(report.short_term_max_lufs) }} LUFS</td><td></td></tr>
<tr><td>True-peak overshoots</td><td class="num">{{ overshoots|length }}</td><td></td></tr>
</table>
<h2>Loudness over time</h2>
<img class="plot" id="loudness-plot" alt="momentary and short-term loudness over time" src="data:image/svg+xml;base64,{{ plot }}">
{% if segments %}<h2>Stories and sentences</h2>
<table id="segments"><tr><th>#</th><th>Part</th><th>Start</th><th>End</th><th>Integrated</th><th>True peak</th></tr>
{% for s in segments %}<tr class="{{ s.kind }}{{ ' over' if s.true_peak_dbtp > verdict.rule.true_peak_dbtp + 0.05 else '' }}">
<td class="num">{{ loop.index }}</td><td>{{ s.label }}</td><td class="num">{{ "%.2f"|format(s.start_s) }}</td>
<td class="num">{{ "%.2f"|format(s.end_s) }}</td><td class="num lufs">{{ f(s.integrated_lufs) }}</td>
<td class="num peak">{{ f(s.true_peak_dbtp) }}</td></tr>
{% endfor %}</table>{% endif %}
<p><small>{{ note }}</small></p>
</body></html>
"""


def _figure(value: float) -> str:
    return f"{value:.1f}" if math.isfinite(value) else "-inf"


def plot_svg(result: Compliance) -> bytes:
    """Momentary and short-term loudness over time, the rule's target band and ceiling-crossing peaks."""

    matplotlib.use("Agg")

    curve, rule = result.curve, result.verdict.rule
    times = np.arange(1, len(curve.momentary) + 1) * curve.step_s
    floor = rule.target_lufs - 30

    def clipped(values: tuple[float, ...]) -> list[float]:
        return [max(v, floor) if math.isfinite(v) else floor for v in values]

    fig = Figure(figsize=(11, 4.2), dpi=100)
    ax = fig.add_subplot()
    ax.axhspan(rule.target_lufs - rule.tolerance_lu, rule.target_lufs + rule.tolerance_lu, color="#9bd39b",
               alpha=0.45, label=f"target {rule.target_lufs:g} ± {rule.tolerance_lu:g} LU")
    ax.axhline(rule.target_lufs, color="#2e7d32", linewidth=0.8)
    ax.plot(times, clipped(curve.momentary), color="#7aa6d6", linewidth=0.8, label="momentary (400 ms)")
    ax.plot(times, clipped(curve.short_term), color="#0b3d91", linewidth=1.6, label="short-term (3 s)")
    if result.overshoots:
        ax.scatter([t + curve.step_s for t, _p in result.overshoots], [rule.target_lufs + 6] * len(result.overshoots),
                   marker="v", color="#c62828", zorder=3,
                   label=f"true peak over {rule.true_peak_dbtp:g} dBTP ({len(result.overshoots)})")
        for t, _p in result.overshoots:
            ax.axvline(t + curve.step_s, color="#c62828", alpha=0.25, linewidth=0.8)
    for segment in result.segments:
        if segment.kind == "story":
            ax.axvline(segment.start_s, color="#555", linestyle=":", linewidth=0.8)
    ax.set_xlim(0, max(float(times[-1]) if times.size else 1.0, curve.step_s))
    ax.set_ylim(floor, max(rule.target_lufs + 10, rule.target_lufs + 6 + 2))
    ax.set_xlabel("time (s)")
    ax.set_ylabel("loudness (LUFS)")
    ax.grid(alpha=0.3)
    ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    out = io.BytesIO()
    fig.savefig(out, format="svg", metadata={"Date": None})  # no timestamp: the same file, the same page
    return out.getvalue()


def report_html(result: Compliance, name: str, note: str = "") -> str:
    """The whole page."""
    # lazy: start-up (jinja2)
    from jinja2 import Environment

    page = Environment(autoescape=True).from_string(PAGE)
    return page.render(name=name, report=result.report, verdict=result.verdict, overshoots=result.overshoots,
                       segments=result.segments, plot=base64.b64encode(plot_svg(result)).decode("ascii"),
                       f=_figure, note=note)


def html_writer(result: Compliance, name: str, note: str = "") -> Callable[[Path], object]:
    """``write(tmp)`` for :func:`~omnistudio.commit.stage` (the page made now, written then)."""
    text = report_html(result, name, note)
    return lambda tmp: Path(tmp).write_text(text, encoding="utf-8")
