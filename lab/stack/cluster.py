"""The multi-node stack (``chatlog stack up --nodes 3``): a KRaft quorum of Kafka brokers, a Cassandra ring
and a Spark standalone cluster, all on this machine, with their state in ``<state_dir>/cluster``.

Each Kafka node is a broker and a controller (``kafka-1``..: client port ``cluster_kafka_port`` + 100*(i-1),
controller port the next one, a static quorum of all of them). Each Cassandra node (``cassandra-1``..)
has its own loopback address from ``cluster_cassandra_address`` on with the standard ports; the first one
is the seed, the others join without streaming (a new ring has nothing to stream). Spark: a master and
``cluster_spark_workers`` workers from the installed pyspark (``lab/stack/spark.py``). An InspIRCd of its
own (``cluster_irc_port``) is the IRC server of runs on the cluster (the demo, the cluster's fault tests).

:func:`client_settings` is how the pipeline is pointed at it, with the replication a cluster wants
(topics RF 3 and ``min.insync.replicas`` 2, a NetworkTopologyStrategy keyspace with RF 3)."""

from __future__ import annotations

import ipaddress
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from core.errors import StackError
from core.settings import StackSettings
from lab.stack.services import Cassandra, InspIRCd, Kafka, Service, node_query
from lab.stack.spark import SparkMaster, SparkWorker, master_state

Report = Callable[[str], None]

CLUSTER_NAME = "chatlog-cluster"
"""The Cassandra ring's name (the single stack's node is ``chatlog-dev``: they never gossip together)."""
DATA_CENTER = "datacenter1"
"""The data center of every node (SimpleSnitch's)."""
MAX_NODES = 9
STOP_S = 60.0
KAFKA_STOP_S = 20.0
PORT_STEP = 100


SINK_KAFKA_API_TIMEOUT_MS = 10_000
"""The sink's ``CHATLOG_SINK_KAFKA_API_TIMEOUT_MS`` on a cluster: a micro-batch's offset lookup sent to a
leader that died gives up after this and Spark retries it on the new leader (with Kafka's 60 s the sink
stood still until the dead broker was back: 12-37 s after a kill -9 here; 8 s in a run with this)."""
SINK_KAFKA_REQUEST_TIMEOUT_MS = 5_000
"""The sink's ``CHATLOG_SINK_KAFKA_REQUEST_TIMEOUT_MS`` on a cluster (10 s elsewhere): how long a fetch or an
offset lookup waits for a broker that hangs (its connections stay open) before the client asks for the
partition's leader again. With 10 s a batch waited for a hung leader twice over: until it resumed, 30 s."""
PRODUCER_REQUEST_TIMEOUT_MS = 5_000
"""Every producer's ``CHATLOG_KAFKA_PRODUCER_REQUEST_TIMEOUT_MS`` on a cluster (librdkafka's 30 s
elsewhere): a produce request to a hung leader is given up after this, and sent to the new leader once the
controller has fenced the hung one."""
PRODUCER_METADATA_REFRESH_MS = 5_000
"""Every producer's ``CHATLOG_KAFKA_PRODUCER_METADATA_REFRESH_MS`` on a cluster (librdkafka's 5 min
elsewhere): a request that timed out on a hung leader goes to it again until a metadata refresh names the
new leader, so this bounds how long the partitions of a fenced broker wait."""
SINK_KAFKA_METADATA_MAX_AGE_MS = 5_000
"""The sink's ``CHATLOG_SINK_KAFKA_METADATA_MAX_AGE_MS`` on a cluster (Kafka's 5 min elsewhere): a broker the
controller fenced leaves the sink's clients' list of brokers within this, so the driver stops sending its
offset lookups there (a batch waited 10 s for a broker fenced 9 s before)."""
SINK_KAFKA_RECONNECT_BACKOFF_MS = 5_000
"""The sink's ``CHATLOG_SINK_KAFKA_RECONNECT_BACKOFF_MS`` on a cluster (Kafka's 50 ms-1 s elsewhere): a hung
broker accepts connections, and a Java client sends its metadata requests to the broker it is connecting to
first, so an executor reading a hung leader's partition asked that leader again after every request timeout
until it resumed (30 s); kept away from it this long, the client asks another broker, which names the new
leader."""
BROKER_SESSION_TIMEOUT_MS = 5_000
"""``broker.session.timeout.ms`` of the cluster's brokers (Kafka's default 9 s): the controller fences a
broker whose heartbeats (every ``BROKER_HEARTBEAT_MS``) stopped this long ago; fencing moves the leadership
of its partitions and drops it from every in-sync set. Until then a hung leader's partitions stand still."""
BROKER_HEARTBEAT_MS = 1_000
"""``broker.heartbeat.interval.ms`` of the cluster's brokers (Kafka's default 2 s): five heartbeats per
session timeout, so a busy machine's late one does not fence a healthy broker."""
REPLICA_LAG_MAX_MS = 10_000
"""``replica.lag.time.max.ms`` of the cluster's brokers (Kafka's default 30 s): a follower that has not
caught up for this long leaves the partition's in-sync replicas, so writes with acks=all stop waiting for it.
A broker that hangs entirely is fenced sooner (``BROKER_SESSION_TIMEOUT_MS``), which drops it from every
in-sync set; this bounds a follower that still heartbeats but does not fetch."""


