"""The command-line flags that the CLI and the benches both take, defined once (the benches are tools beside
the CLI, not under it: they import these, never ``omnistudio.commands`` or ``omnistudio.cli``).

- ``engine``: ``--model --device --dtype --quantize`` and ``--server --api-key-file`` -> the engine link
- ``synthesis``: ``--num-step --seed --guidance --sampler``
"""
