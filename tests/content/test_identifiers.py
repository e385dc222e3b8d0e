"""Identifiers (DESIGN 6.13): each rule, in every script, and on the real traces.

A summary must keep what a model cannot rebuild: ids, paths, amounts, dates, names. What the
check takes for an identifier must also be rare in plain prose, or the ledger fills with words.
"""

# The samples are text in other scripts, full-width punctuation included.
# ruff: noqa: RUF001

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from traces import load_locomo, load_swe_gym, load_tau_bench_airline

from langgraph_compaction.content.identifiers import (
    Identifier,
    IdentifierKind,
    find_identifiers,
    identifiers_in,
)
from langgraph_compaction.content.writing_systems import fold_text

# An independent list of common English words (the most frequent ones of written English and
# of chat), to check that what the rules call an identifier is not one of them.
_COMMON_ENGLISH = """
    a about after again against all also always am an and another any are around as ask at away
    back bad be because been before being best better between big book both boy but buy by call
    came can car care case change child children city come could country course day did
    different do does dog done door down during each early end enough even evening ever every
    eye face fact family far father feel few find fine first for friend friends from fun game
    gave get girl give go going good got great group had hand happy hard has have he head hear
    help her here high him his home hope hot house how i idea if important in into is it its
    job just keep kind know large last late learn left less let life light like line little live
    long look lot love made make man many may me mean men might mind money more morning most
    mother much music must my name need never new next nice night no not now number of off often
    oh old on once one only open or other our out over own paint painting park part people
    person picture place play point pretty problem put read ready real really right room run
    said same saw say school see seem she should show side since small so some something soon
    sound start still stop story study such sure take talk tell than thank thanks that the their
    them then there these they thing things think this those thought three through time to
    today together told too took top tree try turn two under until up us use very walk want was
    watch water way we week well went were what when where which while white who why will with
    without woman word words work world would write year years yes yet you young your yeah wow
    hey hi hello cool awesome amazing sweet lovely wonderful support group journey kids
    photo art camping hiking beach summer winter spring weekend birthday school class
    proud glad excited sorry true false error errors warning note observation info debug
"""
COMMON_ENGLISH = frozenset(_COMMON_ENGLISH.split())


def _texts(found: list[tuple[str, IdentifierKind]]) -> list[str]:
    return [text for text, _ in found]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("see https://example.com/a/b?x=1).", ("https://example.com/a/b?x=1", "url")),
        ("docs at www.python.org, then", ("www.python.org", "url")),
        ("hosted on mypy.readthedocs.io today", ("mypy.readthedocs.io", "url")),
        ("write to ops@example.com.", ("ops@example.com", "email")),
        ("open /etc/nginx/nginx.conf.", ("/etc/nginx/nginx.conf", "path")),
        ("edit src/app/main.py now", ("src/app/main.py", "path")),
        ("run ./scripts/check then", ("./scripts/check", "path")),
        ("in ~/notes please", ("~/notes", "path")),
        (r"saved C:\Users\me\report.txt", (r"C:\Users\me\report.txt", "path")),
        ("the README.md says", ("README.md", "path")),
        (
            "id 123e4567-e89b-12d3-a456-426614174000",
            ("123e4567-e89b-12d3-a456-426614174000", "uuid"),
        ),
        ("commit 3f2a9c1d fixed it", ("3f2a9c1d", "hex")),
        ("see ETL-212 for that", ("ETL-212", "issue")),
        ("fixed in #1234.", ("#1234", "issue")),
        ("upgrade to v2.4.1 first", ("v2.4.1", "version")),
        ("pin 1.26.3 exactly", ("1.26.3", "version")),
        ("on Python 3.11 only", ("3.11", "version")),
        ("it costs $1,250 now", ("$1,250", "money")),
        ("it costs 300 EUR now", ("300 EUR", "money")),
        ("it took 40 ms", ("40 ms", "quantity")),
        ("we loaded 68,112 rows", ("68,112 rows", "quantity")),
        ("disk at 93% full", ("93%", "quantity")),
        ("due 2026-12-02 at noon", ("2026-12-02", "date")),
        ("we met on 8 May, 2023 there", ("8 May, 2023", "date")),
        ("flying May 20th with her", ("May 20th", "date")),
        ("the call is at 03:00 UTC", ("03:00 UTC", "time")),
        ("she lands at 11 AM EST", ("11 AM EST", "time")),
        ("call fold_text on it", ("fold_text", "code")),
        ("the camelCase name", ("camelCase", "code")),
        ("a PascalCase class", ("PascalCase", "code")),
        ("import os.path.join here", ("os.path.join", "code")),
        ("the __init__ method", ("__init__", "code")),
        ("set MAX_RETRIES high", ("MAX_RETRIES", "code")),
        ("use gpt-4o for it", ("gpt-4o", "code")),
        ("flight HAT017 is late", ("HAT017", "code")),
        ("booking OI5L9G was made", ("OI5L9G", "code")),
        ("booking AQLBTL was made", ("AQLBTL", "code")),
        ("from MCO to CLT", ("MCO", "code")),
        ("run `git push origin main` now", ("git push origin main", "quoted")),
        ("set `view_range` first", ("view_range", "code")),
        ("I talked to Caroline about it", ("Caroline", "name")),
        ("we drove to Denver last week", ("Denver", "name")),
        ("вчера Иван звонил", ("Иван", "name")),
    ],
)
def test_each_rule_finds_its_kind(text: str, expected: tuple[str, IdentifierKind]) -> None:
    assert expected in identifiers_in(text)


