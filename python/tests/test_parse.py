"""Every format through `parse` and `StreamParser`; streamed results equal one-shot ones."""

import asyncio
import random
import threading

import pytest
from samples import FALLBACKS, SAMPLES, TOOLS

import toolcall


def essentials(call):
    """A call without its id (generated afresh per parse unless the provider sent one)."""
    return {k: v for k, v in call.items() if k != "call_id"}


def collect(events):
    """Folds stream events into parse()'s shape."""
    out = {"text": "", "calls": [], "diagnostics": [], "reasoning": ""}
    for e in events:
        kind = e["event"]
        if kind == "text":
            out["text"] += e["text"]
        elif kind == "reasoning":
            out["reasoning"] += e["text"]
        elif kind == "call_finished":
            out["calls"].append(e["call"])
        elif kind == "diagnostic":
            out["diagnostics"].append(e["diagnostic"])
    return out


def str_chunks(text, rng):
    cuts = sorted(rng.sample(range(1, len(text)), min(len(text) - 1, rng.randint(1, 12))))
    return [text[a:b] for a, b in zip([0] + cuts, cuts + [len(text)])]


def byte_chunks(data, rng):
    """Random cuts anywhere, UTF-8 sequences included."""
    out, i = [], 0
    while i < len(data):
        n = rng.randint(1, 6)
        out.append(data[i : i + n])
        i += n
    return out


def test_every_format_has_samples_here_or_family_fixtures():
    from test_families import FIXTURES

    families = {p.name for p in FIXTURES.iterdir() if (p / "cases.txt").exists()}
    missing = {f["id"] for f in toolcall.formats()} - set(SAMPLES) - families
    assert not missing


def test_model_name_picks_the_format():
    text, _ = SAMPLES["mistral"]
    mistral = toolcall.parse(text, model="mistralai/Mistral-Small-3.2-24B-Instruct-2506")
    assert [c["format"] for c in mistral["calls"]] == ["mistral", "mistral"]
    # A Qwen model writes Hermes markup only: the Mistral reply holds no call for it.
    assert toolcall.parse(text, model="Qwen/Qwen2.5-7B-Instruct")["calls"] == []
    # An explicit format wins; an unknown model parses in auto mode.
    assert len(toolcall.parse(text, model="Qwen/Qwen2.5-7B-Instruct", format="mistral")["calls"]) == 2
    assert len(toolcall.parse(text, model="no-such-model")["calls"]) == 2
    parser = toolcall.StreamParser(model="Qwen/Qwen2.5-7B-Instruct")
    hermes, _ = SAMPLES["hermes"]
    assert [c["format"] for c in collect(parser.stream([hermes]))["calls"]] == ["hermes"]


def test_detect_reads_templates_and_tokenizer_configs():
    template = "{% for m in messages %}{{ m.content }}{% endfor %}<tool_call>\n{{ call }}\n</tool_call><think>"
    info = toolcall.detect(template)
    assert info["family"] == "hermes"
    assert "<tool_call>" in info["decided_by"]
    assert set(info) == {"family", "decided_by", "reasoning", "opens_reasoning", "templates"}
    config = {"chat_template": "[TOOL_CALLS]{{ calls }}"}
    assert toolcall.detect(config)["family"] == "mistral"
    import json as _json

    assert toolcall.detect(_json.dumps(config))["family"] == "mistral"

    class Tokenizer:  # what transformers' tokenizers expose
        chat_template = {"default": "plain", "tool_use": "<|python_tag|>{{ call }}"}

    assert toolcall.detect(Tokenizer())["family"] == "llama"
    assert toolcall.detect("no markers at all")["family"] is None
    with pytest.raises(toolcall.InputError):
        toolcall.detect({"no": "template"})
    with pytest.raises(TypeError):
        toolcall.detect(42)


@pytest.mark.parametrize("fmt", sorted(SAMPLES))
def test_each_format_parses_one_shot(fmt, toolset):
    text, expected = SAMPLES[fmt]
    parsed = toolcall.parse(text, tools=toolset, format=fmt, fallbacks=FALLBACKS)
    assert [(c["name"], c["arguments"]) for c in parsed["calls"]] == expected
    size = len(text.encode())
    for call in parsed["calls"]:
        assert call["format"] == fmt
        assert call["call_id"]
        start, end = call["span"]
        assert 0 <= start <= end <= size
    assert all(d["level"] in ("info", "warning", "error") for d in parsed["diagnostics"])


