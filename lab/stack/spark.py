"""A Spark standalone cluster from the installed pyspark: a master and its workers, each a ``spark-class``
process in the foreground (the pip package has ``bin/spark-class`` but not ``sbin/start-master.sh``).

The master's web UI port also serves its state as JSON (``/json/``): a worker is ready when the master
lists it ALIVE. Executors run as children of their worker (in its process group, so stopping a worker
stops them), each with its own Python workers (``PYSPARK_PYTHON``: this interpreter)."""

from __future__ import annotations

import json
import sys
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core.errors import StackError
from lab.stack.services import Service

MASTER_CLASS = "org.apache.spark.deploy.master.Master"
WORKER_CLASS = "org.apache.spark.deploy.worker.Worker"


def spark_home() -> Path:
    """The installed pyspark's directory, which holds ``bin/spark-class`` and ``jars/``."""
    try:
        import pyspark
    except ImportError:
        raise StackError("pyspark is not installed: run `make setup`") from None
    return Path(pyspark.__file__).parent


def master_state(ui_port: int, timeout: float = 2.0) -> dict[str, Any] | None:
    """The master's JSON state (status, workers, applications), or None when it does not answer."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{ui_port}/json/", timeout=timeout) as resp:
            state: dict[str, Any] = json.loads(resp.read())
    except (OSError, ValueError):
        return None
    return state


def _spark_class(main_class: str, *args: str) -> list[str]:
    """The command of a Spark daemon (``main_class``, with ``args``) listening on the loopback only."""
    return [str(spark_home() / "bin" / "spark-class"), main_class, "--host", "127.0.0.1", *args]


@dataclass
class SparkMaster(Service):
    name: str = "spark-master"
    port: int = 7077
    ui_port: int = 8080
    daemon_memory: str = "256m"

    @property
    def url(self) -> str:
        return f"spark://127.0.0.1:{self.port}"

    @property
    def ports(self) -> tuple[int, ...]:
        return (self.port, self.ui_port)

    def prepare(self) -> None:
        self.home.mkdir(parents=True, exist_ok=True)

    def env(self) -> dict[str, str]:
        return _daemon_env(self.daemon_memory)

    def command(self) -> list[str]:
        return _spark_class(MASTER_CLASS, "--port", str(self.port), "--webui-port", str(self.ui_port))

    def ready(self) -> bool:
        state = master_state(self.ui_port)
        return state is not None and state.get("status") == "ALIVE"


@dataclass
class SparkWorker(Service):
    """A worker offering ``cores`` and ``memory`` to executors; its own RPC port is any free one."""

    name: str = "spark-worker-1"
    master: SparkMaster | None = None
    ui_port: int = 8081
    cores: int = 1
    memory: str = "1g"
    daemon_memory: str = "256m"

    @property
    def ports(self) -> tuple[int, ...]:
        return (self.ui_port,)

    def _master(self) -> SparkMaster:
        if self.master is None:
            raise StackError(f"{self.name}: no master")
        return self.master

    def prepare(self) -> None:
        (self.home / "work").mkdir(parents=True, exist_ok=True)

    def env(self) -> dict[str, str]:
        return {**_daemon_env(self.daemon_memory), "PYSPARK_PYTHON": sys.executable}

    def command(self) -> list[str]:
        return _spark_class(
            WORKER_CLASS,
            "--webui-port",
            str(self.ui_port),
            "--cores",
            str(self.cores),
            "--memory",
            self.memory,
            "--work-dir",
            str(self.home / "work"),
            self._master().url,
        )

    def ready(self) -> bool:
        state = master_state(self._master().ui_port)
        if state is None:
            return False
        mine = f":{self.ui_port}"
        return any(
            w.get("state") == "ALIVE" and str(w.get("webuiaddress", "")).endswith(mine)
            for w in state.get("workers", [])
        )


def _daemon_env(memory: str) -> dict[str, str]:
    return {
        "SPARK_HOME": str(spark_home()),
        "SPARK_DAEMON_MEMORY": memory,
        "SPARK_LOCAL_IP": "127.0.0.1",
        "SPARK_NO_DAEMONIZE": "1",
    }
