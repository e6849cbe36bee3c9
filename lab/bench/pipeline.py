"""``chatlog bench scale``: time to confirm 10k-100k channels over N ingesters, and RSS per ingester (the
pipeline's latency and capacity at rising rates: ``chatlog bench capacity``, :mod:`lab.bench.capacity`)."""

from __future__ import annotations

import json
import os
import platform
import time
from pathlib import Path

from core.settings import StackSettings
from lab.bench.scratch import scratch_topics
from lab.demo.supervisor import Supervisor
from lab.results import RESULTS_DIR, write_json
from lab.scrape import scrape
from lab.stack.process import rss_mib


def machine() -> dict[str, object]:
    return {"cpus": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version()}


def _confirmed(port: int) -> float:
    metrics = scrape(port)
    return (metrics.value("chatlog_irc_channels_confirmed") or 0.0) if metrics is not None else 0.0


def scale(
    settings: StackSettings, sizes: list[int], workers: int, join_rate: int, timeout: float
) -> dict[str, object]:
    """Register N channels, start ``workers`` ingesters; time to confirm all and RSS per ingester."""
    out = []
    for n in sizes:
        ns = f"bench-scale-{n}-{int(time.time())}"
        with scratch_topics(settings, ns) as s:
            row = _scale_once(s, settings.state_dir / "runs" / ns, n, workers, join_rate, timeout)
        out.append(row)
        print(json.dumps(row), flush=True)
    result: dict[str, object] = {"bench": "scale", "runs": out, "machine": machine()}
    write_json(RESULTS_DIR / "bench_scale.json", result, indent=1)
    return result


def _scale_once(
    s: StackSettings, run_dir: Path, n: int, workers: int, join_rate: int, timeout: float
) -> dict[str, object]:
    run_dir.mkdir(parents=True, exist_ok=True)
    names = run_dir / "channels.txt"
    names.write_text("\n".join(f"s{n}_{i}" for i in range(n)) + "\n")
    env = {
        **s.topic_env(),
        "CHATLOG_IRC_JOIN_RATE": str(join_rate),
        "CHATLOG_IRC_JOIN_WINDOW_S": "10",
        "CHATLOG_IRC_FLAVOR": "ircv3",
    }
    with Supervisor(run_dir / "logs", env=env) as sup:
        t_reg = time.monotonic()
        if sup.start("add", ["channels", "add", "--file", str(names)]).proc.wait(timeout=600) != 0:
            raise RuntimeError(f"registering {n} channels failed; see {run_dir / 'logs'}")
        register_s = time.monotonic() - t_reg
        ports = [19200 + i for i in range(workers)]
        t0 = time.monotonic()
        for i, port in enumerate(ports):
            sup.start(
                f"w{i}",
                ["ingest", "--replica", "0", "--worker-id", f"sc{i}"],
                env={"CHATLOG_METRICS_PORT": str(port)},
            )
        confirmed, elapsed = 0.0, 0.0
        while elapsed < timeout:
            time.sleep(1.0)
            elapsed = time.monotonic() - t0
            confirmed = sum(_confirmed(p) for p in ports)
            if confirmed >= n:
                break
        rss = [rss_mib(sup.children[f"w{i}"].proc.pid) or 0.0 for i in range(workers)]
    return {
        "channels": n,
        "workers": workers,
        "join_rate_per_10s_per_worker": join_rate,
        "register_s": round(register_s, 1),
        "confirm_all_s": round(elapsed, 1),
        "confirmed": int(confirmed),
        "bound_by_join_rate_s": round(n / workers / (join_rate / 10), 1),
        "rss_mib_per_worker": [round(r) for r in rss],
        "channels_per_worker": n // workers,
        "rss_mib_max": round(max(rss)),
    }
