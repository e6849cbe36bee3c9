"""parse_line on real Twitch and InspIRCd lines: the contract table of ARCHITECTURE.md, field by field."""

from __future__ import annotations

import calendar

import pytest

from core.irc_parse import CHAT_COMMANDS, MODERATION_KINDS, MalformedLine, command_of, line_hash, parse_line
from schemas.chat_event import ChatEvent, decode, encode
from tests.peer_lines import PEER_LINES, peer_lines
from tests.twitch_example import ronni_privmsg

RECEIVED = 1_800_000_000_000


def parse(line: str) -> ChatEvent:
    event = parse_line(line, received_at=RECEIVED, ingester="w1")
    assert event is not None
    return event


def utc_ms(y: int, mo: int, d: int, h: int, mi: int, s: int, ms: int) -> int:
    return calendar.timegm((y, mo, d, h, mi, s, 0, 0, 0)) * 1000 + ms


# -- Twitch (lines as in Twitch's IRC documentation) ----------------------------------------------

TWITCH_PRIVMSG = (
    "@badge-info=;badges=turbo/1;color=#0D4200;display-name=ronni;emotes=25:0-4,12-16/1902:6-10;"
    "id=b34ccfc7-4977-403a-8a94-33c6bac34fb8;mod=0;room-id=1337;subscriber=0;tmi-sent-ts=1507246572675;"
    "turbo=1;user-id=1337;user-type=global_mod "
    ":ronni!ronni@ronni.tmi.twitch.tv PRIVMSG #Ronni :Kappa Keepo Kappa"
)


def test_twitch_privmsg_maps_every_field() -> None:
    event = parse(TWITCH_PRIVMSG)
    assert event == ronni_privmsg(  # its ids, names, kind and time as in the documented sample
        text="Kappa Keepo Kappa",
        received_at=RECEIVED,
        tags={
            "badge-info": "",
            "badges": "turbo/1",
            "color": "#0D4200",
            "display-name": "ronni",
            "emotes": "25:0-4,12-16/1902:6-10",
            "id": "b34ccfc7-4977-403a-8a94-33c6bac34fb8",
            "mod": "0",
            "room-id": "1337",
            "subscriber": "0",
            "tmi-sent-ts": "1507246572675",
            "turbo": "1",
            "user-id": "1337",
            "user-type": "global_mod",
        },
        raw=TWITCH_PRIVMSG,
        ingester="w1",
    )


def test_trailing_cr_is_tolerated_and_not_part_of_raw() -> None:
    event = parse(TWITCH_PRIVMSG + "\r")
    assert event.raw == TWITCH_PRIVMSG
    assert event.text == "Kappa Keepo Kappa"


def test_twitch_privmsg_with_bits_and_badges() -> None:
    line = (
        "@badge-info=subscriber/14;badges=staff/1,bits/1000;bits=100;color=;display-name=ronni;emotes=;"
        "id=c5ed2b2c-1e5a-4f7b-a5e3-1d9c4a3b1d20;mod=0;room-id=12345678;subscriber=0;"
        "tmi-sent-ts=1507246572675;turbo=1;user-id=12345678;user-type=staff "
        ":ronni!ronni@ronni.tmi.twitch.tv PRIVMSG #ronni :cheer100"
    )
    event = parse(line)
    assert event.tags["bits"] == "100"
    assert event.tags["badges"] == "staff/1,bits/1000"
    assert event.tags["color"] == ""
    assert event.text == "cheer100"


