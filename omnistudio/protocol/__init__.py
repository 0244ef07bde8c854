"""The wire protocol: every request, response and WebSocket message between a client and the speech server.

One package (``from omnistudio import protocol as wire``; its modules: base, requests, timestamps,
events, responses), imported by the server (``omnistudio.server``) and by the one client package
(``omnistudio.client``): a field the server sends is a field the client reads, by the same name.

- HTTP requests: :class:`SpeechRequest` (``POST /v1/audio/speech``, OpenAI's shape plus OmniStudio's
  fields) and :class:`GenerateRequest` (``POST /tts/generate`` and ``/tts/generate-shm``).
- HTTP responses: :class:`Health` (``GET /health``), :class:`VoiceListing` (``GET /v1/audio/voices``),
  :class:`VoiceDetail` / :class:`VoiceAdded` / :class:`VoiceDeleted` (a voice, from :class:`VoiceUpload`),
  :class:`TimedSpeech` and :class:`SseSentence` (``/v1/audio/speech`` with ``timestamps``), :class:`ShmTake`
  (``/tts/generate-shm``) and OpenAI's error body (:func:`error_body`). Sentence and word times are
  :class:`SentenceTime` / :class:`WordTime` everywhere (the WebSocket's ``sentence_end`` too).
- WebSocket ``WS_ROUTE``: the client sends one :class:`WsRequest` (``speak``) or :class:`WsPrepare`, then
  optionally :class:`WsCancel`; the server answers with the events of :data:`ServerEvent`.

:data:`PROTOCOL` is the version a server reports in ``/health``; a client refuses a server that speaks
another one. A message of an unknown type, or one without the fields its type needs, is a
:class:`ProtocolError` (one line naming what was wrong), never a guess.
"""

from __future__ import annotations

from omnistudio.protocol.base import (CONSENTS_ROUTE, DEFAULT_VOICE, FORMATS, MAX_BODY_BYTES, MAX_CUSTOM_VOICES, MAX_INPUT_CHARS, MAX_ITEMS, MAX_SCRIPT_CHARS, MAX_UPLOAD_BYTES, MODEL_ID, PROTOCOL, ProtocolError, REPLICA_HEADER, VOICES_ROUTE, WS_ROUTE, error_body, error_json, error_kind, error_message, loads_object, parse_response)
from omnistudio.protocol.requests import (ClientMessage, GenerateRequest, LexiconBody, LexiconEntryBody, NormalizeRequest, NormalizeResponse, SpeechRequest, SpokenSpan, TakeFields, TextWarningBody, Timestamps, WsCancel, WsEnd, WsFlush, WsItem, WsPrepare, WsPrepareVoice, WsRequest, WsText)
from omnistudio.protocol.timestamps import (SentenceTime, ShmTake, SseSentence, TimedSpeech, WordTime)
from omnistudio.protocol.events import (ServerEvent, WsCancelled, WsDone, WsError, WsPrepareStep, WsPrepared, WsSentenceEnd, WsSentenceStart, WsStart, frame, parse_client_message, parse_server_event)
from omnistudio.protocol.responses import (DuoEntry, EngineInfo, Health, VoiceAdded, VoiceDeleted, VoiceDetail, VoiceEntry, VoiceLanguageBody, VoiceConsentBody, VoiceConsentDeleted, VoiceConsentList, VoiceListing, VoiceUpload)

__all__ = ["CONSENTS_ROUTE", "DEFAULT_VOICE", "FORMATS", "MAX_BODY_BYTES", "MAX_CUSTOM_VOICES", "MAX_INPUT_CHARS", "MAX_ITEMS", "MAX_SCRIPT_CHARS", "MAX_UPLOAD_BYTES", "MODEL_ID", "PROTOCOL", "ProtocolError", "REPLICA_HEADER", "VOICES_ROUTE", "WS_ROUTE", "error_body", "error_json", "error_kind", "error_message", "loads_object", "parse_response", "ClientMessage", "GenerateRequest", "LexiconBody", "LexiconEntryBody", "NormalizeRequest", "NormalizeResponse", "SpeechRequest", "SpokenSpan", "TakeFields", "TextWarningBody", "Timestamps", "WsCancel", "WsEnd", "WsFlush", "WsItem", "WsPrepare", "WsPrepareVoice", "WsRequest", "WsText", "SentenceTime", "ShmTake", "SseSentence", "TimedSpeech", "WordTime", "ServerEvent", "WsCancelled", "WsDone", "WsError", "WsPrepareStep", "WsPrepared", "WsSentenceEnd", "WsSentenceStart", "WsStart", "frame", "parse_client_message", "parse_server_event", "DuoEntry", "EngineInfo", "Health", "VoiceAdded", "VoiceDeleted", "VoiceDetail", "VoiceEntry", "VoiceLanguageBody", "VoiceConsentBody", "VoiceConsentDeleted", "VoiceConsentList", "VoiceListing", "VoiceUpload"]