def failover_env() -> dict[str, str]:
    """``CHATLOG_*`` variables with which the pipeline's Kafka clients give up on a broker that died or hangs
    within seconds, and turn to the partition's new leader: on a cluster there is one (on one broker there is
    none, and waiting longer is better: the single stack keeps the clients' defaults)."""
    return {
        "CHATLOG_KAFKA_PRODUCER_REQUEST_TIMEOUT_MS": str(PRODUCER_REQUEST_TIMEOUT_MS),
        "CHATLOG_KAFKA_PRODUCER_METADATA_REFRESH_MS": str(PRODUCER_METADATA_REFRESH_MS),
        "CHATLOG_SINK_KAFKA_REQUEST_TIMEOUT_MS": str(SINK_KAFKA_REQUEST_TIMEOUT_MS),
        "CHATLOG_SINK_KAFKA_API_TIMEOUT_MS": str(SINK_KAFKA_API_TIMEOUT_MS),
        "CHATLOG_SINK_KAFKA_METADATA_MAX_AGE_MS": str(SINK_KAFKA_METADATA_MAX_AGE_MS),
        "CHATLOG_SINK_KAFKA_RECONNECT_BACKOFF_MS": str(SINK_KAFKA_RECONNECT_BACKOFF_MS),
        # a leader that resumes after a hang answers for a moment as if it still led, from its shorter log:
        # a read past its end is "out of range", which Spark would skip as data lost; failing the task
        # instead retries it on the real leader (a run lost 100 messages so before this)
        "CHATLOG_SINK_FAIL_ON_DATA_LOSS": "true",
    }


def replicas(nodes: int) -> int:
    """The replication factor of a cluster of ``nodes``: 3, or every node of a smaller one."""
    return min(3, nodes)


def min_insync(nodes: int) -> int:
    """In-sync replicas a write needs: 2 of 3 (one node may be down), 1 without a spare replica."""
    return max(1, replicas(nodes) - 1)


