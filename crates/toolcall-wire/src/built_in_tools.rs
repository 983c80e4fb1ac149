//! Anthropic's built-in client tools as plain function tools, for an upstream whose model
//! was never taught them: Claude knows the input of `computer_…`, `bash_…`, `text_editor_…`
//! and `memory_…` without a schema, so clients declare them by `type` and `name` alone;
//! another model needs the documented input schema, written out here (one entry per type,
//! the known versions listed; the computer's display size goes into its description).
//!
//! A call comes back under the declared name (`computer`, `bash`,
//! `str_replace_based_edit_tool`, `memory`) with the documented input, so the client runs it
//! as it would Claude's.

use serde_json::{Map, Value, json};

/// A built-in tool type: the prefix of its versioned `type`, the versions known, what its
/// input looks like.
pub struct BuiltIn {
    pub prefix: &'static str,
    pub versions: &'static [&'static str],
    /// The schema of its input and the description, given the declaration (display size).
    pub describe: fn(&Map<String, Value>) -> (String, Value),
}

/// Every built-in tool type known.
pub static BUILT_INS: &[BuiltIn] = &[
    BuiltIn {
        prefix: "computer_",
        versions: &[
            "computer_20241022",
            "computer_20250124",
            "computer_20251124",
        ],
        describe: computer,
    },
    BuiltIn {
        prefix: "bash_",
        versions: &["bash_20241022", "bash_20250124"],
        describe: bash,
    },
    BuiltIn {
        prefix: "text_editor_",
        versions: &[
            "text_editor_20241022",
            "text_editor_20250124",
            "text_editor_20250429",
            "text_editor_20250728",
        ],
        describe: text_editor,
    },
    BuiltIn {
        prefix: "memory_",
        versions: &["memory_20250818"],
        describe: memory,
    },
];

/// An expanded declaration: the function's description and input schema, and whether the
/// version was unknown (the nearest known schema was used).
pub struct Expanded {
    pub description: String,
    pub parameters: Value,
    pub unknown_version: bool,
}

/// The function form of a built-in tool of type `kind` declared with `fields` (its other
/// fields: `display_width_px`, …); `None` for a type that is no Anthropic built-in.
pub fn expand(kind: &str, fields: &Map<String, Value>) -> Option<Expanded> {
    let b = BUILT_INS.iter().find(|b| kind.starts_with(b.prefix))?;
    let (description, parameters) = (b.describe)(fields);
    Some(Expanded {
        description,
        parameters,
        unknown_version: !b.versions.contains(&kind),
    })
}

fn int(fields: &Map<String, Value>, key: &str) -> Option<u64> {
    fields.get(key).and_then(Value::as_u64)
}

/// The computer's actions (the newest version's set: every older one is a subset).
pub const COMPUTER_ACTIONS: &[&str] = &[
    "key",
    "hold_key",
    "type",
    "cursor_position",
    "mouse_move",
    "left_mouse_down",
    "left_mouse_up",
    "left_click",
    "left_click_drag",
    "right_click",
    "middle_click",
    "double_click",
    "triple_click",
    "scroll",
    "wait",
    "screenshot",
];

fn computer(fields: &Map<String, Value>) -> (String, Value) {
    let w = int(fields, "display_width_px").unwrap_or(1024);
    let h = int(fields, "display_height_px").unwrap_or(768);
    let point = |what: &str| {
        json!({"type": "array", "items": {"type": "integer", "minimum": 0},
            "minItems": 2, "maxItems": 2, "description": what})
    };
    let description = format!(
        "Use a mouse and keyboard to interact with a computer, and take screenshots. The \
         screen is {w}x{h} pixels; coordinates are [x, y] from the top left corner. Take a \
         screenshot first to see where things are. Actions: screenshot; left_click, \
         right_click, middle_click, double_click, triple_click, mouse_move at `coordinate` \
         (`text` may hold modifier keys to hold during a click); left_click_drag from \
         `start_coordinate` to `coordinate`; left_mouse_down, left_mouse_up; type `text`; \
         key presses the key or combination in `text` (xdotool syntax, e.g. \"ctrl+s\"); \
         hold_key holds `text` for `duration` seconds; scroll at `coordinate` in \
         `scroll_direction` by `scroll_amount` wheel clicks; wait `duration` seconds; \
         cursor_position."
    );
    let schema = json!({"type": "object", "properties": {
        "action": {"type": "string", "enum": COMPUTER_ACTIONS},
        "coordinate": point(&format!("[x, y]: 0 <= x < {w}, 0 <= y < {h}")),
        "start_coordinate": point("[x, y] where left_click_drag starts"),
        "text": {"type": "string"},
        "scroll_direction": {"type": "string", "enum": ["up", "down", "left", "right"]},
        "scroll_amount": {"type": "integer", "minimum": 0},
        "duration": {"type": "number", "minimum": 0}},
        "required": ["action"]});
    (description, schema)
}

