"""``chatlog monitor``: a faust stream processor over the control topics that watches the heartbeats.

It folds the ingesters' heartbeats (``chatlog.status``) and the channel registry (``chatlog.channels``)
into faust tables and answers continuously, per replica: which registered channels no live ingester
confirms, since when, and who owns which bucket (``GET /coverage`` on faust's web server, Prometheus
gauges ``chatlog_monitor_*``). The computation itself is the pure :func:`heartbeats.evaluate`.

What it reports comes from the heartbeats alone (which channels live ingesters say the IRC server
confirmed), not from the coverage ledger in Cassandra that ``chatlog coverage`` and the gap count of
``chatlog status`` read; the route keeps its public name, ``/coverage``.
"""