@dataclass(frozen=True)
class Layout:
    """Where each node of a cluster of ``nodes`` listens and keeps its files."""

    settings: StackSettings
    nodes: int

    def __post_init__(self) -> None:
        if not 2 <= self.nodes <= MAX_NODES:
            raise StackError(
                f"--nodes {self.nodes}: a cluster has 2 to {MAX_NODES} nodes (1: the single stack)"
            )

    @property
    def node_settings(self) -> StackSettings:
        """The stack settings every node of the cluster shares (its state directory, heaps, no SASL)."""
        s = self.settings
        return s.model_copy(
            update={
                "state_dir": s.cluster_dir,
                "kafka_heap": s.cluster_kafka_heap,
                "cassandra_heap": s.cluster_cassandra_heap,
                "kafka_sasl_ssl_port": 0,
            }
        )

    def kafka_port(self, node: int) -> int:
        return self.settings.cluster_kafka_port + PORT_STEP * (node - 1)

    def controller_port(self, node: int) -> int:
        return self.kafka_port(node) + 1

    def cassandra_address(self, node: int) -> str:
        return str(ipaddress.IPv4Address(self.settings.cluster_cassandra_address) + (node - 1))

    @property
    def bootstrap_servers(self) -> str:
        return ",".join(f"127.0.0.1:{self.kafka_port(i)}" for i in self.node_ids)

    @property
    def cassandra_hosts(self) -> str:
        return ",".join(self.cassandra_address(i) for i in self.node_ids)

    @property
    def node_ids(self) -> range:
        return range(1, self.nodes + 1)

    @property
    def voters(self) -> str:
        return ",".join(f"{i}@127.0.0.1:{self.controller_port(i)}" for i in self.node_ids)

    def kafka(self, node: int) -> Kafka:
        settings = self.node_settings.model_copy(
            update={"kafka_port": self.kafka_port(node), "kafka_controller_port": self.controller_port(node)}
        )
        rf = replicas(self.nodes)
        return Kafka(
            settings,
            name=f"kafka-{node}",
            node_id=node,
            voters=self.voters,
            cluster_id_file=self.settings.cluster_dir / "kafka-cluster.id",
            internal_replicas=rf,
            broker_defaults=(
                f"default.replication.factor={rf}\nmin.insync.replicas={min_insync(self.nodes)}\n"
                f"replica.lag.time.max.ms={REPLICA_LAG_MAX_MS}\n"
                f"broker.session.timeout.ms={BROKER_SESSION_TIMEOUT_MS}\n"
                f"broker.heartbeat.interval.ms={BROKER_HEARTBEAT_MS}\n"
            ),
        )

    def cassandra(self, node: int) -> Cassandra:
        address = self.cassandra_address(node)
        settings = self.node_settings.model_copy(update={"cassandra_hosts": address})
        seed = f"{self.cassandra_address(1)}:{self.settings.cassandra_storage_port}"
        return Cassandra(
            settings,
            name=f"cassandra-{node}",
            address=address,
            seeds=seed,
            cluster_name=CLUSTER_NAME,
            file_cache_size="64MiB",
            # a new ring has no data to stream: the other nodes take their tokens and serve at once
            node_options="" if node == 1 else "auto_bootstrap: false\n",
        )

    @property
    def spark_master(self) -> SparkMaster:
        s = self.settings
        return SparkMaster(
            self.node_settings,
            port=s.cluster_spark_port,
            ui_port=s.cluster_spark_ui_port,
            daemon_memory=s.cluster_spark_daemon_memory,
        )

    @property
    def irc(self) -> InspIRCd:
        return InspIRCd(self.node_settings.model_copy(update={"irc_port": self.settings.cluster_irc_port}))

    def spark_worker(self, index: int) -> SparkWorker:
        s = self.settings
        return SparkWorker(
            self.node_settings,
            name=f"spark-worker-{index}",
            master=self.spark_master,
            ui_port=s.cluster_spark_ui_port + index,
            cores=s.cluster_spark_worker_cores,
            memory=s.cluster_spark_worker_memory,
            daemon_memory=s.cluster_spark_daemon_memory,
        )

    @property
    def spark_workers(self) -> list[SparkWorker]:
        return [self.spark_worker(i) for i in range(1, self.settings.cluster_spark_workers + 1)]

    def start_groups(self) -> list[list[Service]]:
        """Services to start together, a group once the one before answers: every Kafka node at once
        (a quorum needs a majority), the Cassandra seed and the Spark master, then the rest."""
        first: list[Service] = [
            *(self.kafka(i) for i in self.node_ids),
            self.cassandra(1),
            self.spark_master,
            self.irc,
        ]
        rest: list[Service] = [*(self.cassandra(i) for i in self.node_ids[1:]), *self.spark_workers]
        return [first, rest]

    def stop_groups(self) -> list[tuple[list[Service], float]]:
        """Services to stop together, in this order, each group with the seconds it has before SIGKILL:
        the IRC server and Spark, then Cassandra, then every Kafka node at once. A broker's controlled
        shutdown waits for the controller quorum; the brokers that stop after the others can wait for it
        forever (one by one, the last always would), so Kafka has ``KAFKA_STOP_S`` and then a SIGKILL (its
        logs are recovered at the next start)."""
        return [
            ([self.irc, *self.spark_workers, self.spark_master], STOP_S),
            ([self.cassandra(i) for i in reversed(self.node_ids)], STOP_S),
            ([self.kafka(i) for i in reversed(self.node_ids)], KAFKA_STOP_S),
        ]

    def services(self) -> list[Service]:
        return [svc for group in self.start_groups() for svc in group]

    def client_settings(self, **update: Any) -> StackSettings:
        """The stack settings pointed at this cluster, with a cluster's replication."""
        rf = replicas(self.nodes)
        values: dict[str, Any] = {
            "state_dir": self.settings.cluster_dir,
            "kafka_bootstrap_servers": self.bootstrap_servers,
            "kafka_port": self.kafka_port(1),
            "kafka_controller_port": self.controller_port(1),
            "kafka_sasl_ssl_port": 0,
            "cassandra_hosts": self.cassandra_hosts,
            "cassandra_local_dc": DATA_CENTER,
            "cassandra_replication": f"{{'class': 'NetworkTopologyStrategy', '{DATA_CENTER}': {rf}}}",
            "topic_replication_factor": rf,
            "irc_port": self.settings.cluster_irc_port,
        }
        return self.settings.model_copy(update={**values, **update})

    def wait_formed(self, timeout: float, report: Report) -> None:
        """Wait until Kafka's metadata lists every broker, every Cassandra node sees the whole ring up and
        the Spark master every worker."""
        t0 = time.monotonic()
        checks: list[tuple[str, Callable[[], str | None]]] = [
            ("kafka", self._kafka_missing),
            ("cassandra", self._ring_missing),
            ("spark", self._workers_missing),
        ]
        for name, missing in checks:
            while (why := missing()) is not None:
                if time.monotonic() - t0 > timeout:
                    raise StackError(f"{name}: the cluster did not form within {timeout:.0f}s: {why}")
                time.sleep(0.5)
            report(f"{name}: {self._formed(name)} after {time.monotonic() - t0:.1f}s")

    def _formed(self, name: str) -> str:
        if name == "kafka":
            return f"{self.nodes} brokers in one KRaft quorum"
        if name == "cassandra":
            return f"ring of {self.nodes} nodes up (cluster {CLUSTER_NAME})"
        return f"master {self.spark_master.url} with {self.settings.cluster_spark_workers} workers"

    def _kafka_missing(self) -> str | None:
        from confluent_kafka.admin import AdminClient

        admin = AdminClient({"bootstrap.servers": self.bootstrap_servers, "log_level": 0})
        try:
            meta = admin.list_topics(timeout=3)
        except Exception as exc:
            return f"no metadata ({exc})"
        have = set(meta.brokers)
        if have != set(self.node_ids):
            return f"brokers {sorted(have)} of {list(self.node_ids)}"
        return None

    def _ring_missing(self) -> str | None:
        for node in self.node_ids:
            up = ring_view(self.settings, self.cassandra_address(node))
            if up is None:
                return f"cassandra-{node} does not answer"
            want = {self.cassandra_address(i) for i in self.node_ids}
            if up != want:
                return f"cassandra-{node} sees {sorted(up)} of {sorted(want)}"
        return None

    def _workers_missing(self) -> str | None:
        state = master_state(self.settings.cluster_spark_ui_port)
        if state is None:
            return "the master does not answer"
        alive = sum(1 for w in state.get("workers", []) if w.get("state") == "ALIVE")
        if alive < self.settings.cluster_spark_workers:
            return f"{alive} of {self.settings.cluster_spark_workers} workers alive"
        return None


