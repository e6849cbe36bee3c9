"""Storage: the one package that knows the Cassandra layout (docs/storage.md).

* :mod:`store.keys`: the keys of every stored line (channel and user keys, which user a line is filed under,
  message ids, periods and parts);
* :mod:`store.stored_line`: a line as stored, without what its key holds; :mod:`store.frame`: a block's
  lines as one value; :mod:`store.blocks`: events into blocks;
* :mod:`store.schema` and ``cassandra.cql``: the tables, the layout version a keyspace holds, and the check
  every reader and writer makes; :mod:`store.migrate`: a keyspace of an earlier layout moved to this one;
* :mod:`store.write` (through :mod:`store.requests`): what the sink, a backfill and a fill write;
* :mod:`store.read` (with :mod:`store.merge`, :mod:`store.line`, :mod:`store.names`): what ``chatlog serve``
  and ``chatlog logs`` read, behind the interface :mod:`store.protocol`;
* :mod:`store.pack`: a closed period's blocks packed into one; :mod:`store.erase`: a user's or a channel's
  lines erased.

The sink and the read service call it; neither spells a table, a key or a layout.
"""
