"""Bad input raises the documented exceptions (never crashes) or, for oversized text, is
reported as a diagnostic."""

import math
import pickle

import pytest

import toolcall


def test_exception_hierarchy():
    for cls in (
        toolcall.InputError,
        toolcall.DecodeError,
        toolcall.UnknownFormat,
        toolcall.ToolsError,
        toolcall.StreamFinished,
        toolcall.ValidationError,
        toolcall.UnknownTool,
        toolcall.ToolDisabled,
    ):
        assert issubclass(cls, toolcall.ToolcallError)
    assert issubclass(toolcall.DecodeError, ValueError)
    assert issubclass(toolcall.ValidationError, ValueError)
    assert issubclass(toolcall.UnknownTool, LookupError)


def test_invalid_utf8_bytes_raise_decode_error():
    with pytest.raises(toolcall.DecodeError, match="offset 3"):
        toolcall.parse(b"abc\xff<tool_call>")


def test_stream_rejects_an_invalid_chunk_without_consuming_it():
    parser = toolcall.StreamParser()
    parser.feed(b"ok ")
    with pytest.raises(toolcall.DecodeError, match="offset 5"):
        parser.feed(b"go\xfe")
    events = parser.feed(b"fine") + parser.finish()
    text = "ok " + "".join(e["text"] for e in events if e["event"] == "text")
    assert text.startswith("ok ") and text.endswith("fine") and "go" not in text


def test_split_utf8_sequence_waits_for_its_end():
    parser = toolcall.StreamParser()
    first = parser.feed(b"caf\xc3")
    with pytest.raises(toolcall.DecodeError, match="ends inside a UTF-8 sequence"):
        parser.finish()
    rest = parser.feed(b"\xa9!") + parser.finish()
    assert "".join(e["text"] for e in first + rest if e["event"] == "text") == "café!"


def test_str_after_a_split_sequence_is_refused():
    parser = toolcall.StreamParser()
    parser.feed(b"\xe2\x9c")
    with pytest.raises(toolcall.DecodeError):
        parser.feed("x")


def test_finished_stream_must_be_reset():
    parser = toolcall.StreamParser()
    parser.finish()
    with pytest.raises(toolcall.StreamFinished):
        parser.feed("more")
    with pytest.raises(toolcall.StreamFinished):
        parser.finish()
    parser.reset()
    parser.feed("more")


@pytest.mark.parametrize("bad", [None, 42, 4.5, ["text"], object()])
def test_wrong_text_types_raise_type_error(bad):
    with pytest.raises(TypeError):
        toolcall.parse(bad)
    with pytest.raises(TypeError):
        toolcall.StreamParser().feed(bad)


def test_unknown_names_raise_unknown_format(toolset):
    with pytest.raises(toolcall.UnknownFormat, match="nope"):
        toolcall.parse("x", format="nope")
    with pytest.raises(toolcall.UnknownFormat):
        toolcall.StreamParser(format="hermes,nope")
    with pytest.raises(toolcall.UnknownFormat):
        toolset.render("palm")
    with pytest.raises(toolcall.UnknownFormat):
        toolset.instructions("openai_chat")


def test_bad_tools_documents_raise_tools_error():
    with pytest.raises(toolcall.ToolsError):
        toolcall.Toolset(42)
    with pytest.raises(toolcall.ToolsError, match="#1"):
        toolcall.Toolset([
            {"name": "ok", "description": "", "parameters": {"type": "object"}},
            {"name": "bad name!", "description": "", "parameters": {"type": "object"}},
        ])
    with pytest.raises(toolcall.ToolsError, match="JSON Schema"):
        toolcall.Toolset([{"name": "t", "description": "", "parameters": {"type": "no-such-type"}}])
    with pytest.raises(toolcall.ToolsError):
        toolcall.parse("x", tools=[{"nothing": "here"}])
    with pytest.raises(toolcall.ToolsError):
        toolcall.parse("x", fallbacks=[{"tool": "t", "rule": "guess", "argument": "a"}])


def test_tools_file_errors(tmp_path):
    with pytest.raises(toolcall.ToolsError, match="cannot read"):
        toolcall.Toolset.from_file(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text("[{")
    with pytest.raises(toolcall.ToolsError, match="not valid JSON"):
        toolcall.Toolset.from_file(bad)


def test_values_outside_json_raise(toolset):
    with pytest.raises(TypeError):
        toolcall.Toolset({1: "not a str key"})
    with pytest.raises(TypeError):
        toolset.validate("get_weather", {"city": {"a", "set"}})
    with pytest.raises(toolcall.InputError, match="NaN"):
        toolset.validate("get_weather", {"city": "x", "days": math.nan})
    with pytest.raises(toolcall.InputError, match="64-bit"):
        toolset.validate("get_weather", {"city": "x", "days": 2**70})


def test_deep_or_cyclic_values_raise_input_error(toolset):
    deep = {}
    node = deep
    for _ in range(1000):
        node["a"] = {}
        node = node["a"]
    with pytest.raises(toolcall.InputError, match="deeper"):
        toolset.validate("get_weather", deep)
    cyclic = []
    cyclic.append(cyclic)
    with pytest.raises(toolcall.InputError):
        toolset.validate("get_weather", {"city": cyclic})


def test_deeply_nested_model_output_is_a_diagnostic_not_a_crash():
    text = "<tool_call>" + "[" * 100_000 + "</tool_call>"
    parsed = toolcall.parse(text)
    assert parsed["calls"] == []
    assert any(d["level"] == "error" for d in parsed["diagnostics"])


def test_input_over_the_size_bound_is_passed_through_with_an_error():
    text = "plain prose " * (17 * 1024 * 1024 // 12 + 1)  # > 16 MiB
    parsed = toolcall.parse(text)
    assert parsed["calls"] == []
    assert len(parsed["text"]) == len(text)
    assert any(d["level"] == "error" for d in parsed["diagnostics"])


def test_exceptions_pickle_with_their_details(toolset):
    with pytest.raises(toolcall.ValidationError) as info:
        toolset.validate("get_weather", {"days": 0})
    again = pickle.loads(pickle.dumps(info.value))
    assert type(again) is toolcall.ValidationError
    assert (str(again), again.tool, again.errors) == (str(info.value), "get_weather", info.value.errors)
    with pytest.raises(toolcall.UnknownTool) as info:
        toolset.validate("nope", {})
    again = pickle.loads(pickle.dumps(info.value))
    assert (again.name, again.available) == ("nope", info.value.available)