fn bash(_: &Map<String, Value>) -> (String, Value) {
    let description = "Run a command in a persistent bash shell (state is kept between \
        calls). Set `restart` to true to restart the shell."
        .to_owned();
    let schema = json!({"type": "object", "properties": {
        "command": {"type": "string", "description": "The bash command to run."},
        "restart": {"type": "boolean"}}});
    (description, schema)
}

fn text_editor(_: &Map<String, Value>) -> (String, Value) {
    let description = "View, create and edit text files. Commands: view `path` (a file \
        with line numbers, optionally `view_range` [start, end], end -1 for the rest; or a \
        directory); create `path` with `file_text`; str_replace `old_str` (must match exactly \
        once) with `new_str` in `path`; insert `new_str` after line `insert_line` (0: the \
        start) of `path`."
        .to_owned();
    let schema = json!({"type": "object", "properties": {
        "command": {"type": "string", "enum": ["view", "create", "str_replace", "insert",
            "undo_edit"]},
        "path": {"type": "string", "description": "An absolute path."},
        "file_text": {"type": "string"},
        "old_str": {"type": "string"},
        "new_str": {"type": "string"},
        "insert_line": {"type": "integer", "minimum": 0},
        "view_range": {"type": "array", "items": {"type": "integer"}, "minItems": 2,
            "maxItems": 2}},
        "required": ["command", "path"]});
    (description, schema)
}

fn memory(_: &Map<String, Value>) -> (String, Value) {
    let description = "A memory directory (/memories) kept between conversations. \
        Commands: view `path` (optionally `view_range`); create `path` with `file_text`; \
        str_replace `old_str` with `new_str` in `path`; insert `insert_text` at \
        `insert_line` of `path`; delete `path`; rename `old_path` to `new_path`."
        .to_owned();
    let schema = json!({"type": "object", "properties": {
        "command": {"type": "string", "enum": ["view", "create", "str_replace", "insert",
            "delete", "rename"]},
        "path": {"type": "string"},
        "file_text": {"type": "string"},
        "old_str": {"type": "string"},
        "new_str": {"type": "string"},
        "insert_line": {"type": "integer", "minimum": 0},
        "insert_text": {"type": "string"},
        "view_range": {"type": "array", "items": {"type": "integer"}, "minItems": 2,
            "maxItems": 2},
        "old_path": {"type": "string"},
        "new_path": {"type": "string"}},
        "required": ["command"]});
    (description, schema)
}

// ---------------------------------------------------------------------------------------
// OpenAI's built-in client tools (Responses API)

/// OpenAI's computer-use tool type (`{"type": "computer_use_preview", "display_width",
/// "display_height", "environment"}`); its calls are `computer_call` items.
pub const OPENAI_COMPUTER: &str = "computer_use_preview";
/// OpenAI's local shell tool type (`{"type": "local_shell"}`); its calls are
/// `local_shell_call` items.
pub const OPENAI_LOCAL_SHELL: &str = "local_shell";

/// Whether `kind` is one of OpenAI's built-in client tools (known to OpenAI's own models,
/// declared without a schema).
pub fn is_openai(kind: &str) -> bool {
    kind == OPENAI_COMPUTER || kind == OPENAI_LOCAL_SHELL
}

/// The computer's action types, as `computer_call` items carry them.
pub const OPENAI_COMPUTER_ACTIONS: &[&str] = &[
    "click",
    "double_click",
    "drag",
    "keypress",
    "move",
    "screenshot",
    "scroll",
    "type",
    "wait",
];

/// The function form of OpenAI's built-in tool `kind` (its name is the type: the
/// declaration has none): the computer's `action` fields or the shell's `exec` fields as the
/// arguments, the display size and environment in the description. `None` for another type.
pub fn expand_openai(kind: &str, fields: &Map<String, Value>) -> Option<Expanded> {
    let (description, parameters) = match kind {
        OPENAI_COMPUTER => openai_computer(fields),
        OPENAI_LOCAL_SHELL => openai_local_shell(),
        _ => return None,
    };
    Some(Expanded {
        description,
        parameters,
        unknown_version: false,
    })
}

