"""The IRC side of an ingester: a pool of connections that joins the wanted channels and hands chat
lines over in batches. ``IrcPool`` (pool.py) is the entry point; ``PoolSettings`` its settings."""

from ingest.irc.pool import IrcPool
from ingest.irc.settings import PoolSettings
from ingest.irc.stats import PoolStats

__all__ = ["IrcPool", "PoolSettings", "PoolStats"]
