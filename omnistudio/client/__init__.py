"""The one client of the speech server (``omnistudio serve``), on :mod:`omnistudio.protocol`.

- :class:`~omnistudio.client.engine.RemoteEngine`: the take pipeline's EngineLink over the server's
  WebSocket (the remote studio, ``say``/``render --server``, ``bench --stream --server``);
- :func:`~omnistudio.client.speech.speech`: one ``POST /v1/audio/speech``, streamed and timed (the serve
  and Ray benches);
- :mod:`~omnistudio.client.connection`: the address, the key, HTTP and WebSocket calls, typed faults.
"""
