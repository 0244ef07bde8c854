"""The one support package of the test suite: helpers every test module shares (one copy of each).

- ``audio``: the reference text and clip, tones.
- ``voices``: the recorded-anchor roster (four flite speakers), ``in_ci``.
- ``roster``: the three-anchor take roster (ana, ben, cy) built on those recordings.
- ``server``: a real ``omnistudio serve`` process that picks its own port.
- ``remote``: a scriptable stand-in speech server for the remote engine's fault tests.
- ``links``: stand-in engine links (deterministic audio, calls recorded) for take-pipeline tests.
- ``studio``: a studio on the tiny engine with fixed rows, and pilot waits.
- ``cli``: the one-line-error checker.
- ``wait``: polling for a condition (a bound on how long to wait, never an assertion on time).

Fixtures live in ``tests/conftest.py``; this package holds plain functions and classes.
"""
