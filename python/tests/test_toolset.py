"""Toolset: loading every tools shape, validation with repairs, rendering, instructions."""

import json

import pytest
from samples import TOOLS

import toolcall

PROVIDERS = ["openai", "responses", "anthropic", "gemini"]
OWN = [
    {
        "name": "echo",
        "description": "Echo the text",
        "parameters": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
        "timeout_ms": 500,
    }
]


def test_validate_returns_arguments_and_repairs(toolset):
    args, repairs = toolset.validate("get_weather", {"city": "Paris"})
    assert (args, repairs) == ({"city": "Paris"}, [])
    args, repairs = toolset.validate("get_weather", {"city": "Paris", "days": "3", "metric": "true"})
    assert args == {"city": "Paris", "days": 3, "metric": True}
    assert {r["kind"] for r in repairs} == {"coerced_integer", "coerced_boolean"}


def test_arguments_as_a_json_string_are_read(toolset):
    args, repairs = toolset.validate("get_weather", json.dumps({"city": "Oslo"}))
    assert args == {"city": "Oslo"}
    assert [r["kind"] for r in repairs] == ["arguments_string"]
    args, _ = toolset.validate("get_time", None)
    assert args == {}


def test_validation_errors_carry_json_pointers(toolset):
    with pytest.raises(toolcall.ValidationError) as info:
        toolset.validate("get_weather", {"days": 0})
    e = info.value
    assert e.tool == "get_weather"
    pointers = sorted(err["pointer"] for err in e.errors)
    assert pointers == ["", "/days"]
    assert all(err["message"] for err in e.errors)
    with pytest.raises(toolcall.ValidationError) as info:
        toolset.validate("get_weather", [1, 2])
    assert info.value.errors[0]["pointer"] == ""


def test_unknown_tool_names_the_suggestion_and_the_tools(toolset):
    with pytest.raises(toolcall.UnknownTool) as info:
        toolset.validate("GetWeather", {"city": "Paris"})
    assert info.value.name == "GetWeather"
    assert info.value.suggestion == "get_weather"
    assert "get_time" in info.value.available
    with pytest.raises(toolcall.UnknownTool) as info:
        toolset.validate("launch_rockets", {})
    assert info.value.suggestion is None


def test_enable_and_disable():
    tools = toolcall.Toolset(TOOLS)
    tools.disable("get_time")
    assert "get_time" not in tools.enabled and "get_time" in tools.names
    with pytest.raises(toolcall.ToolDisabled) as info:
        tools.validate("get_time", {})
    assert info.value.name == "get_time"
    for provider in ("openai", "anthropic"):
        assert "get_time" not in json.dumps(tools.render(provider))
    assert "get_time" not in tools.instructions("hermes")
    tools.enable("get_time")
    assert tools.validate("get_time", {}) == ({}, [])
    with pytest.raises(toolcall.UnknownTool):
        tools.disable("nope")


def test_parsers_keep_the_toolset_they_were_given():
    tools = toolcall.Toolset(TOOLS)
    parser = toolcall.StreamParser(tools, format="call_syntax")
    tools.disable("computer_use")  # copy on write: the parser's set is unchanged
    events = parser.feed('computer_use("screenshot")') + parser.finish()
    assert [e["call"]["name"] for e in events if e["event"] == "call_finished"] == ["computer_use"]


def test_render_shapes(toolset):
    openai = toolset.render("openai")
    assert openai[0]["type"] == "function" and set(openai[0]["function"]) >= {"name", "description", "parameters"}
    responses = toolset.render("responses")
    assert responses[0]["type"] == "function" and "parameters" in responses[0]
    anthropic = toolset.render("anthropic")
    assert set(anthropic[0]) >= {"name", "description", "input_schema"}
    gemini = toolset.render("gemini")
    assert [d["name"] for d in gemini["functionDeclarations"]] == toolset.names


@pytest.mark.parametrize("provider", PROVIDERS)
def test_rendered_tools_load_back(provider, toolset):
    again = toolcall.Toolset(toolset.render(provider))
    assert again.names == toolset.names
    assert again.validate("get_weather", {"city": "Paris", "days": "2"})[0] == {"city": "Paris", "days": 2}


def test_own_format_and_tools_object(tmp_path):
    own = toolcall.Toolset({"tools": OWN})
    assert own.names == ["echo"] and len(own) == 1 and "echo" in own and "x" not in own
    assert repr(own) == 'Toolset(["echo"])'
    path = tmp_path / "tools.json"
    path.write_text(json.dumps(OWN))
    assert toolcall.Toolset.from_file(path).names == ["echo"]
    assert toolcall.Toolset.from_file(str(path)).validate("echo", {"text": 5}) == (
        {"text": "5"},
        [{"kind": "coerced_string", "message": toolcall.Toolset(OWN).validate("echo", {"text": 5})[1][0]["message"]}],
    )


@pytest.mark.parametrize(
    "fmt", ["tools_envelope", "hermes", "key_value", "call_syntax", "pythonic", "mistral", "llama", "json", "action_response"]
)
def test_instructions_show_a_call_the_parser_reads(fmt, toolset):
    text = toolset.instructions(fmt)
    for name in toolset.enabled:
        assert name in text
    # The worked example is written in the format it teaches: the parser finds it.
    calls = toolcall.parse(text, tools=toolset, format=fmt)["calls"]
    assert calls and all(c["name"] in toolset.names for c in calls)


def test_constrain_gives_each_dialect_for_the_enabled_tools(toolset):
    gbnf = toolset.constrain("hermes")
    assert isinstance(gbnf, str) and gbnf.startswith("root ::=") and '"\\"get_weather\\""' in gbnf
    lark = toolset.constrain("hermes", dialect="lark", tool_choice="required")
    assert isinstance(lark, str) and "start:" in lark
    tag = toolset.constrain("hermes", dialect="structural_tag")
    assert isinstance(tag, dict) and tag["type"] == "structural_tag"
    # A disabled tool is not offered, so the constraint no longer names it.
    toolset.disable("get_weather")
    assert "get_weather" not in toolset.constrain("hermes")


def test_constrain_errors_name_what_is_wrong(toolset):
    with pytest.raises(toolcall.UnknownFormat):
        toolset.constrain("no_such_family")
    with pytest.raises(toolcall.UnknownFormat):
        toolset.constrain("hermes", dialect="no_such_dialect")
    with pytest.raises(toolcall.InputError):
        toolset.constrain("hermes", tool_choice="not_a_tool")