@pytest.mark.parametrize("fmt", sorted(SAMPLES))
def test_each_format_is_found_in_auto_mode(fmt, toolset):
    text, expected = SAMPLES[fmt]
    parsed = toolcall.parse(text, tools=toolset, fallbacks=FALLBACKS)
    assert [(c["name"], c["arguments"]) for c in parsed["calls"]] == expected


@pytest.mark.parametrize("fmt", sorted(SAMPLES))
def test_random_chunkings_equal_one_shot(fmt, toolset):
    text, _ = SAMPLES[fmt]
    whole = toolcall.parse(text, tools=toolset, format=fmt, fallbacks=FALLBACKS)
    rng = random.Random(f"chunkings-{fmt}")
    data = text.encode()
    chunkings = [[text], list(data[i : i + 1] for i in range(len(data)))]
    chunkings += [str_chunks(text, rng) for _ in range(10)]
    chunkings += [byte_chunks(data, rng) for _ in range(10)]
    parser = toolcall.StreamParser(toolset, format=fmt, fallbacks=FALLBACKS)
    for chunks in chunkings:
        parser.reset()
        got = collect(parser.stream(chunks))
        assert got["text"] == whole["text"], chunks
        assert [essentials(c) for c in got["calls"]] == [essentials(c) for c in whole["calls"]]


def test_streamed_calls_are_announced_then_finished(toolset):
    text, _ = SAMPLES["hermes"]
    events = list(toolcall.StreamParser(toolset).stream(text[i : i + 3] for i in range(0, len(text), 3)))
    kinds = [e["event"] for e in events]
    started = kinds.index("call_started")
    finished = kinds.index("call_finished")
    assert started < finished
    assert events[started]["call_id"] == events[finished]["call"]["call_id"]
    fragments = "".join(e["fragment"] for e in events if e["event"] == "arguments_delta")
    assert fragments.replace(" ", "") == '{"city":"Paris"}'


def test_provider_call_ids_are_kept(toolset):
    text, _ = SAMPLES["openai_chat"]
    assert toolcall.parse(text, tools=toolset)["calls"][0]["call_id"] == "call_1"


def test_repairs_are_listed_on_the_call():
    parsed = toolcall.parse("<tool_call>{'name': 'get_weather', 'arguments': {'city': 'Paris', 'metric': True,}}</tool_call>")
    [call] = parsed["calls"]
    assert call["arguments"] == {"city": "Paris", "metric": True}
    kinds = {r["kind"] for r in call["repairs"]}
    assert {"single_quotes", "trailing_comma"} <= kinds, kinds
    assert all(r["message"] for r in call["repairs"])


def test_reasoning_is_kept_apart():
    parsed = toolcall.parse('<think>Paris? <tool_call>{"name": "x"}</tool_call></think>Sunny.')
    assert parsed["text"] == "Sunny."
    assert parsed["calls"] == []
    assert "Paris?" in "".join(parsed["reasoning"])
    opened = toolcall.parse("still thinking</think>Done.", starts_in_reasoning=True)
    assert opened["text"] == "Done." and opened["reasoning"] == ["still thinking"]


def test_cut_off_call_is_reported_never_returned():
    text = 'Here: <tool_call>{"name": "get_weather", "arguments": {"city": "Par'
    parsed = toolcall.parse(text)
    assert parsed["calls"] == []
    assert any(d["level"] == "error" for d in parsed["diagnostics"])
    parser = toolcall.StreamParser()
    events = parser.feed(text) + parser.finish()
    assert not [e for e in events if e["event"] == "call_finished"]
    assert any(e["event"] == "diagnostic" and e["diagnostic"]["level"] == "error" for e in events)


def test_registry_policy_needs_registered_names_for_bare_json(toolset):
    text = '{"name": "launch_rockets", "arguments": {}}'
    assert toolcall.parse(text, tools=toolset, format="json")["calls"] == []
    assert toolcall.parse(text, format="json")["calls"][0]["name"] == "launch_rockets"


