"""``chatlog serve``: the justlog/rustlog HTTP API over a :class:`~serve.store.protocol.LogStore`
(FastAPI)."""