@pytest.mark.parametrize(
    "text",
    [
        "I think we should go to the park this afternoon and have a picnic with the kids.",
        "Thanks so much! That sounds wonderful, and I am really proud of you for doing it.",
        "Вчера мы долго гуляли по парку, а потом пили чай и говорили о работе.",
        "我们明天上午去公园散步，然后一起吃午饭，下午再讨论这个问题。",
        "Use and/or as you like, e.g. here, i.e. there.",
        "Hello there. The weather is nice. Maybe we can walk.",
        "ERROR: OBSERVATION shows NOTE and WARNING, nothing else.",
        "I have 2 kids and 3 cats, we live at number 12.",
        "It is a self-care day and a well-known fact.",
        "We support IDs, URLs and APIs over HTTP and JSON.",
        '{"flight_number": "x", "scheduled_departure_time_est": "y"}',
    ],
)
def test_ordinary_text_has_no_identifiers(text: str) -> None:
    assert identifiers_in(text) == []


def test_the_longest_match_wins_and_trailing_punctuation_is_left_out() -> None:
    found = identifiers_in("Read https://docs.example.com/guide/setup.html. Mail a.b@example.com!")
    assert found == [
        ("https://docs.example.com/guide/setup.html", "url"),
        ("a.b@example.com", "email"),
    ]
    assert identifiers_in("(see /var/log/syslog),") == [("/var/log/syslog", "path")]


def test_sentence_start_capitals_and_lowercase_words_are_not_names() -> None:
    text = "Painting is fun. I love painting with Melanie.\n- Departure: Monday\n1. Seattle trip"
    assert identifiers_in(text) == [("Melanie", "name")]


def test_duplicates_are_kept_in_order() -> None:
    assert _texts(identifiers_in("HAT017, then HAT018, then HAT017")) == [
        "HAT017",
        "HAT018",
        "HAT017",
    ]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("请检查ETL-212的状态", [("ETL-212", "issue")]),
        ("HAT017便を予約しました", [("HAT017", "code")]),
        ("订单OI5L9G已取消，金额$1,250", [("OI5L9G", "code"), ("$1,250", "money")]),
        ("موعد التسليم ٢٠٢٦-١٢-٠٢ في الصباح", [("2026-12-02", "date")]),
        ("تاریخ ۲۰۲۶-۱۲-۰۲ است", [("2026-12-02", "date")]),
        ("भुगतान ₹१,२५० तक २०२६-१२-०२ को", [("₹1,250", "money"), ("2026-12-02", "date")]),
        (
            "Откройте файл /etc/nginx/nginx.conf и проверьте порт.",
            [("/etc/nginx/nginx.conf", "path")],
        ),
        ("افتح الملف /var/log/syslog من فضلك", [("/var/log/syslog", "path")]),
        ("会議は2026年12月2日の03:00 UTCです", [("2026年12月2日", "date"), ("03:00 UTC", "time")]),
        ("встреча 8 мая 2026 в 10:30", [("8 мая 2026", "date"), ("10:30", "time")]),
        ("ＨＡＴ０１７を確認", [("HAT017", "code")]),
    ],
)
def test_every_script_is_read_alike(text: str, expected: list[tuple[str, str]]) -> None:
    assert identifiers_in(text) == expected


