"""Consent recordings: the speaker saying that their voice may be cloned, kept with an id
(``cons_`` + 24 hex digits) that a new voice names (OpenAI's ``voice_consents`` API; the server's
``/v1/audio/voice_consents``). A voice made from a recording and a consent id stores that consent with its
recording, as a typed statement would be.

Each consent is two files in the user roster's folder (``voices/consents/``): the recording as it was
sent (checked as a reference recording is: readable, not silent, not over the length limit) and a JSON
record (id, name, BCP 47 language, time, the recording's SHA-256). Both are written all or nothing."""

from __future__ import annotations

import hashlib
import json
import re
import secrets
import shutil
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from omnistudio.commit import json_writer, staged
from omnistudio.errors import UserError
from omnistudio.voices.roster import user_roster_path

PREFIX = "cons_"
ID_RE = re.compile(r"^cons_[0-9a-f]{24}$")
LANGUAGE_RE = re.compile(r"^[A-Za-z]{2,3}(-[A-Za-z0-9]{2,8})*$")  # a BCP 47 tag's shape: en, en-US, es-419
MAX_NAME_CHARS = 200
MAX_CONSENTS = 1000


class UnknownConsent(UserError):
    """No consent recording has that id."""


@dataclass(frozen=True)
class Consent:
    id: str
    name: str
    language: str  # BCP 47, as sent (en-US)
    created_at: int  # Unix seconds
    recording_sha256: str
    recording: str  # the file's name in the consents folder

    @property
    def lang(self) -> str:
        """The language a voice made with it speaks (en or es), from the tag's primary subtag."""
        return self.language.split("-")[0].lower()

    def statement(self) -> str:
        """What a voice made with this consent stores as its consent."""
        return (f"consent recording {self.id} ('{self.name}', {self.language}, "
                f"sha256 {self.recording_sha256[:16]})")


def folder() -> Path:
    return user_roster_path().parent / "consents"


def check_consent_id(value: str) -> str:
    key = (value or "").strip()
    if not ID_RE.match(key):
        raise UnknownConsent(f"'{value}' is not a consent recording id (cons_ and 24 hex digits)")
    return key


def check_name(value: str | None) -> str:
    name = " ".join((value or "").split())
    if not name:
        raise UserError("the consent recording needs a name")
    if len(name) > MAX_NAME_CHARS:
        raise UserError(f"the consent recording's name is {len(name)} characters; the limit is {MAX_NAME_CHARS}")
    return name


def check_tag(value: str | None) -> str:
    tag = (value or "").strip()
    if not LANGUAGE_RE.match(tag):
        raise UserError(f"language '{value}' is not a BCP 47 tag (e.g. en-US, es-ES)")
    if tag.split("-")[0].lower() not in ("en", "es"):
        raise UserError(f"language '{tag}': OmniStudio's voices speak English or Spanish (en-*, es-*)")
    return tag


def add_consent(name: str | None, language: str | None, recording: bytes) -> Consent:
    """Keep a consent recording (checked as a reference recording is); returns it with its new id."""
    # lazy: start-up (numpy, soundfile)
    from omnistudio.engine.reference import read_reference

    name, language = check_name(name), check_tag(language)
    where = folder()
    where.mkdir(parents=True, exist_ok=True)
    if len(list(where.glob(f"{PREFIX}*.json"))) >= MAX_CONSENTS:
        raise UserError(f"this server keeps {MAX_CONSENTS} consent recordings at most: delete one first")
    with tempfile.NamedTemporaryFile(dir=where, prefix=".upload-", suffix=".audio") as probe:
        probe.write(recording)
        probe.flush()
        read_reference(Path(probe.name), "the consent recording")
        consent = Consent(PREFIX + secrets.token_hex(12), name, language, int(time.time()),
                          hashlib.sha256(recording).hexdigest(), "")
        consent = Consent(**{**asdict(consent), "recording": f"{consent.id}.audio"})
        with staged() as files:
            files.add(where / consent.recording, lambda tmp: shutil.copyfile(probe.name, tmp), ".audio")
            files.add(where / f"{consent.id}.json", json_writer(asdict(consent)), ".json")
    return consent


def get_consent(consent_id: str) -> Consent:
    key = check_consent_id(consent_id)
    path = folder() / f"{key}.json"
    try:
        return Consent(**json.loads(path.read_text(encoding="utf-8")))
    except FileNotFoundError:
        raise UnknownConsent(f"no consent recording '{key}': upload it first (POST /v1/audio/voice_consents)") from None
    except (ValueError, TypeError) as exc:
        raise UserError(f"the consent record {path} is damaged ({exc})") from None


def list_consents() -> list[Consent]:
    """Every consent kept, newest first."""
    found = [get_consent(p.stem) for p in folder().glob(f"{PREFIX}*.json") if ID_RE.match(p.stem)]
    return sorted(found, key=lambda c: (-c.created_at, c.id))


def rename_consent(consent_id: str, name: str | None) -> Consent:
    consent = get_consent(consent_id)
    renamed = Consent(**{**asdict(consent), "name": check_name(name)})
    with staged() as files:
        files.add(folder() / f"{consent.id}.json", json_writer(asdict(renamed)), ".json")
    return renamed


def remove_consent(consent_id: str) -> Consent:
    consent = get_consent(consent_id)
    (folder() / f"{consent.id}.json").unlink(missing_ok=True)
    (folder() / consent.recording).unlink(missing_ok=True)
    return consent
