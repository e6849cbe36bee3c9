"""Which files ``chatlog import`` reads, in which order: files, directories, justlog trees."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ingest.import_tree import (
    ImportFile,
    PlanFailed,
    is_channel_file,
    is_user_file,
    natural_key,
    plan_import,
)


def touch(root: Path, *names: str) -> None:
    for name in names:
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"")


def rel(root: Path, files: list[ImportFile]) -> list[tuple[str, bool]]:
    return [(Path(f.path).relative_to(root).as_posix(), f.gz) for f in files]


def test_a_justlog_tree_is_read_from_its_channel_files_by_channel_then_date(tmp_path: Path) -> None:
    touch(
        tmp_path,
        "22484632/2023/12/31/channel.txt.gz",
        "1337/2024/1/10/channel.txt.gz",
        "1337/2024/1/9/channel.txt",
        "1337/2024/10/1/channel.txt",
        "1337/2024/2/1/channel.txt",
        "1337/2023/12/31/channel.txt.gz",
        "1337/2024/1/1337.txt",  # user files: the same lines again
        "1337/2024/1/77.txt.gz",
        "1337/2024/2/2/channel.txt",  # a day the archiver stopped in: both; the .txt is read
        "1337/2024/2/2/channel.txt.gz",
        "1337/notes.md",  # something else
        ".hidden/2024/1/1/channel.txt",  # hidden: not walked
    )
    plan = plan_import([str(tmp_path)])
    assert rel(tmp_path, plan.files) == [
        ("1337/2023/12/31/channel.txt.gz", True),
        ("1337/2024/1/9/channel.txt", False),
        ("1337/2024/1/10/channel.txt.gz", True),
        ("1337/2024/2/1/channel.txt", False),
        ("1337/2024/2/2/channel.txt", False),
        ("1337/2024/10/1/channel.txt", False),
        ("22484632/2023/12/31/channel.txt.gz", True),
    ]
    assert plan.notes == [
        f"{tmp_path}: justlog tree, 7 channel-day files in 2 channels; not read: 2 user files (their lines "
        "are in the channel files), 1 channel.txt.gz beside a channel.txt (read from the .txt), 1 other file"
    ]
    assert plan.problems == []


def test_a_channel_directory_or_a_year_directory_is_a_justlog_tree_too(tmp_path: Path) -> None:
    touch(tmp_path, "1337/2024/1/9/channel.txt", "1337/2024/1/1337.txt")
    year = tmp_path / "1337" / "2024"
    plan = plan_import([str(year)])
    assert rel(year, plan.files) == [("1/9/channel.txt", False)]
    assert "not read: 1 user file" in plan.notes[0]


def test_no_justlog_reads_every_file_and_justlog_insists(tmp_path: Path) -> None:
    touch(tmp_path, "1337/2024/1/9/channel.txt", "1337/2024/1/1337.txt.gz", "x/export.log")
    plan = plan_import([str(tmp_path)], justlog=False)
    assert rel(tmp_path, plan.files) == [
        ("1337/2024/1/9/channel.txt", False),
        ("1337/2024/1/1337.txt.gz", True),
        ("x/export.log", False),
    ]
    assert plan.notes == [f"{tmp_path}: 3 files"]
    with pytest.raises(PlanFailed, match=r"x is not a justlog tree: no \{channel_id\}/"):
        plan_import([str(tmp_path / "x")], justlog=True)
    assert rel(tmp_path, plan_import([str(tmp_path / "x")]).files) == [("x/export.log", False)]


def test_files_are_read_as_named_and_a_missing_path_fails_before_anything(tmp_path: Path) -> None:
    touch(tmp_path, "b.log", "a.log.gz")
    plan = plan_import([str(tmp_path / "b.log"), "-", str(tmp_path / "a.log.gz")])
    assert plan.files == [
        ImportFile(str(tmp_path / "b.log")),
        ImportFile("-"),
        ImportFile(str(tmp_path / "a.log.gz"), gz=True),
    ]
    with pytest.raises(PlanFailed, match=r"^cannot read .*missing\.log: No such file or directory$"):
        plan_import([str(tmp_path / "b.log"), str(tmp_path / "missing.log")])
    with pytest.raises(PlanFailed, match="only once"):
        plan_import(["-", "-"])


def test_a_fifo_or_dangling_link_in_a_directory_is_a_problem_never_read(tmp_path: Path) -> None:
    touch(tmp_path, "a.log")
    os.mkfifo(tmp_path / "pipe.log")  # opened, it would block the import forever
    (tmp_path / "gone.log").symlink_to(tmp_path / "nowhere")
    plan = plan_import([str(tmp_path)])
    assert rel(tmp_path, plan.files) == [("a.log", False)]
    assert sorted(plan.problems) == [
        f"{tmp_path / 'gone.log'}: skipped: not a regular file",
        f"{tmp_path / 'pipe.log'}: skipped: not a regular file",
    ]


@pytest.mark.parametrize("name", [""])
def test_an_empty_path_is_refused_not_taken_for_the_working_directory(name: str) -> None:
    with pytest.raises(PlanFailed, match="an empty path names no file"):
        plan_import([name])


def test_an_unlistable_directory_is_a_problem_not_a_failure(tmp_path: Path) -> None:
    touch(tmp_path, "1337/2024/1/9/channel.txt", "1337/2024/1/10/channel.txt")
    locked = tmp_path / "1337" / "2024" / "1" / "10"
    locked.chmod(0)
    try:
        try:
            list(locked.iterdir())
            pytest.skip("running as root: permissions are not enforced")
        except PermissionError:
            pass
        plan = plan_import([str(tmp_path)])
        assert rel(tmp_path, plan.files) == [("1337/2024/1/9/channel.txt", False)]
        assert plan.problems == [f"cannot read {locked}: Permission denied"]
    finally:
        locked.chmod(0o755)


@pytest.mark.parametrize(
    ("path", "channel", "user"),
    [
        ("/l/1337/2024/1/9/channel.txt", True, False),
        ("/l/1337/2024/12/31/channel.txt.gz", True, False),
        ("/l/1337/2024/13/1/channel.txt", False, False),  # no month 13
        ("/l/1337/2024/1/32/channel.txt", False, False),
        ("/l/1337/24/1/9/channel.txt", False, False),  # years have 4 digits
        ("/l/1337/2024/1/9/other.txt", False, False),
        ("/l/1337/2024/1/1337.txt", False, True),
        ("/l/1337/2024/1/1337.txt.gz", False, True),
        ("/l/1337/2024/1/abc.txt", False, False),
        ("/l/1337/2024/1/٣.txt", False, False),  # an Arabic-Indic digit is no user id
    ],
)
def test_justlog_file_names(path: str, channel: bool, user: bool) -> None:
    assert (is_channel_file(Path(path)), is_user_file(Path(path))) == (channel, user)


def test_natural_order_compares_numbers_as_numbers() -> None:
    names = ["a/10", "a/9", "a/9b", "b", "a/009x", "10/1", "9/1"]
    assert sorted(names, key=lambda n: natural_key(Path(n))) == [
        "9/1",
        "10/1",
        "a/9",
        "a/9b",
        "a/009x",
        "a/10",
        "b",
    ]


def test_a_linked_directory_is_read_and_a_link_loop_read_once(tmp_path: Path) -> None:
    touch(tmp_path, "real/2024/1/1/channel.txt")
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "1337").symlink_to(tmp_path / "real")  # a channel kept elsewhere, linked into the tree
    (tmp_path / "real" / "2024" / "up").symlink_to(tree)  # and a link back up: a loop
    plan = plan_import([str(tree)])
    assert rel(tree, plan.files) == [("1337/2024/1/1/channel.txt", False)]
    assert plan.problems == [f"{tree / '1337' / '2024' / 'up'}: skipped: a link to a directory already read"]


def test_a_channel_file_where_no_day_is_is_named_not_counted_away(tmp_path: Path) -> None:
    touch(tmp_path, "1337/2024/1/1/channel.txt", "1337/2024/13/1/channel.txt", "1337/abcd/1/1/channel.txt.gz")
    plan = plan_import([str(tmp_path)])
    assert rel(tmp_path, plan.files) == [("1337/2024/1/1/channel.txt", False)]
    why = "skipped: not under a {year}/{month}/{day} of the justlog tree"
    assert sorted(plan.problems) == [
        f"{tmp_path / '1337/2024/13/1/channel.txt'}: {why}",
        f"{tmp_path / '1337/abcd/1/1/channel.txt.gz'}: {why}",
    ]
