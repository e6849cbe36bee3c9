"""lab/stack/services.py: the KRaft cluster id we format Kafka storage with never looks like an option."""

from __future__ import annotations

import base64
import uuid

import pytest

from lab.stack import services


def test_an_id_that_would_start_with_a_dash_is_drawn_again(monkeypatch: pytest.MonkeyPatch) -> None:
    dashed = uuid.UUID(bytes=b"\xf8" + b"\x00" * 15)  # URL-safe base64 of 0xf8... starts with "-"
    plain = uuid.UUID(bytes=b"\x10" * 16)
    assert base64.urlsafe_b64encode(dashed.bytes).startswith(b"-")
    draws = iter([dashed, plain])
    monkeypatch.setattr(uuid, "uuid4", lambda: next(draws))  # the module services draws from

    cluster_id = services.new_cluster_id()

    assert cluster_id == base64.urlsafe_b64encode(plain.bytes).decode().rstrip("=")


def test_ids_are_22_url_safe_characters_for_16_bytes() -> None:
    for _ in range(2000):
        cluster_id = services.new_cluster_id()
        assert len(cluster_id) == 22
        assert not cluster_id.startswith("-")
        assert len(base64.urlsafe_b64decode(cluster_id + "==")) == 16