def test_usernotice_resub_uses_login_tag_and_unescapes_system_msg() -> None:
    line = (
        "@badge-info=;badges=staff/1,broadcaster/1,turbo/1;color=#008000;display-name=ronni;emotes=;"
        "id=db25007f-7a18-43eb-9379-80131e44d633;login=ronni;mod=0;msg-id=resub;"
        "msg-param-cumulative-months=6;msg-param-streak-months=2;msg-param-should-share-streak=1;"
        "msg-param-sub-plan=Prime;msg-param-sub-plan-name=Prime;room-id=12345678;subscriber=1;"
        r"system-msg=ronni\shas\ssubscribed\sfor\s6\smonths!;tmi-sent-ts=1507246572675;turbo=1;"
        "user-id=87654321;user-type=staff :tmi.twitch.tv USERNOTICE #dallas :Great stream -- keep it up!"
    )
    event = parse(line)
    assert event.kind == "USERNOTICE"
    assert event.message_id == "db25007f-7a18-43eb-9379-80131e44d633"
    assert event.user_login == "ronni"
    assert event.user_id == "87654321"
    assert event.channel == "dallas"
    assert event.text == "Great stream -- keep it up!"
    assert event.tags["system-msg"] == "ronni has subscribed for 6 months!"
    assert event.tags["msg-id"] == "resub"


def test_usernotice_raid_without_text() -> None:
    line = (
        "@badge-info=;badges=turbo/1;color=#9ACD32;display-name=TestChannel;emotes=;"
        "id=3d830f12-795c-447d-af3c-ea05e40fbddb;login=testchannel;mod=0;msg-id=raid;"
        "msg-param-displayName=TestChannel;msg-param-login=testchannel;msg-param-viewerCount=15;"
        r"room-id=33332222;subscriber=0;system-msg=15\sraiders\sfrom\sTestChannel\shave\sjoined\n!;"
        "tmi-sent-ts=1507246572675;turbo=1;user-id=123456;user-type= "
        ":tmi.twitch.tv USERNOTICE #othertestchannel"
    )
    event = parse(line)
    assert event.text is None
    assert event.user_login == "testchannel"
    assert event.display_name == "TestChannel"
    assert event.tags["system-msg"] == "15 raiders from TestChannel have joined\n!"
    assert event.tags["user-type"] == ""


@pytest.mark.parametrize(
    ("line", "target", "duration"),
    [
        (
            "@ban-duration=350;room-id=12345678;target-user-id=87654321;tmi-sent-ts=1642719320727 "
            ":tmi.twitch.tv CLEARCHAT #dallas :ronni",
            "ronni",
            "350",
        ),
        (
            "@room-id=12345678;target-user-id=87654321;tmi-sent-ts=1642715756806 "
            ":tmi.twitch.tv CLEARCHAT #dallas :ronni",
            "ronni",
            None,
        ),
        ("@room-id=12345678;tmi-sent-ts=1642715695392 :tmi.twitch.tv CLEARCHAT #dallas", None, None),
    ],
    ids=["timeout", "ban", "clear-chat"],
)
def test_clearchat_has_no_sender_and_keeps_target_in_text(
    line: str, target: str | None, duration: str | None
) -> None:
    event = parse(line)
    assert event.kind == "CLEARCHAT"
    assert event.user_login is None
    assert event.user_id is None
    assert event.text == target
    assert event.channel_id == "12345678"
    assert event.tags.get("ban-duration") == duration
    assert event.sent_at == int(event.tags["tmi-sent-ts"])
    assert event.message_id == line_hash(line)


def test_clearmsg_uses_login_tag_and_empty_room_id_is_none() -> None:
    line = (
        "@login=Foo;room-id=;target-msg-id=94e6c7ff-bf98-4faa-af5d-7ad633a158a9;tmi-sent-ts=1642720582342 "
        ":tmi.twitch.tv CLEARMSG #bar :what a great day"
    )
    event = parse(line)
    assert event.kind == "CLEARMSG"
    assert event.user_login == "foo"
    assert event.channel_id is None
    assert event.text == "what a great day"
    assert event.tags["target-msg-id"] == "94e6c7ff-bf98-4faa-af5d-7ad633a158a9"
    assert event.sent_at == 1642720582342
    assert event.message_id == line_hash(line)


