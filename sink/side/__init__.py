"""Threads of the sink's driver beside the Spark query, no work for Spark: the coverage ledger writer
(:mod:`sink.side.ledger`) and the opt-out follower (:mod:`sink.side.optout_follower`)."""
