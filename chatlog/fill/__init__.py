"""``chatlog fill``: the coverage ledger's gaps of a channel, filled with the lines a peer (a justlog,
rustlog or chatlog instance) logged then.

:mod:`chatlog.fill.asks` turns gaps into the peer's day requests (pure), :mod:`chatlog.fill.peer` asks
them over HTTP (httpx), :mod:`chatlog.fill.ahead` asks for the next day while one is imported,
:mod:`chatlog.fill.accept` keeps the lines that belong (the channel, the time asked) on their way through
``chatlog import``'s parser into the messages topic, :mod:`chatlog.fill.record` writes the ledger's
``coverage_fills``, and :mod:`chatlog.fill.run` does it all in order.
"""
