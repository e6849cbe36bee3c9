"""Handing the rows of a micro-batch from Spark's JVM to the Python writers, as raw bytes.

``DataFrame.rdd`` pickles every row in the JVM (Pyrolite, with its schema) and the Python worker
unpickles it and builds a ``Row`` from it. Here each row becomes one binary value in the JVM
(``framed``)::

    b"<partition> <offset> <v|n>\\n" + value        (n: the Kafka record had no value)

and Spark hands byte arrays to Python as they are (length-prefixed, no pickling), so the worker only
splits the header off (:func:`sink.executor.unframe.unframe`): less CPU per record, in the JVM and in
Python, than the pickled path (``chatlog bench sink`` reports both per event, results/bench_sink*.json;
``CHATLOG_SINK_SPARK_PRIVATE_API=false chatlog bench sink`` measures the pickled path).
The bytes of ``value`` are untouched, so a record that is not UTF-8 reaches the dead-letter
topic as Kafka held it. Handing bytes over takes private Spark APIs (:mod:`sink.spark_private`); with
``sink_spark_private_api`` false the same framed column goes through the public, pickled
``DataFrame.rdd``.
"""

from __future__ import annotations

from operator import itemgetter
from typing import TYPE_CHECKING, Any

from sink import spark_private
from sink.executor.unframe import NO_VALUE

if TYPE_CHECKING:
    from pyspark.rdd import RDD
    from pyspark.sql import DataFrame


def framed(rows: DataFrame) -> DataFrame:
    """``rows`` (value, partition, offset) -> one binary column ``record`` (see the module doc)."""
    from pyspark.sql import functions as F

    flag = F.when(F.col("value").isNull(), F.lit(NO_VALUE.decode())).otherwise(F.lit("v"))
    head = F.concat(F.concat_ws(" ", F.col("partition"), F.col("offset"), flag), F.lit("\n"))
    value = F.coalesce(F.col("value"), F.lit(b""))
    return rows.select(F.concat(F.encode(head, "UTF-8"), value).alias("record"))


def records(rows: DataFrame, *, private: bool = True) -> tuple[RDD[Any], Any]:
    """The framed ``rows`` as an RDD of byte strings, and the JVM Dataset it runs (for :func:`observed`;
    None with ``private`` false: the public ``DataFrame.rdd``, whose records are ``bytearray``)."""
    if private:
        return spark_private.bytes_rdd(framed(rows))
    return framed(rows).rdd.map(itemgetter(0)), None


def observed(dataset: Any, name: str) -> dict[str, Any]:
    """The metrics the run of ``dataset``'s RDD (:func:`records`, private) observed under ``name``."""
    return spark_private.rdd_observed_metrics(dataset, name)
