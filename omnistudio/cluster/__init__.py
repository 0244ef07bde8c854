"""Scale-out on Ray (an optional extra: ``pip install 'omnistudio[ray]'``).

- :mod:`omnistudio.cluster.connect`: join a Ray cluster (or start a local instance), check that
  what is asked fits in it before anything starts, and the one-line error when Ray is missing.
- :mod:`omnistudio.cluster.serve`: the server's ASGI app as a Ray Serve deployment, one engine per
  replica (``omnistudio serve --ray``).
- :mod:`omnistudio.cluster.batch`: many scripts rendered on engine-holding actors, written on the
  caller's side, resumable (``omnistudio render SCRIPT... --out-dir DIR --ray``).
- :mod:`omnistudio.cluster.proxy`: the middleware in Serve's proxy for a lost replica (replay, else 503).

Nothing here is imported unless ``--ray`` is given; the single process needs no Ray.
"""
