"""The lab: what develops and measures chatlog, not what runs it. The local stack (``chatlog stack``), the
chat simulator (``chatlog simulate``), the demo (``chatlog demo``) and the benchmarks (``chatlog bench``).

The product (schemas, core, consent, store, ingest, sink, serve and the operator's ``chatlog`` CLI) never
imports this package (tests/unit/test_layers.py); its commands join the ``chatlog`` CLI through the
``chatlog.commands`` entry point (pyproject.toml).
"""
