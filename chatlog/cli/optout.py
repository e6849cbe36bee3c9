"""``chatlog optout add|remove|list``: the opt-out registry (the compacted ``chatlog.optout`` topic,
:mod:`consent`), every change recorded in the consent audit; ``add`` erases the stored rows too unless
``--keep-history``."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Annotated

import typer

from chatlog.cli.erase import CHANNEL_ID_HELP, USER_ID_HELP, actor, cassandra, run_erase
from core.errors import one_line
from core.times import format_time

if TYPE_CHECKING:
    from consent.audit import AuditEntry
    from consent.records import OptOut
    from consent.settings import ConsentSettings

optout_app = typer.Typer(
    help="Opt-outs: users and channels that are not logged, served or kept (the chatlog.optout topic).",
    no_args_is_help=True,
)

LIST_TIMEOUT_S = 30.0


def _target(user_id: str | None, channel_id: str | None) -> tuple[str, str]:
    """(kind, id) of exactly one of --user-id / --channel-id; one line otherwise."""
    from consent.records import check_id
    from core.errors import ChatlogError

    if (user_id is None) == (channel_id is None):
        raise ChatlogError("give exactly one of --user-id ID and --channel-id ID")
    if user_id is not None:
        return "user", check_id("user", user_id)
    assert channel_id is not None
    return "channel", check_id("channel", channel_id)


def _kafka() -> ConsentSettings:
    """Consent settings, Kafka checked reachable and the topic there (one line otherwise, in seconds)."""
    from consent.settings import ConsentSettings
    from core.errors import ChatlogError
    from core.kafka_probe import probe
    from core.settings import load

    settings = load(ConsentSettings)
    metadata = probe(settings)
    if settings.topic_optout not in metadata.topics:
        raise ChatlogError(
            f"the opt-out topic {settings.topic_optout} does not exist in Kafka at "
            f"{settings.kafka_bootstrap_servers} (CHATLOG_TOPIC_OPTOUT; `chatlog init` creates it)"
        )
    return settings


def _driver_errors() -> tuple[type[BaseException], ...]:
    from cassandra import DriverException
    from cassandra.cluster import NoHostAvailable

    return (DriverException, NoHostAvailable)


def optout_line(o: OptOut) -> str:
    flags = " keep-history" if o.keep_history else ""
    reason = f" reason={json.dumps(o.reason)}" if o.reason else ""
    return f"{o.kind} {o.id} since {format_time(o.at)} by {o.by}{flags}{reason}"


def audit_line(e: AuditEntry) -> str:
    where = f" in channel {e.channel}" if e.channel else ""
    deleted = " deleted " + ",".join(f"{k}={v}" for k, v in sorted(e.deleted.items())) if e.deleted else ""
    reason = f" reason={json.dumps(e.reason)}" if e.reason else ""
    return f"{format_time(e.at)} {e.action} {e.kind} {e.id}{where} by {e.by}{deleted}{reason}"


@optout_app.command("add")
def optout_add(
    user_id: Annotated[str | None, typer.Option("--user-id", help=USER_ID_HELP)] = None,
    channel_id: Annotated[str | None, typer.Option("--channel-id", help=CHANNEL_ID_HELP)] = None,
    reason: Annotated[str | None, typer.Option(help="Why (kept in the registry and the audit).")] = None,
    keep_history: Annotated[
        bool, typer.Option("--keep-history", help="Stop logging and serving, but keep the stored rows.")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="The erasure report as one JSON object.")] = False,
    keyspace: Annotated[str | None, typer.Option(help="Cassandra keyspace.")] = None,
) -> None:
    """Opt a user or a channel out: ingesters stop logging it, the sink stops writing it, `chatlog serve`
    answers 403 for it; then every stored row of it is erased (unless --keep-history)."""
    from consent import audit
    from consent.publish import OptOutPublisher
    from core.errors import ChatlogError

    kind, id_ = _target(user_id, channel_id)
    settings = _kafka()
    with cassandra(keyspace) as (cassandra_settings, session):  # both services checked before any change
        ks = cassandra_settings.cassandra_keyspace
        record = OptOutPublisher(settings).add(
            kind, id_, reason=reason, by=actor(), keep_history=keep_history
        )
        typer.echo(f"opted out {kind} {id_} (topic {settings.topic_optout})", err=as_json)
        try:
            audit.record_optout(session, ks, record)
        except _driver_errors() as exc:
            raise ChatlogError(
                f"opted out {kind} {id_}, but writing the audit row failed: {one_line(exc)}"
            ) from None
        if keep_history:
            return
        run_erase(
            session,
            ks,
            user_id=id_ if kind == "user" else None,
            channel_id=id_ if kind == "channel" else None,
            as_json=as_json,
        )


@optout_app.command("remove")
def optout_remove(
    user_id: Annotated[str | None, typer.Option("--user-id", help=USER_ID_HELP)] = None,
    channel_id: Annotated[str | None, typer.Option("--channel-id", help=CHANNEL_ID_HELP)] = None,
    reason: Annotated[str | None, typer.Option(help="Why (kept in the audit).")] = None,
    keyspace: Annotated[str | None, typer.Option(help="Cassandra keyspace.")] = None,
) -> None:
    """Lift an opt-out: new messages are logged and served again (erased ones stay gone)."""
    from consent import audit
    from consent.publish import OptOutPublisher
    from core.errors import ChatlogError
    from core.times import now_ms

    kind, id_ = _target(user_id, channel_id)
    settings = _kafka()
    with cassandra(keyspace) as (cassandra_settings, session):
        by = actor()
        at = now_ms()
        OptOutPublisher(settings).remove(kind, id_, by=by)
        typer.echo(f"lifted the opt-out of {kind} {id_}")
        try:
            audit.record(
                session,
                cassandra_settings.cassandra_keyspace,
                action="lift",
                kind=kind,
                id=id_,
                by=by,
                at=at,
                reason=reason,
            )
        except _driver_errors() as exc:
            raise ChatlogError(
                f"lifted {kind} {id_}, but writing the audit row failed: {one_line(exc)}"
            ) from None


@optout_app.command("list")
def optout_list(
    show_audit: Annotated[
        bool, typer.Option("--audit", help="The consent audit (newest first) instead of the opt-outs.")
    ] = False,
    user_id: Annotated[str | None, typer.Option("--user-id", help="Only this user.")] = None,
    channel_id: Annotated[str | None, typer.Option("--channel-id", help="Only this channel.")] = None,
    limit: Annotated[int, typer.Option(min=1, help="Most audit entries shown.")] = 1000,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object per line.")] = False,
    keyspace: Annotated[str | None, typer.Option(help="Cassandra keyspace (--audit).")] = None,
) -> None:
    """The current opt-outs (the topic read to its end), or with --audit every opt-out, lift, erasure and
    code recorded, newest first (ids and counts, never message text)."""
    from core.errors import ChatlogError

    kind: str | None = None
    id_: str | None = None
    if user_id is not None or channel_id is not None:
        kind, id_ = _target(user_id, channel_id)
    if show_audit:
        from consent import audit

        with cassandra(keyspace) as (cassandra_settings, session):
            ks = cassandra_settings.cassandra_keyspace
            try:
                entries = audit.read(session, ks, limit=limit, kind=kind, id=id_)
            except _driver_errors() as exc:
                raise ChatlogError(
                    f"reading the consent audit in keyspace {ks}: "
                    f"{one_line(exc)} (`chatlog init` creates its table)"
                ) from None
        for e in entries:
            typer.echo(json.dumps(e.as_json()) if as_json else audit_line(e))
        if not entries and not as_json:
            typer.echo(f"no consent audit entries in keyspace {ks}", err=True)
        return
    from consent.registry import OptOutRegistry

    settings = _kafka()
    registry = OptOutRegistry(settings, settings.topic_optout)
    try:
        registry.start()
        registry.wait_ready(LIST_TIMEOUT_S)
        optouts = registry.optouts()
    finally:
        registry.close()
    shown = [o for o in optouts if kind is None or (o.kind, o.id) == (kind, id_)]
    for o in shown:
        typer.echo(o.model_dump_json() if as_json else optout_line(o))
    if not shown and not as_json:
        typer.echo(f"no opt-outs in {settings.topic_optout}", err=True)


def register(app: typer.Typer) -> None:
    """Add ``optout add/remove/list`` to ``app``."""
    app.add_typer(optout_app, name="optout")