def test_channel_notice_is_an_event_with_receive_time() -> None:
    line = "@msg-id=slow_on :tmi.twitch.tv NOTICE #bar :This room is now in slow mode."
    event = parse(line)
    assert event.kind == "NOTICE"
    assert event.user_login is None
    assert event.sent_at == RECEIVED
    assert event.received_at == RECEIVED
    assert event.tags == {"msg-id": "slow_on"}


# -- InspIRCd (IRCv3 message-tags, msgid, server-time), captured from the local server ---------------


def test_inspircd_privmsg_uses_msgid_and_time() -> None:
    line = (
        "@time=2026-11-21T17:09:50.345Z;msgid=399~1795280841~500960 "
        r":capA7!capA7@127.0.0.1 PRIVMSG #capchan7 :hello 😀 with \ and ; chars"
    )
    event = parse(line)
    assert event.message_id == "399~1795280841~500960"
    assert event.sent_at == utc_ms(2026, 11, 21, 17, 9, 50, 345)
    assert event.received_at == RECEIVED
    assert event.user_login == "capa7"
    assert event.channel == "capchan7"
    assert event.text == r"hello 😀 with \ and ; chars"  # escaping is for tags only, not for text
    assert event.channel_id is None and event.user_id is None and event.display_name is None


def test_inspircd_action_and_channel_notice() -> None:
    action = parse(
        "@time=2026-11-21T17:09:50.385Z;msgid=399~1795280841~500961 "
        ":capA7!capA7@127.0.0.1 PRIVMSG #capchan7 :\x01ACTION waves\x01"
    )
    assert (action.is_action, action.text) == (True, "waves")
    notice = parse(
        "@time=2026-11-21T17:09:50.385Z;msgid=399~1795280841~500963 "
        ":capA7!capA7@127.0.0.1 NOTICE #capchan7 :a channel notice"
    )
    assert (notice.kind, notice.user_login, notice.text) == ("NOTICE", "capa7", "a channel notice")


def test_time_tag_without_msgid_and_without_zone() -> None:
    event = parse("@time=2026-11-21T15:04:05.123 :n!u@h PRIVMSG #c :x")
    assert event.sent_at == utc_ms(2026, 11, 21, 15, 4, 5, 123)
    assert event.message_id == line_hash("@time=2026-11-21T15:04:05.123 :n!u@h PRIVMSG #c :x")


def test_twitch_id_wins_over_msgid_and_tmi_sent_ts_over_time() -> None:
    event = parse(
        "@msgid=m;id=t;time=2026-11-21T15:04:05.123Z;tmi-sent-ts=1507246572675 :n!u@h PRIVMSG #c :x"
    )
    assert (event.message_id, event.sent_at) == ("t", 1507246572675)


def test_empty_id_tags_fall_through_to_the_hash() -> None:
    line = "@id=;msgid=;tmi-sent-ts= :n!u@h PRIVMSG #c :x"
    event = parse(line)
    assert event.message_id == line_hash(line)
    assert event.sent_at == RECEIVED


# -- ACTION ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "is_action", "expected"),
    [
        ("\x01ACTION dances\x01", True, "dances"),
        ("\x01ACTION dances", True, "dances"),  # terminator missing (sloppy clients)
        ("\x01ACTION \x01", True, ""),
        ("\x01ACTION\x01", True, ""),
        ("\x01ACTION  two spaces\x01", True, " two spaces"),
        ("\x01ACTIONS\x01", False, "\x01ACTIONS\x01"),
        ("\x01VERSION\x01", False, "\x01VERSION\x01"),
        ("say \x01ACTION x\x01", False, "say \x01ACTION x\x01"),
    ],
)
def test_ctcp_action_is_unwrapped(text: str, is_action: bool, expected: str) -> None:
    event = parse(f":n!u@h PRIVMSG #c :{text}")
    assert (event.is_action, event.text) == (is_action, expected)


def test_action_is_only_a_privmsg_thing() -> None:
    event = parse(":n!u@h NOTICE #c :\x01ACTION x\x01")
    assert (event.is_action, event.text) == (False, "\x01ACTION x\x01")