def test_a_nul_byte_and_a_lone_surrogate_do_not_crash() -> None:
    result = ToolMessage("id HAT017\x00 then \ud800 and /tmp/x.log", tool_call_id="c1", id="t")
    found = find_identifiers([result], [0])
    assert [i.text for i in found] == ["HAT017", "/tmp/x.log"]
    assert identifiers_in("\ud800\x00ETL-212\udfff") == [("ETL-212", "issue")]


_PIECES = st.one_of(
    st.text(max_size=12),
    st.sampled_from(
        ["HAT017", "\x00", "\ud800", "/tmp/a.py", "٢٠٢٦-١٢-٠٢", "$1,250", "`x y`", "ETL-212", "请",
         "Caroline", " ", ".", "\n", '"key":', "e.g.", "https://x.io/a).", "__init__", "12:30"]
    ),
)  # fmt: skip


@given(st.lists(_PIECES, max_size=16).map("".join))
def test_any_text_yields_identifiers_found_verbatim_in_its_folded_form(text: str) -> None:
    folded = fold_text(text)
    for value, _ in identifiers_in(text):
        assert value and value in folded


def test_sources_positions_and_mentions() -> None:
    messages = [
        SystemMessage("Policy: never book HAT999."),
        HumanMessage("Please rebook OI5L9G to Denver.", id="u1"),
        AIMessage(
            "Checking OI5L9G now.",
            tool_calls=[{"name": "get", "args": {"reservation_id": "OI5L9G"}, "id": "c1"}],
            id="a1",
        ),
        ToolMessage('{"flight": "HAT017", "status": "Denver"}', tool_call_id="c1", id="t1"),
        AIMessage("HAT017 is on time."),
    ]
    found = {i.text: i for i in find_identifiers(messages, range(len(messages)))}
    assert "HAT999" not in found  # system messages are not read
    assert found["OI5L9G"] == Identifier("OI5L9G", "code", "user", "a1", 2, 3)
    assert found["HAT017"] == Identifier("HAT017", "code", "assistant", "#4", 4, 2)
    assert found["Denver"].source == "user"  # the tool result's "Denver" is data, no name
    assert list(found) == ["OI5L9G", "Denver", "HAT017"]  # by first appearance


def test_only_the_positions_given_are_read() -> None:
    messages = [HumanMessage("ticket ETL-1"), HumanMessage("ticket ETL-2"), HumanMessage("ETL-3")]
    assert [i.text for i in find_identifiers(messages, [0, 2])] == ["ETL-1", "ETL-3"]


def test_tool_call_arguments_are_read_recursively_keys_are_not() -> None:
    call = {
        "name": "book",
        "args": {"passengers": [{"first_name": "Mia", "dob": "1990-04-05"}], "user_id": "mia_3"},
        "id": "c1",
    }
    found = find_identifiers([AIMessage("", tool_calls=[call])], [0])
    assert [(i.text, i.source) for i in found] == [
        ("1990-04-05", "tool_call"),
        ("mia_3", "tool_call"),
    ]


def test_reasoning_blocks_are_not_read_and_media_only_by_url_and_file_name() -> None:
    content: list[str | dict[str, object]] = [
        {"type": "thinking", "thinking": "maybe HAT001", "signature": "sig"},
        {"type": "text", "text": "see HAT002"},
        {"type": "image_url", "image_url": {"url": "https://img.example.com/a.png"}},
        {
            "type": "image_url",
            "image_url": {"url": "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAA"},
        },
        {
            "type": "file",
            "base64": "JVBERi0xLjQK",
            "mime_type": "application/pdf",
            "filename": "Q3 plan",
        },
    ]
    found = find_identifiers([AIMessage(content)], [0])
    assert [(i.text, i.kind) for i in found] == [
        ("HAT002", "code"),
        ("https://img.example.com/a.png", "url"),
        ("Q3 plan", "path"),
    ]


