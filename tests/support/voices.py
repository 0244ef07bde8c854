"""Different voices for tests: a roster of recorded anchors, each a different flite speaker.

On the random ``tiny`` checkpoint every voice-design anchor gets the same prompt tokens, so a
test that mixes up two design anchors cannot notice. The anchors here have recordings from
four flite voices (slt, kal, awb, rms: different speakers, sample rates and lengths), so their
prompts differ and a wrong voice changes the audio. Without flite (a laptop), the recordings
are synthetic voiced signals with distinct pitch and spectrum; with ``CI`` set, a missing flite
fails the run instead.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import numpy as np

# anchor id -> (flite voice, English transcript, Spanish transcript)
VOICES = {
    "ruby": ("slt", "Good evening, I am Ruby and this is the late edition.",
             "Buenas noches, soy Ruby y esta es la edicion de la noche."),
    "storm": ("kal", "Storm here with the weather for the weekend ahead.",
              "Storm con el tiempo para el fin de semana."),
    "atlas": ("awb", "Atlas reporting live from the city council tonight.",
              "Atlas informa en directo desde el concejo esta noche."),
    "valentina": ("rms", "Valentina with the markets and the business news.",
                  "Valentina con los mercados y las noticias de negocios."),
}
ANCHORS = tuple(VOICES)
DUO = ("ruby", "storm", 0.5)
# Pitch (Hz) and brightness of the synthetic stand-ins when flite is missing outside CI.
_SYNTHETIC = {"ruby": (210.0, 9), "storm": (120.0, 3), "atlas": (95.0, 6), "valentina": (260.0, 12)}


def in_ci() -> bool:
    """True when the run is a CI run (``CI`` set to anything but empty/0/false)."""
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def flite_missing_message() -> str:
    return "flite is not installed (apt-get install flite; scripts/system-deps.sh does): CI needs real voices"


def _synthetic(path: Path, anchor: str, seconds: float) -> None:
    import soundfile as sf

    f0_mean, harmonics = _SYNTHETIC[anchor]
    sr = 16_000
    t = np.arange(int(seconds * sr)) / sr
    f0 = f0_mean * (1 + 0.08 * np.sin(2 * np.pi * 0.9 * t))
    phase = 2 * np.pi * np.cumsum(f0) / sr
    voiced = sum(np.sin(k * phase) / k ** 0.7 for k in range(1, harmonics + 1))
    envelope = 0.5 * (1 + np.sin(2 * np.pi * 3.5 * t)) ** 2
    sf.write(str(path), (0.1 * voiced * envelope).astype(np.float32), sr)


def flite_wav(text: str, path: Path, voice: str = "slt") -> Path:
    """``text`` spoken by Debian flite's ``voice`` (16 kHz WAV) into ``path``: the one flite call of the tests."""
    subprocess.run(["flite", "-voice", voice, "-t", text, "-o", str(path)], check=True, capture_output=True)
    return path


def record(folder: Path, anchor: str, lang: str) -> Path:
    """The recording of ``anchor`` in ``lang`` (flite, or the synthetic stand-in)."""
    voice, en, es = VOICES[anchor]
    text = en if lang == "en" else es
    path = folder / f"{anchor}_{lang}.wav"
    if shutil.which("flite"):
        flite_wav(text, path, voice)
    elif in_ci():
        raise RuntimeError(flite_missing_message())
    else:
        _synthetic(path, anchor, 2.4 if lang == "en" else 2.9)
    return path


def write_roster(folder: Path) -> Path:
    """A roster file whose anchors all speak from recordings (ruby borrows valentina's in Spanish)."""
    folder.mkdir(parents=True, exist_ok=True)
    lines = ["format = 1", "", "[design]", "num_step = 4", "", "[calibration]",
             'en = "Good evening."', 'es = "Buenas noches."', "",
             "[[duo]]", f'anchors = ["{DUO[0]}", "{DUO[1]}"]', 'langs = ["en"]', f"ratio = {DUO[2]}", ""]
    for seed, (anchor, (_voice, en, es)) in enumerate(VOICES.items(), start=1):
        lines += ["[[anchor]]", f'id = "{anchor}"', f'name = "{anchor.title()}"', 'gender = "female"',
                  'age = "young adult"', 'pitch = "moderate pitch"', f"seed = {seed}"]
        lines.append(f'en = {{ recording = "{record(folder, anchor, "en")}", transcript = "{en}" }}')
        if anchor == "ruby":
            lines.append('es = { matched = "valentina" }')
        else:
            lines.append(f'es = {{ recording = "{record(folder, anchor, "es")}", transcript = "{es}" }}')
        lines.append("")
    path = folder / "anchors.toml"
    path.write_text("\n".join(lines), encoding="utf-8")
    return path


def transcript(anchor: str, lang: str = "en") -> str:
    _voice, en, es = VOICES[anchor]
    return en if lang == "en" else es
