"""Commands of this package, registered on the main ``chatlog`` app by chatlog.cli.commands:
``channels add/remove/list``, ``ingest``, ``status``, and the benchmarks ``ingest`` and ``rebalance``.
"""

from __future__ import annotations

import json
import stat
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from core.errors import one_line
from core.times import now_ms

if TYPE_CHECKING:
    from collections.abc import Collection

    from ingest.registry import Registry
    from serve.fleet_gaps import FleetGaps

channels_app = typer.Typer(help="The channel registry (the compacted channels topic).", no_args_is_help=True)

_FILE_HELP = "File of channel names (whitespace or comma separated); '-' reads stdin."
ChannelNames = Annotated[list[str] | None, typer.Argument(help="Channel names ('#' optional).")]
ChannelFile = Annotated[Path | None, typer.Option("--file", "-f", help=_FILE_HELP)]
"""The channels ``channels add`` and ``channels remove`` change: named, from a file, or both."""
MAX_FILE_MIB = 64
"""Most a channel file may hold (a million Twitch logins take 27 MiB): more is refused, never read on."""


def _read_channel_file(file: Path) -> str:
    """The text of ``file`` ('-': stdin), a file or a pipe of at most :data:`MAX_FILE_MIB` MiB."""
    from core.errors import ChatlogError

    limit = MAX_FILE_MIB * 1024 * 1024
    if str(file) == "-":
        data = sys.stdin.buffer.read(limit + 1)
    else:
        if not (stat.S_ISREG(mode := file.stat().st_mode) or stat.S_ISFIFO(mode)):
            raise ChatlogError(f"--file {file} is not a regular file or a pipe ('-' reads stdin)")
        with file.open("rb") as stream:
            data = stream.read(limit + 1)
    if len(data) > limit:
        raise ChatlogError(f"--file {file} holds more than {MAX_FILE_MIB} MiB of channel names")
    return data.decode("utf-8")


def _names(names: list[str] | None, file: Path | None) -> list[str]:
    from core.errors import ChatlogError
    from ingest.registry import names_from_text

    out = list(names or [])
    if file is not None:
        try:
            text = _read_channel_file(file)
        except (OSError, UnicodeDecodeError) as exc:
            raise ChatlogError(f"cannot read channel file {file}: {exc}") from None
        out.extend(names_from_text(text))
    if not out:
        raise ChatlogError("no channel names given (pass NAME... or --file F)")
    return out


def _registry() -> Registry:
    from core.kafka_probe import probe
    from core.settings import load
    from ingest.registry import Registry
    from ingest.settings import RegistrySettings

    settings = load(RegistrySettings)
    probe(settings)  # one line, within seconds, when Kafka is not there
    return Registry(settings, flavor=settings.irc_flavor)


def _fleet_gaps(channels: Collection[str], replicas: list[int], keyspace: str | None) -> FleetGaps | str:
    """The last hour's gaps of ``channels`` from the ledger, or a note when the keyspace has none;
    Cassandra not answering is a one-line error."""
    from cassandra import DriverException, InvalidRequest
    from cassandra.cluster import NoHostAvailable

    from core.cql import open_session, quiet_driver_logs
    from core.errors import ChatlogError
    from core.settings import KEYSPACE_OPTION, CassandraSettings, load
    from serve.fleet_gaps import read_fleet_gaps

    settings = load(CassandraSettings, cassandra_keyspace=keyspace, options=KEYSPACE_OPTION)
    quiet_driver_logs()
    cluster, session = open_session(settings)
    try:
        return read_fleet_gaps(session, settings.cassandra_keyspace, channels, replicas=replicas)
    except InvalidRequest:  # no such table, or no such keyspace: made before the ledger existed
        return (
            f"gaps: keyspace {settings.cassandra_keyspace} has no coverage ledger "
            "(`chatlog init` creates its tables; the sink writes it)"
        )
    except (DriverException, NoHostAvailable) as exc:
        raise ChatlogError(
            f"reading the coverage ledger from Cassandra at {settings.cassandra_hosts}:"
            f"{settings.cassandra_port}: {one_line(exc, typed=True)}"
        ) from None
    finally:
        cluster.shutdown()


@channels_app.command("add")
def channels_add(names: ChannelNames = None, file: ChannelFile = None) -> None:
    """Register channels; ones already registered are left as they are."""
    wanted = _names(names, file)  # before Kafka: a wrong file is said at once
    change = _registry().add(wanted)
    typer.echo(f"added {len(change.changed)} channel(s); {len(change.unchanged)} already registered")


@channels_app.command("remove")
def channels_remove(names: ChannelNames = None, file: ChannelFile = None) -> None:
    """Unregister channels (tombstones); unknown names are reported and ignored."""
    wanted = _names(names, file)  # before Kafka: a wrong file is said at once
    change = _registry().remove(wanted)
    typer.echo(f"removed {len(change.changed)} channel(s); {len(change.unchanged)} were not registered")