# -- unicode -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "😂👍🏽 🇩🇪 👨‍👩‍👧",  # emoji, skin tone, flag, ZWJ family
        "こんにちは 你好 안녕하세요",
        "مرحبا بالعالم שלום",  # RTL
        "zero\u200bwidth\u200c\u200dchars\ufeff",
        "line\u2028separator\u2029and\x85nel",  # str.splitlines would split these; we must not
        "combining e\u0301 and \U0001d54f",
    ],
)
def test_unicode_text_and_display_name_survive(text: str) -> None:
    line = (
        f"@display-name=시청자\\s{text[:2]};id=u1;room-id=1;user-id=2;tmi-sent-ts=10 "
        f":viewer!viewer@viewer.tmi.twitch.tv PRIVMSG #ÜberChan :{text}"
    )
    event = parse(line)
    assert event.text == text
    assert event.display_name == f"시청자 {text[:2]}"
    assert event.channel == "überchan"
    assert event.raw == line


# -- ids without an id tag ---------------------------------------------------------------------


def test_idless_lines_get_a_deterministic_hash() -> None:
    line = "@room-id=1;target-user-id=2;tmi-sent-ts=1642715756806 :tmi.twitch.tv CLEARCHAT #dallas :ronni"
    first = parse_line(line, received_at=1, ingester="a")
    second = parse_line(line + "\r", received_at=999_999, ingester="b")
    assert first is not None and second is not None
    assert first.message_id == second.message_id
    assert len(first.message_id) == 32 and int(first.message_id, 16) >= 0
    later = parse_line(line.replace("1642715756806", "1642715756807"), received_at=1)
    other_user = parse_line(line.replace(":ronni", ":ronnie"), received_at=1)
    assert later is not None and other_user is not None
    assert len({first.message_id, later.message_id, other_user.message_id}) == 3


# -- framing variants ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "channel", "text", "user"),
    [
        ("PRIVMSG #c hello", "c", "hello", None),  # last middle parameter without ':'
        (":n!u@h PRIVMSG  #c   :spaced", "c", "spaced", "n"),
        (":n!u@h PRIVMSG #c ::)", "c", ":)", "n"),
        (":n!u@h PRIVMSG #c :", "c", "", "n"),
        (":n!u@h PRIVMSG #c", "c", None, "n"),
        (":n!u@h PRIVMSG #c extra :text", "c", "text", "n"),
        (":n!u@h PRIVMSG :#c", "c", None, "n"),  # the channel as the (only) trailing parameter
        ("@a=b  :N!u@h privmsg #C :lower-case command", "c", "lower-case command", "n"),
        (":BareNick PRIVMSG #c :x", "c", "x", "barenick"),
        (":Nick@host PRIVMSG #c :x", "c", "x", "nick"),
        (":irc.example.net PRIVMSG #c :from a server", "c", "from a server", None),
        ("@ :n!u@h PRIVMSG #c :empty tag section", "c", "empty tag section", "n"),
        (":n!u@h PRIVMSG #c\u3000x last\tword", "c\u3000x", "last\tword", "n"),  # only spaces separate
    ],
)
def test_parameter_and_prefix_forms(line: str, channel: str, text: str | None, user: str | None) -> None:
    event = parse(line)
    assert (event.channel, event.text, event.user_login) == (channel, text, user)
    assert event.kind == "PRIVMSG"


