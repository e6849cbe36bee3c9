"""lab.bench.report: docs/benchmarks.md is made from results/, not typed; every result file is cited by some
page; a result file with keys missing (or no file at all) is ``n/a`` in the page, never a crash."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Final

import pytest
from typer.testing import CliRunner

from lab.bench import report
from lab.bench.cli import app

REPO: Final = Path(__file__).resolve().parents[4]
RESULTS: Final = REPO / "results"
TEMPLATE: Final = REPO / "docs" / "benchmarks.md.in"
PAGE: Final = REPO / "docs" / "benchmarks.md"


def test_the_committed_page_is_what_the_results_make() -> None:
    assert PAGE.read_text(encoding="utf-8") == report.page(RESULTS, TEMPLATE), (
        f"docs/benchmarks.md is out of date: run {report.COMMAND}"
    )


def uncited(root: Path = REPO) -> list[str]:
    """Files under results/ whose name no page names: README.md, docs/*.md (the generated page included);
    files .gitignore leaves out of the repository (the chaos suite's own runs) aside."""
    import fnmatch

    pages = [root / "README.md", *sorted((root / "docs").glob("*.md"))]
    text = "\n".join(page.read_text(encoding="utf-8") for page in pages if page.is_file())
    ignore = root / ".gitignore"
    ignored = [line.strip() for line in ignore.read_text().splitlines()] if ignore.is_file() else []
    files = sorted(p for p in (root / "results").rglob("*") if p.is_file())
    paths = [p.relative_to(root).as_posix() for p in files if p.name not in text]
    return [
        path for path in paths if not any(fnmatch.fnmatch(path, pattern) for pattern in ignored if pattern)
    ]


def test_every_result_file_is_cited_by_a_page() -> None:
    assert uncited() == []


def test_a_result_file_no_page_cites_is_found(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "results" / "sub").mkdir(parents=True)
    for name in ("bench_a.json", "bench_a.png", "bench_old.json", "sub/shot.png"):
        (tmp_path / "results" / name).write_text("{}")
    (tmp_path / "README.md").write_text("See `results/bench_a.json`.\n")
    (tmp_path / "docs" / "x.md").write_text("![a](../results/bench_a.png) ![b](../results/sub/shot.png)\n")
    (tmp_path / "results" / "chaos-run.json").write_text("{}")
    (tmp_path / ".gitignore").write_text("results/chaos-*\n")
    assert uncited(tmp_path) == ["results/bench_old.json"]


def test_every_benchmark_has_its_result_file_and_the_template_its_figures() -> None:
    names = {bench.result for bench in report.BENCHMARKS}
    assert all((RESULTS / name).is_file() for name in names)
    template = TEMPLATE.read_text(encoding="utf-8")
    wanted = set(re.findall(r"\{\{ figures ([\w-]+) \}\}", template))
    known = {b.key for b in report.BENCHMARKS if b.figures} | set(report.EXTRA_FIGURES)
    assert wanted <= known
    assert {b.key for b in report.BENCHMARKS if b.figures} <= wanted  # no figures made for nothing


def _result_names() -> list[str]:
    return sorted(
        {bench.result for bench in report.BENCHMARKS} | {n for n, _ in report.EXTRA_FIGURES.values()}
    )


def test_a_result_with_missing_keys_is_na_never_a_crash(tmp_path: Path) -> None:
    for name in _result_names():
        (tmp_path / name).write_text("{}", encoding="utf-8")
    page = report.page(tmp_path, TEMPLATE)
    assert "{{" not in page
    for bench in report.BENCHMARKS:
        row = next(line for line in page.splitlines() if line.startswith(f"| {bench.title} |"))
        assert report.NA in row, bench.title


def test_a_result_with_some_keys_keeps_them_and_misses_the_rest(tmp_path: Path) -> None:
    shutil.copytree(RESULTS, tmp_path, dirs_exist_ok=True)
    parse = json.loads((RESULTS / "bench_parse.json").read_text(encoding="utf-8"))
    del parse["lines_per_s"]["irc_event"]
    parse["goal_lines_per_s"] = "two hundred thousand"  # a key of the wrong kind
    (tmp_path / "bench_parse.json").write_text(json.dumps(parse), encoding="utf-8")
    row = next(line for line in report.table(tmp_path).splitlines() if line.startswith("| parser |"))
    assert "267k lines per CPU-second; 206k with the JSON encoding; the `irc` package n/a" in row
    assert "≥ n/a/s: n/a" in row


@pytest.mark.parametrize(
    ("content", "problem"),
    [(None, "no result file"), ("not json", "unreadable"), ("[1, 2]", "not a JSON object")],
)
def test_a_missing_or_broken_result_file_is_one_na_row(
    tmp_path: Path, content: str | None, problem: str
) -> None:
    shutil.copytree(RESULTS, tmp_path, dirs_exist_ok=True)
    (tmp_path / "monitor.json").unlink()
    if content is not None:
        (tmp_path / "monitor.json").write_text(content, encoding="utf-8")
    page = report.page(tmp_path, TEMPLATE)
    row = next(line for line in page.splitlines() if line.startswith("| monitor |"))
    assert f"| n/a ({problem}" in row
    assert "`results/monitor.json`: " + problem in page  # the figures in the prose say so too
    assert next(line for line in page.splitlines() if line.startswith("| parser |")).count("n/a") == 0


def test_a_view_of_anything_missing_is_na() -> None:
    view = report.View({"a": [1.5, {"b": True}], "c": "text", "d": float("nan")})
    assert view("a", 0).f(2) == "1.50"
    assert view("a", 5, "x").f() == report.NA
    assert view("a", 1, "b").f() == report.NA  # a boolean is no figure
    assert view("c").f() == report.NA and view("c").text() == "text"
    assert view("d").f() == report.NA
    assert view("a").each()[0].number() == 1.5 and view("c").each() == []
    assert report.View(None)("x", 0).items() == []


def test_figures_are_rounded_as_by_hand() -> None:
    assert report.fixed(1.215, 2) == "1.22"
    assert report.fixed(0.625, 2) == "0.63"
    assert report.fixed(13865, 0, grouped=True) == "13,865"
    assert report.View(99649).k(1) == "99.6k" and report.View(267263).k() == "267k"
    assert report.View(125.0).f(1, trim=True) == "125" and report.View(12.5).f(1, trim=True) == "12.5"
    assert report.span([report.View(1.3), report.View(1.394), report.View(None)]) == "1.30-1.39"


def test_an_unknown_placeholder_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="unknown placeholder"):
        report.render(RESULTS, "{{ tabel }}")
    with pytest.raises(ValueError, match="no figures named 'nothing'"):
        report.render(RESULTS, "{{ figures nothing }}")


def test_the_command_writes_and_checks_the_page(tmp_path: Path) -> None:
    runner = CliRunner()
    out = tmp_path / "benchmarks.md"
    paths = ["--results", str(RESULTS), "--template", str(TEMPLATE), "--output", str(out)]
    stale = runner.invoke(app, ["report", *paths, "--check"])
    assert stale.exit_code == 1 and f"{out} is out of date: run {report.COMMAND}" in stale.output
    wrote = runner.invoke(app, ["report", *paths])
    assert wrote.exit_code == 0 and out.read_text(encoding="utf-8") == PAGE.read_text(encoding="utf-8")
    fresh = runner.invoke(app, ["report", *paths, "--check"])
    assert fresh.exit_code == 0, fresh.output


def _capacity_step(rate: float, us: float, p99: float, *, sustained: bool) -> dict[str, object]:
    return {
        "rate": rate,
        "sent_per_s": rate,
        "lost": 0,
        "api_e2e_s": {"p50": p99 / 2, "p99": p99},
        "write_lag_s": {"p50": 5.0, "p99": 10.0},
        "sink_lag_records": {"growing": not sustained},
        "cpu_us_per_msg": {"ingesters": us / 2, "kafka": us / 2, "simulator": 0.0},
        "pipeline_us_per_msg": us,
        "machine_cores": 1.0,
        "sustained": sustained,
    }


def test_the_capacity_row_judges_the_rate_and_the_cpu_of_the_sustained_steps() -> None:
    goal = {"msgs_per_s": 8000, "pipeline_us_per_msg": 350.0, "api_e2e_p99_s": 1.0}
    steps = [
        _capacity_step(4000, 340.0, 0.6, sustained=True),
        _capacity_step(8000, 300.0, 0.8, sustained=True),
    ]
    met = report.Result("bench_capacity.json", {"sustained_msgs_per_s": 8000, "goal": goal, "steps": steps})
    assert report._capacity_goal(met) == "≥ 8,000 msg/s: met; ≤ 350 µs per message where sustained: met"
    assert "4,000 msg/s: 340 µs, p99 0.60 s; 8,000: 300 µs, p99 0.80 s" in report._capacity(met)
    steps[1] = _capacity_step(8000, 400.0, 3.0, sustained=False)
    missed = report.Result(
        "bench_capacity.json", {"sustained_msgs_per_s": 4000, "goal": goal, "steps": steps}
    )
    assert report._capacity_goal(missed) == "≥ 8,000 msg/s: missed; ≤ 350 µs per message where sustained: met"
    assert "8,000: 400 µs, p99 3.00 s (not sustained)" in report._capacity(missed)
    figures = report._capacity_figures(missed)
    assert "sink lag growing: yes; pipeline 400.0 µs per message (ingesters 200.0, Kafka 200.0)" in figures
    assert "simulator" not in figures  # a part that spent nothing is left out


def test_vs_justlog_storage_names_the_tables_the_result_holds() -> None:
    tables = {"a_blocks": {"bytes_per_message": 60.04}, "a_days": {"bytes_per_message": 0.1}}
    result = report.Result(
        "bench_vs_justlog.json",
        {
            "table": [
                {"row": "storage", "justlog": 200.0, "chatlog": 220.0, "ratio": 1.1},
                {"row": "storage_packed", "justlog": 200.0, "chatlog": 160.2, "ratio": 0.801},
                {"row": "storage_compacted", "justlog": 200.0, "chatlog": 60.1, "ratio": 0.3},
            ],
            "chatlog": {
                "storage": {"tables": {"a_blocks": {"bytes_per_message": 219.9}}},
                "storage_packed": {"tables": {"a_blocks": {"bytes_per_message": 160.1}}},
                "storage_compacted": {"tables": tables},
            },
        },
    )
    x = report.X
    said = report._vs_justlog(result)
    assert f"220.0 B as the backfill wrote it, after a flush (1.10{x}: `a_blocks` 219.9)" in said
    assert f"160.2 B packed, compactions as configured, as read (0.80{x}: `a_blocks` 160.1)" in said
    assert f"major-compacted 60.1 B (0.30{x}: `a_blocks` 60.0, `a_days` 0.1)" in said
    assert report._vs_justlog_goal(result).endswith(
        f"storage ≤ 0.75{x} as the product leaves it: missed (0.80{x})"
    )


def test_vs_justlog_judges_the_current_case_apart_from_the_past() -> None:
    def cell(row: str, label: str, ratio: float) -> dict[str, object]:
        return {"row": row, "label": label, "ratio": ratio, "justlog": 1.0, "chatlog": ratio, "p99_ms": {}}

    table = [
        cell("user_month_text_1", "user-month text, 1 client", 1.6),
        cell("current_user_month_text_1", "current user-month text, 1 client", 0.9),
        cell("current_channel_day_json_8", "current channel day json, 8 clients", 1.3),
    ]
    result = report.Result(
        "bench_vs_justlog.json", {"table": table, "current": {"chatlog": {"pack": {"pack_s": 42.0}}}}
    )
    x = report.X
    goal = report._vs_justlog_goal(result)
    assert f"text met (1.60{x})" in goal  # the current rows are not the past user-month's
    assert f"current month and day ≥ 1.0{x}: missed (0.90-1.30{x})" in goal
    said = report._vs_justlog_current(result)
    assert "the hourly pack, 42 s" in said and (
        f"justlog user-month text, 1 client 0.90{x}, channel day json, 8 clients 1.30{x}." in said
    )
    table[1]["ratio"] = 1.05
    assert f"current month and day ≥ 1.0{x}: met (1.05-1.30{x})" in report._vs_justlog_goal(result)
    empty = report.Result("bench_vs_justlog.json", {"table": table[:1]})
    assert report._vs_justlog_current(empty) == "The current month and day were not measured in this run."
    assert f"current month and day ≥ 1.0{x}: not measured in this run; storage" in report._vs_justlog_goal(
        empty
    )