def test_tools_may_be_a_plain_document(toolset):
    text, expected = SAMPLES["call_syntax"]
    parsed = toolcall.parse(text, tools=TOOLS, format="call_syntax")
    assert [(c["name"], c["arguments"]) for c in parsed["calls"]] == expected
    parsed = toolcall.parse(text, tools={"tools": TOOLS}, format="call_syntax")
    assert [(c["name"], c["arguments"]) for c in parsed["calls"]] == expected


def test_priority_list_limits_the_formats():
    text, _ = SAMPLES["hermes"]
    assert toolcall.parse(text, format="mistral,pythonic")["calls"] == []
    assert len(toolcall.parse(text, format="mistral,hermes")["calls"]) == 1


def test_bytes_input_equals_str_input(toolset):
    for fmt, (text, _) in SAMPLES.items():
        a = toolcall.parse(text, tools=toolset, format=fmt, fallbacks=FALLBACKS)
        b = toolcall.parse(text.encode(), tools=toolset, format=fmt, fallbacks=FALLBACKS)
        c = toolcall.parse(bytearray(text.encode()), tools=toolset, format=fmt, fallbacks=FALLBACKS)
        assert a["text"] == b["text"] == c["text"]
        assert [essentials(x) for x in a["calls"]] == [essentials(x) for x in b["calls"]]


def test_non_ascii_str_is_read_as_its_utf8_bytes():
    # A `str` is read through CPython's own UTF-8 form of it (no copy): the 1- to 4-byte
    # characters before, inside and after the call give the spans bytes give.
    text = 'é中 {"name": "x", "arguments": {"s": "ß😀"}} 😀 end'
    a = toolcall.parse(text, format="json")
    b = toolcall.parse(text.encode(), format="json")
    assert a["text"] == b["text"] == "é中  😀 end"
    assert [essentials(x) for x in a["calls"]] == [essentials(x) for x in b["calls"]]
    assert a["calls"][0]["arguments"] == {"s": "ß😀"}
    assert a["calls"][0]["span"] == [6, 49]


def test_a_lone_surrogate_is_refused_like_encoding_it():
    # A `str` with a lone surrogate has no UTF-8 form: the error `str.encode` raises.
    for text in ["a\ud800b", '{"name": "x", "arguments": {}}\udc00']:
        with pytest.raises(UnicodeEncodeError):
            toolcall.parse(text, format="json")
        with pytest.raises(UnicodeEncodeError):
            toolcall.StreamParser(format="json").feed(text)


def test_stream_parser_reset_and_finished():
    parser = toolcall.StreamParser()
    assert not parser.finished
    parser.feed("hello")
    parser.finish()
    assert parser.finished
    parser.reset()
    assert not parser.finished
    assert collect(parser.feed("again") + parser.finish())["text"] == "again"


def test_astream_matches_stream(toolset):
    text, expected = SAMPLES["pythonic"]

    async def chunks():
        for i in range(0, len(text), 5):
            await asyncio.sleep(0)
            yield text[i : i + 5]

    async def run():
        return [e async for e in toolcall.StreamParser(toolset, format="pythonic").astream(chunks())]

    got = collect(asyncio.run(run()))
    assert [(c["name"], c["arguments"]) for c in got["calls"]] == expected


def test_large_call_parses_whole_and_streamed():
    # Over the size at which the GIL is released.
    content = "line ✓ \"quoted\"\n" * 20_000
    import json

    text = "<tool_call>" + json.dumps({"name": "write_file", "arguments": {"path": "a.txt", "content": content}}) + "</tool_call>"
    [call] = toolcall.parse(text)["calls"]
    assert call["arguments"]["content"] == content
    parser = toolcall.StreamParser()
    data = text.encode()
    events = []
    for i in range(0, len(data), 100_003):
        events += parser.feed(data[i : i + 100_003])
    events += parser.finish()
    [streamed] = collect(events)["calls"]
    assert streamed["arguments"]["content"] == content


def test_parsers_run_in_threads(toolset):
    text = " ".join(SAMPLES["hermes"][0] for _ in range(1000))  # > 64 KiB, under the 1024-call bound
    want = [essentials(c) for c in toolcall.parse(text, tools=toolset)["calls"]]
    results = []

    def work():
        results.append([essentials(c) for c in toolcall.parse(text, tools=toolset)["calls"]])

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == [want] * 4
    assert len(want) == 1000