def ring_view(settings: StackSettings, address: str) -> set[str] | None:
    """The nodes that the one at ``address`` lists in its ``system.local`` and ``system.peers_v2``, or None
    when it does not answer: a peer listed there has joined its ring."""
    peers = node_query(settings, address, "SELECT peer FROM system.peers_v2")
    if peers is None:
        return None
    return {address, *(str(p.peer) for p in peers)}


def cluster_env(settings: StackSettings, nodes: int) -> dict[str, str]:
    """``CHATLOG_*`` variables that point the pipeline at the cluster of ``nodes``: its brokers and Cassandra
    nodes, a cluster's replication and write guarantees, the sink on the standalone master with its
    checkpoint where every executor of this machine reaches it, and Kafka clients that turn from a dead or
    hung leader to the new one within seconds (:func:`failover_env`)."""
    layout = Layout(settings, nodes)
    clients = layout.client_settings()
    return {
        "CHATLOG_KAFKA_BOOTSTRAP_SERVERS": clients.kafka_bootstrap_servers,
        "CHATLOG_TOPIC_REPLICATION_FACTOR": str(clients.topic_replication_factor),
        "CHATLOG_TOPIC_MIN_INSYNC_REPLICAS": str(min_insync(nodes)),
        "CHATLOG_CASSANDRA_HOSTS": clients.cassandra_hosts,
        "CHATLOG_CASSANDRA_LOCAL_DC": clients.cassandra_local_dc,
        "CHATLOG_CASSANDRA_REPLICATION": clients.cassandra_replication,
        "CHATLOG_SPARK_MASTER": layout.spark_master.url,
        "CHATLOG_SINK_CHECKPOINT": str(settings.cluster_dir / "sink" / "checkpoint"),
        **failover_env(),
    }
