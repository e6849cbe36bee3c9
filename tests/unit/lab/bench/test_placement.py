"""``chatlog bench placement`` on a small simulation: placement by load beats count packing, no line lost."""

from __future__ import annotations

import json
from pathlib import Path

from lab.bench import placement


def test_small_simulation_writes_results_and_loses_nothing(tmp_path: Path) -> None:
    out = tmp_path / "placement.json"
    result = placement.run(channels=300, workers=2, top10_rate=30, hours=0.5, window_s=600, seeds=1, out=out)
    assert json.loads(out.read_text())["benchmark"] == "placement"
    assert out.with_suffix(".png").exists()
    before, after = result["before_count_packing"], result["after_placement"]
    assert after["messages_lost_during_moves"] == 0
    assert after["moves"] > 0 and before["moves"] == 0
    b, a = (r["per_connection_msgs_per_s"]["max_over_mean_within_worker"] for r in (before, after))
    assert a < b
    assert "max/mean" in placement.summary(result)