@channels_app.command("list")
def channels_list(
    as_json: Annotated[bool, typer.Option("--json", help="One JSON record per line.")] = False,
    count: Annotated[bool, typer.Option("--count", help="Only the number of channels.")] = False,
) -> None:
    """Every registered channel, sorted (the topic read to its end)."""
    registry = _registry()
    channels = registry.channels()
    if count:
        typer.echo(str(len(channels)))
        return
    out = sys.stdout
    for login in sorted(channels):
        record = channels[login]
        if as_json:
            out.write(json.dumps({"login": record.login, "added_at": record.added_at}) + "\n")
        else:
            out.write(login + "\n")


def register(app: typer.Typer) -> None:
    """Add this package's commands to ``app`` and its benchmarks to ``bench``."""
    app.add_typer(channels_app, name="channels")

    @app.command()
    def ingest(
        replica: Annotated[int | None, typer.Option(help="Replica (CHATLOG_INGEST_REPLICA).")] = None,
        worker_id: Annotated[
            str | None, typer.Option(help="Worker id (CHATLOG_INGEST_WORKER_ID); default <host>-<pid>.")
        ] = None,
        max_channels: Annotated[
            int | None,
            typer.Option(
                min=1,
                help="Most channels this worker joins, hottest first; the rest are reported over "
                "capacity (CHATLOG_INGEST_MAX_CHANNELS); default no limit.",
            ),
        ] = None,
    ) -> None:
        """One ingester: joins the replica's consumer group and logs the channels of its buckets."""
        from core.settings import load
        from ingest.settings import IngestSettings
        from ingest.worker import run

        settings = load(
            IngestSettings,
            ingest_replica=replica,
            ingest_worker_id=worker_id,
            ingest_max_channels=max_channels,
            options={
                "ingest_replica": "--replica",
                "ingest_worker_id": "--worker-id",
                "ingest_max_channels": "--max-channels",
            },
        )
        raise typer.Exit(run(settings))

    @app.command()
    def status(
        as_json: Annotated[bool, typer.Option("--json", help="Machine-readable report.")] = False,
        replicas: Annotated[
            int | None,
            typer.Option(min=0, max=1000, help="Expect replicas 0..N-1 (default: the replicas seen)."),
        ] = None,
        stale: Annotated[
            float | None, typer.Option(help="Ignore heartbeats older than this, s (CHATLOG_STATUS_STALE_S).")
        ] = None,
        with_gaps: Annotated[
            bool,
            typer.Option(
                "--gaps/--no-gaps", help="Report the last hour's gaps per replica from the coverage ledger."
            ),
        ] = True,
        keyspace: Annotated[str | None, typer.Option(help="Cassandra keyspace of the ledger.")] = None,
    ) -> None:
        """Per replica, from the ingesters' heartbeats: registered vs confirmed channels, bucket owners,
        uncovered channels; and, from the coverage ledger in Cassandra, the channels with a gap in the last
        hour (`chatlog monitor` counts its gaps from the heartbeats instead).

        Exit 1 when a registered channel is logged by nobody in some replica.
        """
        _status(as_json=as_json, replicas=replicas, stale=stale, with_gaps=with_gaps, keyspace=keyspace)


def _status(
    *, as_json: bool, replicas: int | None, stale: float | None, with_gaps: bool, keyspace: str | None
) -> None:
    """The work of ``chatlog status`` (the command :func:`register` adds), given its options: the
    heartbeats' view of every replica and the ledger's gaps (:func:`_fleet_gaps`), as text or JSON on
    stdout; :class:`typer.Exit` 1 when a registered channel is logged by nobody in some replica."""
    from core.kafka_probe import probe
    from core.settings import load
    from ingest import status as st
    from ingest.registry import Registry
    from ingest.settings import StatusSettings
    from serve import fleet_gaps

    settings = load(StatusSettings, status_stale_s=stale, options={"status_stale_s": "--stale"})
    probe(settings)
    registered = Registry(settings, flavor=settings.irc_flavor).channels()
    now = now_ms()
    since = now - int(settings.status_stale_s * 1000)
    beats = st.fresh(
        st.read_heartbeats(settings, since_ms=since), now_ms=now, stale_s=settings.status_stale_s
    )
    report = st.heartbeat_view(registered, beats, range(replicas) if replicas is not None else None)
    gaps = _fleet_gaps(registered, [c.replica for c in report], keyspace) if with_gaps else None
    if as_json:
        doc = st.report_json(report)
        if isinstance(gaps, str):
            doc["gaps"], doc["gaps_note"] = None, gaps
        elif gaps is not None:
            doc["gaps"] = fleet_gaps.report_json(gaps)
        typer.echo(json.dumps(doc))
    else:
        typer.echo(st.report_text(report))
        if gaps is not None:
            typer.echo(gaps if isinstance(gaps, str) else fleet_gaps.report_text(gaps))
    if not all(c.ok for c in report):
        raise typer.Exit(1)
