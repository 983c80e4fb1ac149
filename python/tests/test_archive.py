"""Reading session archives from both backends: the same tests on an SQLite file and on a
PostgreSQL database, each holding a session written by a real agent run
(tests/pytest_suite.rs writes them and says where in ``TOOLCALL_TEST_ARCHIVES``)."""

import json
import os
import pickle
import socket
import sqlite3

import pytest

import toolcall


def _archives():
    listed = os.environ.get("TOOLCALL_TEST_ARCHIVES")
    return json.loads(listed) if listed else []


def _archive(backend):
    for archive in _archives():
        if archive["backend"] == backend:
            return archive
    pytest.skip(
        f"no {backend} archive was written for this run (pytest_suite.rs writes them; "
        "PostgreSQL needs its server binaries)"
    )


@pytest.fixture(params=["sqlite", "postgres"])
def written(request):
    return _archive(request.param)


def test_the_written_session_is_listed(written):
    sessions = toolcall.list_sessions(written["location"])
    ours = [s for s in sessions if s["id"] == written["session"]]
    assert len(ours) == 1
    record = toolcall.show_session(written["location"], written["session"])
    assert ours[0] == record["session"]
    assert ours[0]["calls"] == len(record["calls"])
    assert ours[0]["messages"] == len(record["messages"])
    assert ours[0]["description"] == "python archive test"


def test_every_call_is_paired_with_its_one_result(written):
    record = toolcall.show_session(written["location"], written["session"])
    calls = record["calls"]
    # The calls the assistant messages carry are the archived calls, in order.
    asked = [c for m in record["messages"] if m["role"] == "assistant" for c in m.get("calls", [])]
    assert [c["call_id"] for c in calls] == [c["call_id"] for c in asked]
    assert len(calls) == 4
    # Each tool message answers one archived call, and each call has one inline result:
    # the outcome the model was told.
    told = {m["call_id"]: m["content"] for m in record["messages"] if m["role"] == "tool"}
    assert sorted(told) == sorted(c["call_id"] for c in calls)
    for call in calls:
        assert len(call["results"]) == 1, call
        result = call["results"][0]
        assert result["delivery"] == "inline"
        assert result["outcome"] == told[call["call_id"]]
        if call["name"] == "add":
            args = call["arguments"]
            assert result["outcome"] == {"status": "ok", "data": {"sum": args["a"] + args["b"]}}
        else:
            assert result["outcome"]["error"]["code"] == "unknown_tool"
    assert [c["round"] for c in calls] == [1, 1, 2, 2]


def test_secrets_stay_redacted(written):
    record = toolcall.show_session(written["location"], written["session"])
    with_token = [c for c in record["calls"] if "token" in c["arguments"]]
    assert len(with_token) == 1
    assert with_token[0]["arguments"]["token"] == "[REDACTED]"
    assert "sk-secret" not in json.dumps(record)


def test_an_archive_object_reads_many_times(written):
    archive = toolcall.Archive(written["location"])
    assert archive.location in repr(archive)
    first = archive.show_session(written["session"])
    assert archive.show_session(written["session"]) == first
    assert written["session"] in [s["id"] for s in archive.list_sessions()]


def test_an_unknown_session_is_session_not_found(written):
    with pytest.raises(toolcall.SessionNotFound) as caught:
        toolcall.show_session(written["location"], "ses_nope")
    assert caught.value.session == "ses_nope"
    assert "ses_nope" in str(caught.value)
    assert isinstance(caught.value, LookupError)
    assert isinstance(caught.value, toolcall.ArchiveError)
    again = pickle.loads(pickle.dumps(caught.value))
    assert (type(again), again.session, str(again)) == (
        toolcall.SessionNotFound,
        "ses_nope",
        str(caught.value),
    )


def test_both_backends_hold_the_same_session():
    sqlite, postgres = _archive("sqlite"), _archive("postgres")
    a = toolcall.show_session(sqlite["location"], sqlite["session"])
    b = toolcall.show_session(postgres["location"], postgres["session"])
    for record in (a, b):
        del record["session"]["id"], record["session"]["created_at"]
        for call in record["calls"]:
            for result in call["results"]:
                del result["duration_ms"]
    assert a == b


def test_a_missing_file_is_unavailable(tmp_path):
    missing = tmp_path / "none.sqlite"
    with pytest.raises(toolcall.ArchiveUnavailable, match="no such file"):
        toolcall.list_sessions(missing)
    assert not missing.exists()  # reading never creates an archive


def test_an_unreachable_database_is_unavailable():
    # A loopback port nothing listens on: the connection is refused at once.
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"postgres://ann:hunter2@127.0.0.1:{port}/sessions"
    with pytest.raises(toolcall.ArchiveUnavailable) as caught:
        toolcall.Archive(url)
    message = str(caught.value)
    assert f"127.0.0.1:{port}" in message
    assert "hunter2" not in message and "hunter2" not in caught.value.location


def test_a_file_that_is_not_an_archive_is_an_archive_error(tmp_path):
    path = tmp_path / "notes.txt"
    path.write_text("not a database, just some notes that are long enough\n" * 20)
    with pytest.raises(toolcall.ArchiveError) as caught:
        toolcall.list_sessions(str(path))
    assert str(path) in str(caught.value)


def test_a_newer_sqlite_schema_is_refused(tmp_path):
    path = tmp_path / "newer.sqlite"
    with sqlite3.connect(path) as db:
        db.execute("PRAGMA user_version = 1000")
    with pytest.raises(toolcall.NewerSchema) as caught:
        toolcall.list_sessions(path)
    assert caught.value.found == 1000
    assert caught.value.known < 1000
    assert "newer" in str(caught.value)
    with sqlite3.connect(path) as db:  # refused untouched
        assert db.execute("PRAGMA user_version").fetchone() == (1000,)
        assert db.execute("SELECT count(*) FROM sqlite_master").fetchone() == (0,)


def test_a_newer_postgres_schema_is_refused():
    newer = _archive("postgres")["newer"]
    with pytest.raises(toolcall.NewerSchema) as caught:
        toolcall.Archive(newer)
    assert caught.value.found == 1000
