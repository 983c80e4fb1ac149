"""Shared test data: a toolset in OpenAI Chat shape and one reply per format."""

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Current weather for a city",
            "parameters": {
                "type": "object",
                "properties": {
                    "city": {"type": "string"},
                    "days": {"type": "integer", "minimum": 1},
                    "metric": {"type": "boolean"},
                },
                "required": ["city"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "get_time",
            "description": "The time now",
            "parameters": {"type": "object", "properties": {}},
        },
    },
    {
        "type": "function",
        "function": {
            "name": "computer_use",
            "description": "Control the screen",
            "parameters": {
                "type": "object",
                "properties": {
                    "action": {"type": "string"},
                    "coordinate": {
                        "type": "array",
                        "items": {"type": "integer"},
                        "minItems": 2,
                        "maxItems": 2,
                    },
                    "text": {"type": "string"},
                },
                "required": ["action"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "highlight_object",
            "description": "Highlight an object in view",
            "parameters": {
                "type": "object",
                "properties": {"object": {"type": "string"}},
                "required": ["object"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "open_app",
            "description": "Open an application",
            "parameters": {
                "type": "object",
                "properties": {"app_name": {"type": "string"}},
                "required": ["app_name"],
            },
        },
    },
]

FALLBACKS = [
    {"tool": "highlight_object", "rule": "intent", "argument": "object"},
]

PARIS = {"city": "Paris"}

# format -> (reply, [(name, arguments)]); non-ASCII text on purpose, so byte chunkings split
# UTF-8 sequences.
SAMPLES = {
    "tools_envelope": (
        'Sure — café first.\n```json\n{"tools": [{"name": "computer_use", "arguments": {"action": "screenshot"}}]}\n```',
        [("computer_use", {"action": "screenshot"})],
    ),
    "call_syntax": (
        'computer_use("left_click", 100, 200)',
        [("computer_use", {"action": "left_click", "coordinate": [100, 200]})],
    ),
    "action_response": (
        '{"session_id": "s1", "command": "open_app", "args": {"app_name": "Safari"}, "text": "Opening Safari."}',
        [("open_app", {"app_name": "Safari"})],
    ),
    "key_value": (
        "TOOL_CALL: highlight_object\nOBJECT: headphones",
        [("highlight_object", {"object": "headphones"})],
    ),
    "fallback": (
        "I'll highlight the cup for you",
        [("highlight_object", {"object": "cup"})],
    ),
    "hermes": (
        'Voilà: <tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call> ✓',
        [("get_weather", PARIS)],
    ),
    "mistral": (
        '[TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Paris"}}, {"name": "get_time", "arguments": {}}]',
        [("get_weather", PARIS), ("get_time", {})],
    ),
    "llama": (
        '<|python_tag|>{"name": "get_weather", "parameters": {"city": "Paris"}}',
        [("get_weather", PARIS)],
    ),
    "pythonic": (
        '[get_weather(city="Paris"), get_time()]',
        [("get_weather", PARIS), ("get_time", {})],
    ),
    "json": (
        '{"name": "get_weather", "arguments": {"city": "Paris"}}',
        [("get_weather", PARIS)],
    ),
    "openai_chat": (
        '{"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": "{\\"city\\": \\"Paris\\"}"}}]}',
        [("get_weather", PARIS)],
    ),
    "responses": (
        '{"type": "function_call", "call_id": "call_1", "name": "get_weather", "arguments": "{\\"city\\": \\"Paris\\"}"}',
        [("get_weather", PARIS)],
    ),
    "gemini": (
        '{"parts": [{"functionCall": {"name": "get_weather", "args": {"city": "Paris"}}}]}',
        [("get_weather", PARIS)],
    ),
    "anthropic": (
        '{"content": [{"type": "tool_use", "id": "toolu_01", "name": "get_weather", "input": {"city": "Paris"}}]}',
        [("get_weather", PARIS)],
    ),
}
