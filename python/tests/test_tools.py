"""Python functions as tools: the schema from type hints and docstrings, and execute()."""

import asyncio
import enum
import json
from typing import Dict, List, Literal, Optional

import pytest

import toolcall


class Unit(enum.Enum):
    CELSIUS = "celsius"
    FAHRENHEIT = "fahrenheit"


@toolcall.tool
def get_weather(city: str, days: int = 1, unit: Unit = Unit.CELSIUS) -> Dict[str, object]:
    """Current weather for a city.

    Longer notes that are not the description.

    Args:
        city: The city's name, e.g. Paris.
        days: How many days to forecast.
    """
    if city == "Atlantis":
        raise LookupError("no such city")
    return {"city": city, "days": days, "unit": unit}


@toolcall.tool(name="search.web")
def search(query: str, tags: Optional[List[str]] = None, mode: Literal["fast", "deep"] = "fast"):
    """Searches the web.

    :param query: What to look for.
    """
    return [query, tags, mode]


@toolcall.tool
async def slow_add(a: int, b: float) -> float:
    """Adds two numbers, slowly."""
    await asyncio.sleep(0)
    return a + b


def test_the_schema_comes_from_the_hints_and_the_docstring():
    spec = get_weather.spec["function"]
    assert spec["name"] == "get_weather"
    assert spec["description"] == "Current weather for a city."
    params = spec["parameters"]
    assert params["required"] == ["city"]
    assert params["properties"]["city"] == {"type": "string", "description": "The city's name, e.g. Paris."}
    assert params["properties"]["days"]["type"] == "integer"
    assert params["properties"]["unit"] == {"enum": ["celsius", "fahrenheit"], "type": "string"}
    params = search.spec["function"]["parameters"]
    assert search.spec["function"]["name"] == "search.web"
    assert params["properties"]["query"]["description"] == "What to look for."
    assert params["properties"]["tags"] == {"type": "array", "items": {"type": "string"}}
    assert params["properties"]["mode"] == {"enum": ["fast", "deep"], "type": "string"}
    assert params["required"] == ["query"]
    # The decorated function still runs as itself.
    assert get_weather("Oslo")["city"] == "Oslo"


def test_execute_validates_runs_and_answers_in_toolcalls_shape():
    tools = toolcall.Toolset([get_weather, search])
    assert tools.names == ["get_weather", "search.web"]
    # Arguments as a model writes them: JSON text, a number as a string (coerced).
    ok = tools.execute({"name": "get_weather", "arguments": '{"city": "Paris", "days": "3"}'})
    assert ok == {"status": "ok", "data": {"city": "Paris", "days": 3, "unit": "celsius"}}
    json.dumps(ok)  # JSON all the way down
    failed = tools.execute({"name": "get_weather", "arguments": {"city": "Atlantis"}})
    assert failed["error"]["code"] == "tool_failed"
    assert "no such city" in failed["error"]["message"]
    invalid = tools.execute({"name": "get_weather", "arguments": {"city": "Paris", "days": "x"}})
    assert invalid["error"]["code"] == "invalid_arguments"
    assert invalid["error"]["details"][0]["pointer"] == "/days"
    unknown = tools.execute({"name": "get_wether", "arguments": {}})
    assert unknown["error"]["code"] == "unknown_tool"
    assert unknown["error"]["details"]["suggestion"] == "get_weather"
    not_json = tools.execute({"name": "get_weather", "arguments": '{"city": '})
    assert not_json["error"]["code"] == "invalid_arguments"
    tools.disable("search.web")
    assert tools.execute({"name": "search.web", "arguments": {"query": "x"}})["error"]["code"] == "tool_disabled"
    assert tools.execute({"arguments": {}})["error"]["code"] == "invalid_arguments"


def test_a_parsed_call_is_executed_as_parse_returns_it():
    tools = toolcall.Toolset([get_weather])
    parsed = toolcall.parse(
        '<tool_call>{"name": "get_weather", "arguments": {"city": "Rome",}}</tool_call>', tools=tools
    )
    assert tools.execute(parsed["calls"][0])["data"]["city"] == "Rome"


def test_async_functions_run_with_aexecute():
    tools = toolcall.Toolset([slow_add, get_weather])
    call = {"name": "slow_add", "arguments": {"a": 1, "b": 2.5}}
    assert asyncio.run(tools.aexecute(call)) == {"status": "ok", "data": 3.5}
    assert tools.execute(call)["error"]["code"] == "tool_failed"
    assert asyncio.run(tools.aexecute({"name": "get_weather", "arguments": {"city": "X"}}))["status"] == "ok"


def test_a_tool_without_a_function_is_answered_not_run():
    tools = toolcall.Toolset(
        [{"name": "remote", "parameters": {"type": "object", "properties": {}}}, get_weather]
    )
    assert tools.execute({"name": "remote", "arguments": {}})["error"]["code"] == "tool_failed"


def test_from_file_keeps_the_class(tmp_path):
    path = tmp_path / "tools.json"
    path.write_text(json.dumps([get_weather.spec]))
    tools = toolcall.Toolset.from_file(path)
    assert isinstance(tools, toolcall.Toolset)
    assert tools.names == ["get_weather"]
    # No Python function came with the file.
    assert tools.execute({"name": "get_weather", "arguments": {"city": "X"}})["error"]["code"] == "tool_failed"


def test_help_shows_the_docstrings_of_the_compiled_core():
    assert "tool calls" in toolcall.parse.__doc__
    assert "tools document" in toolcall._toolcall.Toolset.__doc__
    assert "Python functions" in toolcall.Toolset.__doc__
    assert "feed" in toolcall._toolcall.StreamParser.__doc__
    import pydoc

    assert "Finds the tool calls" in pydoc.render_doc(toolcall.parse)
    assert "validates calls" in pydoc.render_doc(toolcall.Toolset)


@pytest.mark.parametrize(
    "called", ["get_wether", "get_weathers", "weather", "functions.get_weather", "GetWeather"]
)
def test_unknown_tool_suggests_the_tool_meant(toolset, called):
    with pytest.raises(toolcall.UnknownTool) as info:
        toolset.validate(called, {"city": "Paris"})
    assert info.value.suggestion == "get_weather"


def test_arguments_that_are_not_json_are_called_so(toolset):
    with pytest.raises(toolcall.ValidationError) as info:
        toolset.validate("get_weather", '{"location": ')
    assert "not JSON" in str(info.value)
    assert "got a string" not in str(info.value)