def test_formats_lists_ids_descriptions_and_examples():
    fs = toolcall.formats()
    ids = [f["id"] for f in fs]
    assert len(ids) == len(set(ids)) and {"tools_envelope", "hermes", "mistral"} <= set(ids)
    assert all(f["description"] and f["example"] for f in fs)


def test_finish_reason_decides_a_call_missing_its_end_token():
    text = '<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{"city": "Paris"}'
    stopped = toolcall.parse(text, format="gpt_oss", finish_reason="stop")
    assert [c["name"] for c in stopped["calls"]] == ["get_weather"]
    assert "closing_marker" in [r["kind"] for r in stopped["calls"][0]["repairs"]]
    cut = toolcall.parse(text, format="gpt_oss", finish_reason="length")
    assert cut["calls"] == []
    assert any(d["level"] == "error" for d in cut["diagnostics"])
    parser = toolcall.StreamParser(format="gpt_oss")
    events = parser.feed(text) + parser.finish("length")
    assert not [e for e in events if e["event"] == "call_finished"]
    parser.reset()
    events = parser.feed(text) + parser.finish(finish_reason="tool_calls")
    assert [e["call"]["name"] for e in events if e["event"] == "call_finished"] == ["get_weather"]


def test_calls_inside_reasoning_follow_reasoning_calls():
    reply = (
        '<think>Calling it. <tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}'
        "</tool_call></think>"
    )
    assert toolcall.parse(reply, format="hermes")["calls"] == []  # hermes: drafts
    taken = toolcall.parse(reply, format="hermes", reasoning_calls="take_if_none_after")
    assert [c["name"] for c in taken["calls"]] == ["get_weather"]
    parser = toolcall.StreamParser(format="hermes", reasoning_calls="take_if_none_after")
    events = [e for piece in (reply[:20], reply[20:]) for e in parser.feed(piece)] + parser.finish()
    assert [e["call"]["name"] for e in events if e["event"] == "call_finished"] == ["get_weather"]
    with pytest.raises(toolcall.InputError):
        toolcall.parse(reply, reasoning_calls="sometimes")


def _signature_of_parse(
    text,
    *,
    tools=None,
    format="auto",
    model=None,
    fallbacks=None,
    starts_in_reasoning=False,
    finish_reason=None,
    reasoning_calls=None,
):
    """`parse`'s documented signature as a Python function: how its arguments bind."""
    return dict(
        text=text,
        tools=tools,
        format=format,
        model=model,
        fallbacks=fallbacks,
        starts_in_reasoning=starts_in_reasoning,
        finish_reason=finish_reason,
        reasoning_calls=reasoning_calls,
    )


def _without_ids(parsed):
    return {**parsed, "calls": [essentials(c) for c in parsed["calls"]]}


