"""Lines that are not chat events taken apart (``parse_message``), and the batch split by command."""

from __future__ import annotations

from core.irc_parse import command_of, parse_message, route_by_command, with_tags


def test_parse_message_takes_a_protocol_line_apart() -> None:
    msg = parse_message("@a=1;b=x\\sy :Nick!user@host PRIVMSG #Chan :hello :world")
    assert (msg.tags, msg.prefix, msg.command) == ("a=1;b=x\\sy", "Nick!user@host", "PRIVMSG")
    assert msg.params == ("#Chan", "hello :world")
    assert msg.sender == "nick"
    assert msg.tag("b") == "x y" and msg.tag("a") == "1"  # unescaped, as every tag the parser reads
    assert msg.tag("zz") is None
    assert parse_message("PING :tok").params == ("tok",)
    assert parse_message(":srv 005 me A=1 B :are supported").params == ("me", "A=1", "B", "are supported")
    assert parse_message("@t=1  :srv.example   cap  * ACK :a b").command == "CAP"


def test_a_server_prefix_or_none_is_no_sender_and_a_bare_line_has_no_command() -> None:
    assert parse_message(":tmi.twitch.tv RECONNECT").sender is None
    assert parse_message("PING").sender is None and parse_message("PING").params == ()
    for odd in ("@tagsonly", ":prefixonly", "@t :p"):
        msg = parse_message(odd)
        assert msg.command == "" and msg.params == () and command_of(odd) is None


def test_route_by_command_hands_over_the_commands_asked_for_and_counts_the_rest() -> None:
    lines = [
        "@id=1 :a!a@h PRIVMSG #x :hi",
        "PING :srv",
        ":srv 001 me :welcome",
        ":a!a@h JOIN #y",
        "@t=1 :srv NOTICE #x :slow mode",
        ":a!a@h PRIVMSG #x :PING",
    ]
    handled: list[str] = []
    counts: dict[str, int] = {}

    def handle(line: str) -> bool:
        handled.append(line)
        return command_of(line) != "NOTICE"  # looked at, passed on

    out = route_by_command(lines, frozenset({"PING", "NOTICE"}), handle, counts)
    assert out == [lines[0], lines[3], lines[4], lines[5]]
    assert handled == [lines[1], lines[2], lines[4]]
    assert counts == {"x": 3, "y": 1}


def test_with_tags_sets_tags_after_the_lines_own_replacing_those_of_the_same_name() -> None:
    assert with_tags("@a=1;b=2 :srv NOTICE #c :x", {"b": "3", "c": "4"}) == "@a=1;b=3;c=4 :srv NOTICE #c :x"
    assert with_tags(":srv NOTICE #c :x", {"msg-id": "m"}) == "@msg-id=m :srv NOTICE #c :x"
    assert parse_message(with_tags("@a;;b :p PING", {"c": "1"})).tag("c") == "1"
