"""The CLI's flags, each defined once, and their checks into plain values for the core.

One module per concern; a command's ``add_parser`` adds them and its ``run`` turns them into values:

- ``parser``: the one-line-error ArgumentParser every (sub)parser uses
- (``--num-step --seed --guidance --sampler`` and ``--model --device --dtype --server --api-key-file`` are
  in :mod:`omnistudio.flags`, which the benches share)
- ``voice``: ``--voice --blend --alpha --ref-audio --ref-text`` -> a VoiceRef
- ``finishing``: ``--target-lufs --true-peak --room-tone --breaths --shm`` -> FinishingOptions
- ``captions``: ``--captions``/``--format``, ``--captions-words`` and the cue limits -> CaptionOptions
- ``take``: ``render``'s script and take flags (``--batch``...) -> TakeOptions and the parsed script
- ``retakes``: ``render``'s takes group (``--project --verify --retake --threshold --asr-model``)
- ``ray``: the ``--ray`` groups of ``render`` and ``serve``
"""
