"""The read store: what the read side asks of the stored logs and its one implementation.

* :mod:`serve.store.protocol`: the interface (:class:`~serve.store.protocol.LogStore`) and how a channel
  or user is named;
* :mod:`serve.store.row`: a stored row back into its line and event (:class:`~serve.store.row.LogLine`);
* :mod:`serve.store.cassandra_store`: the implementation over the id-keyed tables, paged through
  :mod:`serve.store.aiocql`;
* :mod:`serve.store.names`: the name history (the four name tables).

The opt-outs are enforced around it by :class:`serve.consent.ConsentStore`; :mod:`serve.testing` holds
the in-memory double.
"""