# -- not chat --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "line",
    [
        "PING :tmi.twitch.tv",
        "PONG :tmi.twitch.tv",
        ":tmi.twitch.tv 001 justinfan123 :Welcome, GLHF!",
        ":tmi.twitch.tv CAP * ACK :twitch.tv/tags twitch.tv/commands",
        ":justinfan123!justinfan123@justinfan123.tmi.twitch.tv JOIN #dallas",
        ":justinfan123!justinfan123@justinfan123.tmi.twitch.tv PART #dallas",
        ":jtv MODE #dallas +o ronni",
        "@emote-only=0;followers-only=-1;r9k=0;room-id=12345678;slow=0;subs-only=0 "
        ":tmi.twitch.tv ROOMSTATE #bar",
        "@badge-info=;badges=;color=;display-name=justinfan1;emote-sets=0;mod=0;subscriber=0;user-type= "
        ":tmi.twitch.tv USERSTATE #bar",
        "@badge-info=;badges=;color=;display-name=x;emote-sets=0;user-id=1;user-type= "
        ":tmi.twitch.tv GLOBALUSERSTATE",
        ":tmi.twitch.tv RECONNECT",
        ":tmi.twitch.tv HOSTTARGET #abc :xyz 10",
        "@badges=;color=;display-name=a;message-id=1;thread-id=1_2;user-id=1 "
        ":a!a@a.tmi.twitch.tv WHISPER b :hi",
        "@time=2026-11-21T17:09:50.385Z;msgid=399~1;+draft/reply=abc "
        ":capA7!capA7@127.0.0.1 TAGMSG :#capchan7",
        "@time=2026-11-21T17:09:49.844Z :irc.chatlog.localhost 353 capB7 = #capchan7 :capA7 capB7",
        "ERROR :Closing link",
        # a NOTICE to no channel: to us, to `*`, or to AUTH while connecting
        ":tmi.twitch.tv NOTICE * :Login authentication failed",
        ":irc.chatlog.localhost NOTICE * :*** Looking up your hostname...",
        "@time=2026-11-21T17:09:48.344Z :irc.chatlog.localhost NOTICE capB7 :*** You are connected",
        "NOTICE AUTH :*** Checking Ident",
    ],
)
def test_non_chat_lines_are_none(line: str) -> None:
    assert parse_line(line, received_at=RECEIVED) is None


def test_chat_commands_are_the_contract_ones() -> None:
    assert frozenset({"PRIVMSG", "USERNOTICE", "CLEARCHAT", "CLEARMSG", "NOTICE"}) == CHAT_COMMANDS


def test_the_moderation_kinds_are_the_chat_commands_a_moderator_causes() -> None:
    assert frozenset({"CLEARCHAT", "CLEARMSG"}) == MODERATION_KINDS
    assert MODERATION_KINDS < CHAT_COMMANDS


# -- malformed -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        ("", "empty line"),
        ("\r", "empty line"),
        ("   ", "no command"),
        ("@id=1;room-id=2", "tag section with no command"),
        ("@id=1 :tmi.twitch.tv", "prefix with no command"),
        (":nick!u@h", "prefix with no command"),
        ("@id=1  ", "no command"),
        (":n!u@h PRIVMSG", "PRIVMSG without a channel parameter"),
        (":n!u@h PRIVMSG ", "PRIVMSG without a channel parameter"),
        (":tmi.twitch.tv CLEARCHAT", "CLEARCHAT without a channel parameter"),
        (":n!u@h PRIVMSG someone :hi", "PRIVMSG target 'someone' is not a #channel"),
        (":n!u@h PRIVMSG &local :hi", "is not a #channel"),
        (":tmi.twitch.tv USERNOTICE :#c", None),  # valid: trailing channel
        (":n!u@h PRIVMSG # :hi", "PRIVMSG to an empty channel name"),
        ("@tmi-sent-ts=1 :n!u@h PRIVMSG #" + "c" * 201 + " :x", "channel name longer than 200"),
        ("@id=" + "i" * 129 + " :n!u@h PRIVMSG #c :x", "message id longer than 128"),
        ("@msgid=" + "i" * 129 + " :n!u@h PRIVMSG #c :x", "message id longer than 128"),
        ("@room-id=" + "1" * 65 + " :n!u@h PRIVMSG #c :x", "room-id longer than 64"),
        ("@user-id=" + "1" * 65 + " :n!u@h PRIVMSG #c :x", "user-id longer than 64"),
        ("@login=" + "l" * 201 + " :tmi.twitch.tv CLEARMSG #c :x", "login longer than 200"),
        (":" + "n" * 201 + "!u@h PRIVMSG #c :x", "nick longer than 200"),
        (":" + "\u0130" * 101 + "!u@h PRIVMSG #c :x", "nick longer than 200"),  # lower() doubles İ
        (":" + "n" * 201 + " PRIVMSG #c :x", "nick longer than 200"),
        (":n!u@h PRIVMSG #c :" + "x" * 16_384, "line longer than 16384"),
    ],
)
def test_malformed_chat_lines_say_why(line: str, reason: str | None) -> None:
    if reason is None:
        assert parse_line(line, received_at=RECEIVED) is not None
        return
    with pytest.raises(MalformedLine) as info:
        parse_line(line, received_at=RECEIVED)
    message = str(info.value)
    assert reason in message
    assert "\n" not in message


