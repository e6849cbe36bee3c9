"""The sink's Spark job, on the driver: the command line, the session, the streaming query and the backfill,
their DataFrame transformations, progress, and the driver's side of the write step."""
