"""The sink's Cassandra writer, run in Spark's Python workers: one partition of framed records into table rows
(:func:`sink.writer.partition.write_partition`), its Cassandra client, CQL cells and dead letters."""
