"""``chatlog monitor``: a data directory that cannot be one is a one-line error naming the setting, said
before Kafka is asked (services are down), never faust's FileExistsError."""

from __future__ import annotations

from pathlib import Path

from tests.unit.cli_runs import DOWN, chatlog, free_port


def test_a_data_directory_that_is_a_file_is_one_line_naming_the_setting(tmp_path: Path) -> None:
    file = tmp_path / "monitor"
    file.write_text("")
    env = {
        **DOWN,
        "CHATLOG_MONITOR_DATA_DIR": str(file),
        "CHATLOG_MONITOR_WEB_PORT": str(free_port()),
        "CHATLOG_MONITOR_METRICS_PORT": str(free_port()),
    }
    run = chatlog(["monitor"], env, timeout=15)
    assert run.code == 2 and run.stderr_lines == [
        f"chatlog: error: setting monitor_data_dir (CHATLOG_MONITOR_DATA_DIR): {file} exists and is not a "
        "directory"
    ]