def test_a_summary_message_is_its_own_source() -> None:
    summary = HumanMessage(
        "Here is a summary: booking OI5L9G.", name="summary", id="s1",
        additional_kwargs={"lc_source": "summarization"},
    )  # fmt: skip
    assert find_identifiers([summary], [0])[0].source == "summary"
    result = ToolMessage("OI5L9G ok", tool_call_id="c")
    found = find_identifiers([summary, result], [0, 1])[0]
    assert (found.source, found.mentions) == ("tool_result", 2)  # the weakest source but one


def test_a_name_written_in_lowercase_elsewhere_is_a_word() -> None:
    messages = [HumanMessage("I went to see Rocky with Melanie."), AIMessage("rocky roads, huh")]
    assert [i.text for i in find_identifiers(messages, [0, 1])] == ["Melanie"]
    assert [i.text for i in find_identifiers(messages, [0])] == ["Rocky", "Melanie"]


def test_exclude_takes_folded_texts_out() -> None:
    messages = [HumanMessage("Call ETL-212 and ETL-213 on ٢٠٢٦-١٢-٠٢")]
    found = find_identifiers(messages, [0], exclude={"ETL-212", "2026-12-02"})
    assert [i.text for i in found] == ["ETL-213"]


def test_a_long_tool_result_is_read_at_its_head_and_tail() -> None:
    filler = "x " * 15_000
    text = f"start ETL-1 {filler} middle ETL-2 {filler} end ETL-3"
    found = find_identifiers([ToolMessage(text, tool_call_id="c")], [0])
    assert [i.text for i in found] == ["ETL-1", "ETL-3"]
    assert [t for t, _ in identifiers_in(text)] == ["ETL-1", "ETL-2", "ETL-3"]  # a text whole


# The real traces (skipped when the shared data is absent).


def test_tau_bench_reservations_flights_users_amounts_and_dates() -> None:
    run = load_tau_bench_airline()[3]
    found = {i.text: i for i in find_identifiers(run, range(1, len(run)))}
    assert found["sofia_kim_7287"].source == "user"
    assert found["OI5L9G"].source == "tool_call"
    assert found["HAT017"].kind == "code"
    assert found["AQLBTL"].kind == "code"
    assert found["2024-05-27"].kind == "date" and found["May 27"].source == "user"
    assert any(i.kind == "money" for i in found.values())
    assert "flight_number" not in found  # a JSON key


def test_tau_bench_system_prompt_identifiers_are_excluded() -> None:
    run = load_tau_bench_airline()[0]
    policy = {text for text, _ in identifiers_in(str(run[0].content))}
    assert policy  # the policy does hold identifiers (dates, amounts, codes)
    shown = {i.text for i in find_identifiers(run, range(1, len(run)))}
    assert shown & policy  # so the check below can fail
    kept = {i.text for i in find_identifiers(run, range(1, len(run)), exclude=policy)}
    assert not kept & policy
    assert kept == shown - policy


def test_swe_gym_paths_and_test_names() -> None:
    runs = load_swe_gym()
    found = {i.text: i for run in runs for i in find_identifiers(run, range(1, len(run)))}
    assert found["/workspace/getmoto__moto__4.1/reproduce_error.py"].kind == "path"
    assert found["test_create_invalidation_single_path"].kind == "code"
    assert found["python__mypy__1.6"].kind == "code"
    assert {i.kind for i in found.values()} >= {"path", "code", "quoted", "url"}


def test_locomo_dates_names_and_places() -> None:
    conversation = load_locomo()[0]
    found = {i.text: i for i in find_identifiers(conversation, range(len(conversation)))}
    assert found["8 May, 2023"].kind == "date"
    assert found["Caroline"].kind == "name" and found["Caroline"].mentions > 50
    assert found["Sweden"].kind == "name"


def test_locomo_prose_yields_no_common_words() -> None:
    """Over the first 200 messages of each LoCoMo dialogue, no identifier is a common word."""
    for conversation in load_locomo():
        found = find_identifiers(conversation, range(min(200, len(conversation))))
        assert found  # dates and names at least
        words = [i.text for i in found if i.text.lower() in COMMON_ENGLISH]
        assert words == [], conversation[0].id