fn openai_computer(fields: &Map<String, Value>) -> (String, Value) {
    let w = int(fields, "display_width").unwrap_or(1024);
    let h = int(fields, "display_height").unwrap_or(768);
    let env = fields
        .get("environment")
        .and_then(Value::as_str)
        .unwrap_or("browser");
    let description = format!(
        "Control a computer ({env}) with mouse and keyboard and see it through screenshots. \
         The screen is {w}x{h} pixels; x and y count from the top left corner. `type` is the \
         action: screenshot; click at x, y with `button` (left, right, wheel, back, forward); \
         double_click at x, y; move to x, y; drag along `path` (a list of {{x, y}} points); \
         scroll at x, y by scroll_x, scroll_y pixels; type `text`; keypress `keys` (e.g. \
         [\"CTRL\", \"S\"]); wait. Each call is answered with a screenshot."
    );
    let int_in =
        |max: u64| json!({"type": "integer", "minimum": 0, "maximum": max.saturating_sub(1)});
    let schema = json!({"type": "object", "properties": {
        "type": {"type": "string", "enum": OPENAI_COMPUTER_ACTIONS},
        "x": int_in(w),
        "y": int_in(h),
        "button": {"type": "string", "enum": ["left", "right", "wheel", "back", "forward"]},
        "text": {"type": "string"},
        "keys": {"type": "array", "items": {"type": "string"}},
        "path": {"type": "array", "items": {"type": "object", "properties": {
            "x": {"type": "integer"}, "y": {"type": "integer"}}, "required": ["x", "y"]}},
        "scroll_x": {"type": "integer"},
        "scroll_y": {"type": "integer"}},
        "required": ["type"]});
    (description, schema)
}

fn openai_local_shell() -> (String, Value) {
    let description = "Run a command on the user's machine: `command` is the argument \
        vector (e.g. [\"bash\", \"-lc\", \"ls -la\"]), with optional `env`, \
        `working_directory`, `timeout_ms` and `user`. The answer is the command's output."
        .to_owned();
    let schema = json!({"type": "object", "properties": {
        "command": {"type": "array", "items": {"type": "string"}, "minItems": 1},
        "env": {"type": "object", "additionalProperties": {"type": "string"}},
        "working_directory": {"type": "string"},
        "timeout_ms": {"type": "integer", "minimum": 0},
        "user": {"type": "string"}},
        "required": ["command"]});
    (description, schema)
}

/// A call's `action`, from the arguments the model gave OpenAI's built-in tool `kind`: the
/// computer's arguments are its action; the shell's are an `exec` action (`env` always
/// present, as the API writes it).
pub fn openai_action(kind: &str, arguments: &Value) -> Value {
    let mut action = arguments.as_object().cloned().unwrap_or_default();
    if kind == OPENAI_LOCAL_SHELL {
        action.insert("type".into(), json!("exec"));
        action.entry("env").or_insert_with(|| json!({}));
    }
    Value::Object(action)
}

/// The arguments of a call to OpenAI's built-in tool `kind`, from its item's `action` (the
/// inverse of [`openai_action`]).
pub fn openai_arguments(kind: &str, action: &Value) -> Value {
    let mut args = action.as_object().cloned().unwrap_or_default();
    if kind == OPENAI_LOCAL_SHELL {
        args.remove("type");
    }
    Value::Object(args)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_type_expands_and_an_unknown_version_takes_the_nearest_schema() {
        let fields = json!({"display_width_px": 1280, "display_height_px": 800});
        let c = expand("computer_20250124", fields.as_object().unwrap()).unwrap();
        assert!(c.description.contains("1280x800"));
        assert!(!c.unknown_version);
        assert_eq!(
            c.parameters["properties"]["action"]["enum"][15],
            "screenshot"
        );
        let later = expand("computer_20990101", &Map::new()).unwrap();
        assert!(later.unknown_version);
        assert!(later.description.contains("1024x768"));
        for t in ["bash_20250124", "text_editor_20250728", "memory_20250818"] {
            let e = expand(t, &Map::new()).unwrap();
            assert!(!e.unknown_version, "{t}");
            assert_eq!(e.parameters["type"], "object");
        }
        assert!(expand("web_search_20250305", &Map::new()).is_none());
    }

    #[test]
    fn openai_built_ins_expand_and_their_actions_map_both_ways() {
        let fields = json!({"display_width": 1280, "display_height": 800, "environment": "linux"});
        let c = expand_openai(OPENAI_COMPUTER, fields.as_object().unwrap()).unwrap();
        assert!(c.description.contains("1280x800") && c.description.contains("linux"));
        assert_eq!(c.parameters["properties"]["x"]["maximum"], 1279);
        let shell = expand_openai(OPENAI_LOCAL_SHELL, &Map::new()).unwrap();
        assert_eq!(shell.parameters["required"], json!(["command"]));
        assert!(expand_openai("computer_20250124", &Map::new()).is_none());
        let args = json!({"command": ["ls"]});
        let action = openai_action(OPENAI_LOCAL_SHELL, &args);
        assert_eq!(
            action,
            json!({"command": ["ls"], "type": "exec", "env": {}})
        );
        assert_eq!(
            openai_arguments(OPENAI_LOCAL_SHELL, &action),
            json!({"command": ["ls"], "env": {}})
        );
        let click = json!({"type": "click", "x": 1, "y": 2, "button": "left"});
        assert_eq!(openai_action(OPENAI_COMPUTER, &click), click);
    }
}