def test_values_at_the_contract_bounds_are_kept() -> None:
    nick = "n" * 200
    line = f"@id={'i' * 128};room-id={'1' * 64};user-id={'2' * 64} :{nick}!u@h PRIVMSG #{'c' * 200} :"
    line += "x" * (16_384 - len(line))
    event = parse(line)
    assert (len(event.raw), event.user_login, len(event.channel)) == (16_384, nick, 200)
    assert decode(encode(event)) == event  # the contract takes what the parser makes


def test_the_most_tags_a_line_can_hold_are_within_the_contract() -> None:
    tail = ";tmi-sent-ts=-1 :n!u@h PRIVMSG #c :x"  # and the one tag the parser adds
    keys: list[str] = []
    size = 1 + len(tail)
    while size + len(f"{len(keys)};") <= 16_384:  # the shortest distinct keys
        size += len(f"{len(keys)};")
        keys.append(str(len(keys)))
    line = "@" + ";".join(keys) + tail
    assert len(line) <= 16_384
    event = parse(line)
    assert len(keys) < len(event.tags) <= 16_384 // 2
    assert decode(encode(event)) == event


def test_a_line_of_long_multibyte_characters_is_measured_in_characters() -> None:
    line = ":n!u@h PRIVMSG #c :" + "😂" * (16_384 - 19)
    assert len(parse(line).raw) == 16_384


def test_malformed_reason_quotes_long_values_briefly() -> None:
    with pytest.raises(MalformedLine) as info:
        parse_line("PRIVMSG " + "x" * 500 + " :hi", received_at=RECEIVED)
    assert len(str(info.value)) < 100


# -- command_of ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "command"),
    [
        (TWITCH_PRIVMSG, "PRIVMSG"),
        ("PING :tmi.twitch.tv", "PING"),
        ("PING\r", "PING"),
        (":tmi.twitch.tv 001 justinfan1 :Welcome", "001"),
        ("@a=b :p  CLEARCHAT #c", "CLEARCHAT"),
        ("@a=b   USERNOTICE #c", "USERNOTICE"),
        (":tmi.twitch.tv RECONNECT", "RECONNECT"),
        ("privmsg #c :x", "privmsg"),
        ("", None),
        ("@a=b", None),
        (":prefix", None),
        ("@a=b :prefix", None),
    ],
)
def test_command_of(line: str, command: str | None) -> None:
    assert command_of(line) == command


# -- server times that are not plausible: the line is kept, sent_at is the receive time, flagged ---------


