"""``chatlog serve``: the justlog/rustlog HTTP API over a :class:`~store.protocol.LogStore`
(FastAPI)."""
