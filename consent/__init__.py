"""Consent (issue 20): the opt-out registry on the compacted ``chatlog.optout`` topic, its publisher,
audited erasure of stored rows, and the audit table.

Layer: above ``core`` and ``schemas`` (it imports only those), below the services (``ingest``, ``sink``,
``serve``) that enforce it and the operator's tools that manage it.
"""