@pytest.mark.parametrize(
    "tags",
    [
        "tmi-sent-ts=abc",
        "tmi-sent-ts=-5",
        "tmi-sent-ts=-6795364578871",  # a real Twitch CLEARMSG had this
        "tmi-sent-ts=1_000",
        "tmi-sent-ts=\u0661\u0662\u0663",  # Arabic-Indic digits
        "tmi-sent-ts=\\s12",
        "tmi-sent-ts=1234567890123456",
        "tmi-sent-ts=" + "9" * 5000,  # int() of it would raise
        "tmi-sent-ts=999999999999999",  # year 33658: stored fine, but the driver cannot read it back
        "tmi-sent-ts=5",  # 1970
        "tmi-sent-ts=999999999999",  # 2001-09-09, the last 12-digit epoch ms
        "tmi-sent-ts=0000000000000",  # 13 digits, but 1970
        "tmi-sent-ts=0999999999999",  # 13 digits, but before 2001-09-09
        "tmi-sent-ts=+123456789012",
        f"tmi-sent-ts={RECEIVED + 86_400_001}",  # more than a day after the receive time
        "time=yesterday",
        "time=1969-12-31T23:59:59Z",
        "time=0001-01-01T00:00:00+01:00",  # before year 1: out of datetime's range
        "time=9999-12-31T23:59:59-01:00",  # after year 9999
        "time=2100-01-01T00:00:00Z",
        "time=2001-09-09T01:46:39.999Z",
    ],
)
def test_an_implausible_server_time_is_the_receive_time_and_flagged(tags: str) -> None:
    line = f"@{tags};login=supibot :tmi.twitch.tv CLEARMSG #randers :Pong!"
    event = parse(line)
    assert event.sent_at == RECEIVED
    key = tags.split("=", 1)[0]
    assert event.bad_sent_ts == event.tags[key]
    assert set(event.tags) == {key, "login"}  # the line's own tags, no note of chatlog's among them
    assert event.raw == line and event.message_id == line_hash(line)  # the id is still the line's
    assert decode(encode(event)) == event


@pytest.mark.parametrize(
    ("tags", "sent_at"),
    [
        ("tmi-sent-ts=1000000000000", 1_000_000_000_000),  # 2001-09-09
        ("time=2001-09-09T01:46:40Z", 1_000_000_000_000),
        (f"tmi-sent-ts={RECEIVED + 86_400_000}", RECEIVED + 86_400_000),  # a day ahead: clock skew
        ("time=2026-11-21T15:04:05.123Z", utc_ms(2026, 11, 21, 15, 4, 5, 123)),
    ],
)
def test_a_plausible_server_time_is_used_and_not_flagged(tags: str, sent_at: int) -> None:
    event = parse(f"@{tags} :n!u@h PRIVMSG #c :x")
    assert event.sent_at == sent_at
    assert event.bad_sent_ts is None and set(event.tags) == {tags.split("=", 1)[0]}


def test_no_server_time_is_not_flagged() -> None:
    event = parse(":n!u@h PRIVMSG #c :x")
    assert (event.sent_at, event.tags, event.bad_sent_ts) == (RECEIVED, {}, None)


# -- the real Twitch lines other client libraries assert (shared test data, read at run time) ------------


def test_every_real_twitch_chat_line_becomes_a_valid_event() -> None:
    lines = [d for d in peer_lines() if d["class"] == "chat"]
    if not lines:
        pytest.skip(f"{PEER_LINES} is not here")
    for item in lines:
        event = parse_line(item["raw"], received_at=RECEIVED)
        assert event is not None, item["source"]
        assert decode(encode(event)) == event, item["source"]
        expect = item["expect"]
        assert event.tags == expect["tags"], item["source"]  # the line's tags, exactly
        sent_at = expect["sent_at"]
        if isinstance(sent_at, int):
            assert event.sent_at == sent_at, item["source"]
        elif "$eq_field" in sent_at:
            assert event.sent_at == RECEIVED, item["source"]
        else:
            assert event.sent_at >= sent_at["$int_ge"], item["source"]


def test_the_real_clearmsg_with_a_negative_tmi_sent_ts_is_kept() -> None:
    found = [d for d in peer_lines() if "tmi-sent-ts=-6795364578871" in d["raw"]]
    if not found:
        pytest.skip(f"{PEER_LINES} is not here")
    event = parse(found[0]["raw"])
    assert (event.kind, event.channel, event.sent_at) == ("CLEARMSG", "randers", RECEIVED)
    assert event.bad_sent_ts == event.tags["tmi-sent-ts"] == "-6795364578871"
    assert not any(key.startswith("chatlog") for key in event.tags)
