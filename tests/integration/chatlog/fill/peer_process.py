"""A justlog or rustlog peer in a process of its own, for ``chatlog fill``'s tests: the routes a fill uses,
in those projects' exact shapes, over raw lines read from a file.

``GET /list?channel=<login>`` (rustlog also ``?channelid=<id>``) answers ``{"availableLogs": [{"year",
"month", "day"}]}`` as strings, newest first, or 404; ``GET /channel/<login>/<y>/<m>/<d>?raw`` (rustlog also
``/channelid/<id>/...``) answers the whole UTC day as ``text/plain; charset=utf-8``, one raw line per line,
whatever ``from``/``to`` say (justlog reads them on its range routes only, rustlog not at all).

Run: ``python -m tests.integration.chatlog.fill.peer_process --port P --lines FILE --flavour justlog``.
``--wait-once PATH``: the first request of that day's path answers 429 ``Retry-After: 1``. ``--delay-s``:
each day's answer waits that long. Every request is appended to ``--log`` (its status and path) once
answered (a day's once its whole answer is sent).
"""

from __future__ import annotations

import argparse
import asyncio
import re
from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path

import uvicorn
from starlette.applications import Starlette
from starlette.background import BackgroundTask
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

SENT = re.compile(rb"tmi-sent-ts=(\d+)")
ROOM = re.compile(rb"room-id=(\d+)")


def days_of(lines: list[bytes]) -> tuple[dict[tuple[int, int, int], list[bytes]], str]:
    """The lines by UTC day (``tmi-sent-ts``), and the channel's id (``room-id``)."""
    days: dict[tuple[int, int, int], list[bytes]] = defaultdict(list)
    room = ""
    for line in lines:
        sent = SENT.search(line)
        if sent is None:
            continue
        at = datetime.fromtimestamp(int(sent[1]) / 1000, UTC)
        days[(at.year, at.month, at.day)].append(line)
        found = ROOM.search(line)
        room = room or (found[1].decode() if found else "")
    return days, room


def app(args: argparse.Namespace) -> Starlette:
    days, room = days_of(Path(args.lines).read_bytes().splitlines())
    log = Path(args.log)
    name, flavour = str(args.channel), str(args.flavour)
    waited: set[str] = set()

    def served(request: Request, status: int) -> None:
        with log.open("a") as out:
            out.write(f"{status} {request.url.path}\n")

    def ours(kind: str, who: str) -> bool:
        if kind == "channelid":
            return flavour == "rustlog" and who == room
        return who == name

    async def listing(request: Request) -> Response:
        who = request.query_params.get("channel") or ""
        by_id = request.query_params.get("channelid")
        found = ours("channelid", by_id) if by_id is not None else ours("channel", who)
        if not found or not days:
            served(request, 404)
            return JSONResponse({"message": "could not load logs"}, status_code=404)
        served(request, 200)
        logs = [{"year": str(y), "month": str(m), "day": str(d)} for y, m, d in sorted(days, reverse=True)]
        return JSONResponse({"availableLogs": logs})

    async def day(request: Request) -> Response:
        p = request.path_params
        key = (int(p["year"]), int(p["month"]), int(p["day"]))
        if request.url.path == args.wait_once and request.url.path not in waited:
            waited.add(request.url.path)
            served(request, 429)
            return PlainTextResponse("slow down", status_code=429, headers={"Retry-After": "1"})
        if not ours(p["kind"], p["who"]) or key not in days:
            served(request, 404)
            return PlainTextResponse("could not load logs", status_code=404)
        await asyncio.sleep(args.delay_s)
        body = b"".join(line + b"\n" for line in days[key])
        done = BackgroundTask(served, request, 200)  # logged once the whole answer is sent
        return Response(body, media_type="text/plain; charset=utf-8", background=done)

    return Starlette(
        routes=[
            Route("/list", listing),
            Route("/{kind:str}/{who:str}/{year:int}/{month:int}/{day:int}", day),
        ]
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--lines", required=True)
    parser.add_argument("--log", required=True)
    parser.add_argument("--channel", required=True)
    parser.add_argument("--flavour", choices=("justlog", "rustlog"), default="justlog")
    parser.add_argument("--wait-once", default="")
    parser.add_argument("--delay-s", type=float, default=0.0)
    args = parser.parse_args()
    uvicorn.run(app(args), host="127.0.0.1", port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
