"""The framing of the records handed from Spark's JVM to the Python writers, both sides of it.

``DataFrame.rdd`` pickles every row in the JVM (Pyrolite, with its schema) and the Python worker
unpickles it and builds a ``Row`` from it. Here each row becomes one binary value in the JVM
(:func:`framed`, on the driver)::

    b"<partition> <offset> <v|n>\\n" + value        (n: the Kafka record had no value)

and Spark hands byte arrays to Python as they are (length-prefixed, no pickling), so the worker only
splits the header off (:func:`unframe`, in the writer's task): less CPU per record, in the JVM and in
Python, than the pickled path.
The bytes of ``value`` are untouched, so a record that is not UTF-8 reaches the dead-letter
topic as Kafka held it. Handing bytes over takes private Spark APIs (:mod:`sink.spark_private`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sink import spark_private

if TYPE_CHECKING:
    from pyspark.rdd import RDD
    from pyspark.sql import DataFrame

NO_VALUE = b"n"
"""The flag of a Kafka record that had no value."""


# -- the driver's side: rows -> framed records -------------------------------------------------------


def framed(rows: DataFrame) -> DataFrame:
    """``rows`` (value, partition, offset) -> one binary column ``record`` (see the module doc)."""
    from pyspark.sql import functions as F

    flag = F.when(F.col("value").isNull(), F.lit(NO_VALUE.decode())).otherwise(F.lit("v"))
    head = F.concat(F.concat_ws(" ", F.col("partition"), F.col("offset"), flag), F.lit("\n"))
    value = F.coalesce(F.col("value"), F.lit(b""))
    return rows.select(F.concat(F.encode(head, "UTF-8"), value).alias("record"))


def records(rows: DataFrame) -> tuple[RDD[Any], Any]:
    """The framed ``rows`` as an RDD of byte strings, and the JVM Dataset it runs (for
    :func:`sink.job.write.observed`)."""
    return spark_private.bytes_rdd(framed(rows))


# -- the writer's side: a framed record -> its parts ---------------------------------------------------


def unframe(record: bytes | bytearray) -> tuple[bytes | bytearray | None, int, int]:
    """One framed record -> (value or None, Kafka partition, offset); a ``bytearray`` (the public
    ``DataFrame.rdd`` hand-over) gives a ``bytearray`` value."""
    head, _, value = record.partition(b"\n")
    partition, offset, flag = head.split(b" ")
    return (None if flag == NO_VALUE else value), int(partition), int(offset)
