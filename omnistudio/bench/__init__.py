"""The benches, one module per mode of ``omnistudio bench`` (each owns its flags, runner and printer):
``speed`` (the default: stock vs fast), ``stream``, ``remote`` (``--stream --server``), ``dialogue``,
``meter``, ``serve``, ``serve_ray`` (``--serve --ray``; Ray imported when it runs) and ``compiled``
(``--lengths``); ``memory`` and ``prompt_cache`` run with ``python -m``. Shared: ``corpus`` (the sentence
lists and the one synthetic reference voice) and ``provenance`` (commit, machine, load on every output).
The bench command calls them; no layer below imports them."""