# `parse` reads its arguments itself (vectorcall, not pyo3's tuple-and-dict reading): it
# binds them as the Python function of its signature does, refuses what that function
# refuses with a TypeError, and finds keywords whose names are not interned strings.
def test_parse_binds_its_arguments_as_a_python_function_would(toolset):
    import inspect

    assert inspect.signature(toolcall.parse) == inspect.signature(_signature_of_parse)
    text = '<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>'
    # Keyword names made at run time (not interned), as `**kwargs` of read data gives them.
    fmt_key = "".join(["for", "mat"])
    calls = [
        ((), {}),
        ((text,), {}),
        ((text, "hermes"), {}),
        ((), {"text": text}),
        ((text,), {"text": text}),
        ((text,), {"format": "hermes"}),
        ((text,), {fmt_key: "hermes", "tools": toolset}),
        ((text.encode(),), {"format": "hermes,json", "model": None}),
        ((bytearray(text.encode()),), {"model": "Qwen/Qwen2.5-7B-Instruct"}),
        ((text,), {"starts_in_reasoning": True, "finish_reason": "length"}),
        ((text,), {"finish_reason": None, "reasoning_calls": "ignore"}),
        ((text,), {"fallbacks": None, "tools": None}),
        ((text,), {"formats": "hermes"}),
        ((text,), {"format": 1}),
        ((text,), {"format": None}),
        ((text,), {"model": 3}),
        ((text,), {"starts_in_reasoning": 1}),
        ((text,), {"finish_reason": b"stop"}),
        ((42,), {}),
        ((None,), {}),
    ]
    for args, kwargs in calls:
        try:
            bound = _signature_of_parse(*args, **kwargs)
        except TypeError:
            with pytest.raises(TypeError):
                toolcall.parse(*args, **kwargs)
            continue
        try:
            expected = toolcall.parse(
                bound.pop("text"),
                **{k: v for k, v in bound.items() if k != "format"},
                format=bound["format"],
            )
        except TypeError:
            # A value of the wrong type, refused by the all-keyword call as well.
            with pytest.raises(TypeError):
                toolcall.parse(*args, **kwargs)
            continue
        got = toolcall.parse(*args, **kwargs)
        assert _without_ids(got) == _without_ids(expected), (args, kwargs)
    with pytest.raises(TypeError, match="unexpected keyword argument 'formats'"):
        toolcall.parse(text, formats="hermes")
    with pytest.raises(TypeError, match="multiple values for argument 'text'"):
        toolcall.parse(text, text=text)
    with pytest.raises(TypeError, match="missing 1 required positional argument: 'text'"):
        toolcall.parse(format="hermes")
    with pytest.raises(TypeError, match="takes 1 positional arguments but 2 were given"):
        toolcall.parse(text, "hermes")
    with pytest.raises(toolcall.UnknownFormat):
        toolcall.parse(text, format="no_such_format")
    assert toolcall.parse(text, format="hermes")["calls"][0]["name"] == "get_weather"


# Call dicts are copied from templates the process keeps by format and name, diagnostic
# dicts from templates kept by level and message (256 slots, names over 128 bytes kept in
# none): every result's dicts are its own, and hold the right name, format and message
# whatever was parsed before, also when 600 names evict each other from the slots.
def test_call_and_diagnostic_dicts_are_right_and_fresh_across_names_and_formats():
    import json

    names = [f"tool_{i}" for i in range(600)] + ["x" * 129, "get_" * 40, "get_weather"]
    rng = random.Random(36)
    for _ in range(3):
        for name in rng.sample(names, len(names)):
            fmt = rng.choice(["hermes", "json"])
            body = json.dumps({"name": name, "arguments": {"k": name, "\u00e9": [1.5, None]}})
            text = f"<tool_call>{body}</tool_call>" if fmt == "hermes" else f"[{body}]"
            span = [0, len(text.encode())]
            parsed = toolcall.parse(text, format=fmt)
            (call,) = parsed["calls"]
            assert list(call) == ["call_id", "name", "arguments", "format", "repairs", "span"]
            args = {"k": name, "\u00e9": [1.5, None]}
            assert (call["name"], call["format"], call["arguments"]) == (name, fmt, args)
            assert (call["repairs"], call["span"]) == ([], span)
            (found,) = parsed["diagnostics"]
            assert list(found) == ["level", "message", "span"]
            message = f'found {fmt} call to "{name}"'
            assert found == {"level": "info", "message": message, "span": span}
            # What a caller does to one result's dicts never shows in another result.
            call["name"], call["format"] = "changed", None
            call["repairs"].append(1)
            call["span"].append(2)
            del call["call_id"]
            found["message"], found["level"] = "changed", "error"
            found["span"].append(1)


# `parse` lets go of its arguments before it returns, whatever it was given: it once entered
# without pyo3 counting the call as attached, so a `Py` it dropped (the `bytes` behind a
# `bytes` text) waited for some later pyo3 call to be released.
def test_parse_holds_no_reference_to_its_arguments_after_it_returns(toolset):
    import sys

    text = b'<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>'
    for value in [text, bytearray(text), text.decode()]:
        fmt = "".join(["her", "mes"])
        held = (sys.getrefcount(value), sys.getrefcount(fmt), sys.getrefcount(toolset))
        for _ in range(10):
            assert len(toolcall.parse(value, tools=toolset, format=fmt)["calls"]) == 1
        assert (sys.getrefcount(value), sys.getrefcount(fmt), sys.getrefcount(toolset)) == held
