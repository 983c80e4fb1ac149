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

/// A built-in tool type: the prefix of its versioned `type`, the versions known (oldest
/// first), what its input looks like in each.
pub struct BuiltIn {
    pub prefix: &'static str,
    pub versions: &'static [&'static str],
    /// The description and input schema of a known version (one of `versions`), given the
    /// declaration's other fields (display size, …).
    pub describe: fn(&str, &Map<String, Value>) -> (String, Value),
}

/// Every built-in tool type known.
pub static BUILT_INS: &[BuiltIn] = &[
    BuiltIn {
        prefix: "computer_",
        versions: &[COMPUTER_20241022, COMPUTER_20250124, COMPUTER_20251124],
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
            TEXT_EDITOR_20250728,
        ],
        describe: text_editor,
    },
    BuiltIn {
        prefix: "memory_",
        versions: &["memory_20250818"],
        describe: memory,
    },
];

const COMPUTER_20241022: &str = "computer_20241022";
const COMPUTER_20250124: &str = "computer_20250124";
const COMPUTER_20251124: &str = "computer_20251124";
const TEXT_EDITOR_20250728: &str = "text_editor_20250728";

/// An expanded declaration: the function's description and input schema, the known version
/// whose schema it is, and whether the declared version was unknown (the nearest known
/// version's schema was used).
pub struct Expanded {
    pub description: String,
    pub parameters: Value,
    pub schema_of: &'static str,
    pub unknown_version: bool,
}

/// The function form of a built-in tool of type `kind` declared with `fields` (its other
/// fields: `display_width_px`, …); `None` for a type that is no Anthropic built-in, or
/// whose version is no date (`computer_toolset_…` is another kind of tool).
///
/// A known version gets its own documented schema. An unknown one gets the nearest known
/// version's: the newest dated on or before it, else (older than any known) the oldest.
pub fn expand(kind: &str, fields: &Map<String, Value>) -> Option<Expanded> {
    let b = BUILT_INS.iter().find(|b| kind.starts_with(b.prefix))?;
    let date = &kind[b.prefix.len()..];
    if date.len() != 8 || !date.bytes().all(|c| c.is_ascii_digit()) {
        return None;
    }
    // Eight digits each: their order as text is their order as dates.
    let nearest = b
        .versions
        .iter()
        .rev()
        .find(|v| &v[b.prefix.len()..] <= date)
        .or(b.versions.first())
        .copied()?;
    let (description, parameters) = (b.describe)(nearest, fields);
    Some(Expanded {
        description,
        parameters,
        schema_of: nearest,
        unknown_version: nearest != kind,
    })
}

fn int(fields: &Map<String, Value>, key: &str) -> Option<u64> {
    fields.get(key).and_then(Value::as_u64)
}

/// The computer's actions in `computer_20241022`.
pub const COMPUTER_ACTIONS_20241022: &[&str] = &[
    "key",
    "type",
    "mouse_move",
    "left_click",
    "left_click_drag",
    "right_click",
    "middle_click",
    "double_click",
    "screenshot",
    "cursor_position",
];

/// The computer's actions from `computer_20250124` on (`computer_20251124` adds `zoom` when
/// declared with `enable_zoom: true`).
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

fn computer(version: &str, fields: &Map<String, Value>) -> (String, Value) {
    let w = int(fields, "display_width_px").unwrap_or(1024);
    let h = int(fields, "display_height_px").unwrap_or(768);
    let point = |what: &str| {
        json!({"type": "array", "items": {"type": "integer", "minimum": 0},
            "minItems": 2, "maxItems": 2, "description": what})
    };
    let screen = format!(
        "Use a mouse and keyboard to interact with a computer, and take screenshots. The \
         screen is {w}x{h} pixels; coordinates are [x, y] from the top left corner. Take a \
         screenshot first to see where things are."
    );
    let coordinate = point(&format!("[x, y]: 0 <= x < {w}, 0 <= y < {h}"));
    if version == COMPUTER_20241022 {
        let description = format!(
            "{screen} Actions: screenshot; left_click, right_click, middle_click, \
             double_click at the cursor; mouse_move to `coordinate`; left_click_drag from the \
             cursor to `coordinate`; type `text`; key presses the key or combination in \
             `text` (xdotool syntax, e.g. \"ctrl+s\"); cursor_position."
        );
        let schema = json!({"type": "object", "properties": {
            "action": {"type": "string", "enum": COMPUTER_ACTIONS_20241022},
            "coordinate": coordinate,
            "text": {"type": "string"}},
            "required": ["action"]});
        return (description, schema);
    }
    let zoom = version == COMPUTER_20251124 && fields.get("enable_zoom") == Some(&json!(true));
    let mut description = format!(
        "{screen} Actions: screenshot; left_click, right_click, middle_click, double_click, \
         triple_click, mouse_move at `coordinate` (`text` may hold modifier keys to hold \
         during a click); left_click_drag from `start_coordinate` to `coordinate`; \
         left_mouse_down, left_mouse_up; type `text`; key presses the key or combination in \
         `text` (xdotool syntax, e.g. \"ctrl+s\"); hold_key holds `text` for `duration` \
         seconds; scroll at `coordinate` in `scroll_direction` by `scroll_amount` wheel \
         clicks; wait `duration` seconds; cursor_position."
    );
    let mut actions = COMPUTER_ACTIONS.to_vec();
    let mut schema = json!({"type": "object", "properties": {
        "coordinate": coordinate,
        "start_coordinate": point("[x, y] where left_click_drag starts"),
        "text": {"type": "string"},
        "scroll_direction": {"type": "string", "enum": ["up", "down", "left", "right"]},
        "scroll_amount": {"type": "integer", "minimum": 0},
        "duration": {"type": "number", "minimum": 0}},
        "required": ["action"]});
    if zoom {
        actions.push("zoom");
        description.push_str(
            " zoom shows the `region` [x1, y1, x2, y2] (top left and bottom right corners) \
             at full resolution.",
        );
        schema["properties"]["region"] = json!({"type": "array",
            "items": {"type": "integer", "minimum": 0}, "minItems": 4, "maxItems": 4,
            "description": "[x1, y1, x2, y2]: the region zoom shows"});
    }
    schema["properties"]["action"] = json!({"type": "string", "enum": actions});
    (description, schema)
}

fn bash(_: &str, _: &Map<String, Value>) -> (String, Value) {
    let description = "Run a command in a persistent bash shell (state is kept between \
        calls). Set `restart` to true to restart the shell."
        .to_owned();
    let schema = json!({"type": "object", "properties": {
        "command": {"type": "string", "description": "The bash command to run."},
        "restart": {"type": "boolean"}}});
    (description, schema)
}

fn text_editor(version: &str, _: &Map<String, Value>) -> (String, Value) {
    // Claude 4's versions (`text_editor_20250429` on) have no undo_edit; the newest
    // inserts `insert_text` where the older ones insert `new_str`.
    let undo = matches!(version, "text_editor_20241022" | "text_editor_20250124");
    let inserted = if version == TEXT_EDITOR_20250728 {
        "insert_text"
    } else {
        "new_str"
    };
    let mut description = format!(
        "View, create and edit text files. Commands: view `path` (a file with line numbers, \
         optionally `view_range` [start, end], end -1 for the rest; or a directory); create \
         `path` with `file_text`; str_replace `old_str` (must match exactly once) with \
         `new_str` in `path`; insert `{inserted}` after line `insert_line` (0: the start) of \
         `path`"
    );
    let mut commands = vec!["view", "create", "str_replace", "insert"];
    if undo {
        commands.push("undo_edit");
        description.push_str("; undo_edit undoes the last edit of `path`");
    }
    description.push('.');
    let mut schema = json!({"type": "object", "properties": {
        "command": {"type": "string", "enum": commands},
        "path": {"type": "string", "description": "An absolute path."},
        "file_text": {"type": "string"},
        "old_str": {"type": "string"},
        "new_str": {"type": "string"},
        "insert_line": {"type": "integer", "minimum": 0},
        "view_range": {"type": "array", "items": {"type": "integer"}, "minItems": 2,
            "maxItems": 2}},
        "required": ["command", "path"]});
    if inserted == "insert_text" {
        schema["properties"]["insert_text"] = json!({"type": "string"});
    }
    (description, schema)
}

fn memory(_: &str, _: &Map<String, Value>) -> (String, Value) {
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
    let (schema_of, (description, parameters)) = match kind {
        OPENAI_COMPUTER => (OPENAI_COMPUTER, openai_computer(fields)),
        OPENAI_LOCAL_SHELL => (OPENAI_LOCAL_SHELL, openai_local_shell()),
        _ => return None,
    };
    Some(Expanded {
        description,
        parameters,
        schema_of,
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

    fn enum_of(e: &Expanded, key: &str) -> Vec<String> {
        e.parameters["properties"][key]["enum"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap().to_owned())
            .collect()
    }

    #[test]
    fn each_type_expands_and_an_unknown_version_takes_the_nearest_schema() {
        let fields = json!({"display_width_px": 1280, "display_height_px": 800});
        let c = expand("computer_20250124", fields.as_object().unwrap()).unwrap();
        assert!(c.description.contains("1280x800"));
        assert!(!c.unknown_version);
        assert_eq!(c.schema_of, "computer_20250124");
        assert_eq!(enum_of(&c, "action"), COMPUTER_ACTIONS);
        // Later than any known version: the newest known one's schema.
        let later = expand("computer_20990101", &Map::new()).unwrap();
        assert!(later.unknown_version);
        assert_eq!(later.schema_of, "computer_20251124");
        assert!(later.description.contains("1024x768"));
        for t in ["bash_20250124", "text_editor_20250728", "memory_20250818"] {
            let e = expand(t, &Map::new()).unwrap();
            assert!(!e.unknown_version, "{t}");
            assert_eq!(e.schema_of, t);
            assert_eq!(e.parameters["type"], "object");
        }
        assert!(expand("web_search_20250305", &Map::new()).is_none());
        // Another kind of tool under a known prefix, not a version of it.
        assert!(expand("computer_toolset_20260801", &Map::new()).is_none());
        assert!(expand("computer_", &Map::new()).is_none());
    }

    // Before: one schema per type whatever the version, so a Claude 4 text editor was
    // offered undo_edit (which it refuses), computer_20241022 scroll and hold_key (which its
    // clients do not run), and computer_20251124 never zoom.
    #[test]
    fn each_known_version_gets_its_own_documented_schema() {
        let none = Map::new();
        let old = expand("computer_20241022", &none).unwrap();
        assert_eq!(enum_of(&old, "action"), COMPUTER_ACTIONS_20241022);
        let props = old.parameters["properties"].as_object().unwrap();
        let mut keys: Vec<&str> = props.keys().map(String::as_str).collect();
        keys.sort_unstable();
        assert_eq!(keys, ["action", "coordinate", "text"]);
        assert!(!old.description.contains("scroll"));

        let zoom = json!({"display_width_px": 1280, "display_height_px": 800, "enable_zoom": true});
        let new = expand("computer_20251124", zoom.as_object().unwrap()).unwrap();
        assert_eq!(enum_of(&new, "action").last().unwrap(), "zoom");
        assert_eq!(new.parameters["properties"]["region"]["maxItems"], 4);
        // Zoom only where the declaration turns it on.
        let plain = expand("computer_20251124", &none).unwrap();
        assert!(!enum_of(&plain, "action").contains(&"zoom".to_owned()));
        assert!(plain.parameters["properties"].get("region").is_none());

        for (version, undo) in [
            ("text_editor_20241022", true),
            ("text_editor_20250124", true),
            ("text_editor_20250429", false),
            ("text_editor_20250728", false),
        ] {
            let e = expand(version, &none).unwrap();
            assert_eq!(
                enum_of(&e, "command").contains(&"undo_edit".to_owned()),
                undo,
                "{version}"
            );
            assert_eq!(e.description.contains("undo_edit"), undo, "{version}");
        }
        let newest = expand("text_editor_20250728", &none).unwrap();
        assert_eq!(
            newest.parameters["properties"]["insert_text"]["type"],
            "string"
        );
        assert!(
            expand("text_editor_20250429", &none).unwrap().parameters["properties"]
                .get("insert_text")
                .is_none()
        );
    }

    #[test]
    fn an_unknown_version_takes_the_known_version_dated_nearest_before_it() {
        let none = Map::new();
        for (declared, nearest) in [
            ("text_editor_20241201", "text_editor_20241022"),
            ("text_editor_20250601", "text_editor_20250429"),
            ("text_editor_20260101", "text_editor_20250728"),
            // Older than any known version: the oldest.
            ("text_editor_20240101", "text_editor_20241022"),
            ("computer_20250601", "computer_20250124"),
            ("bash_20991231", "bash_20250124"),
            ("memory_20260101", "memory_20250818"),
        ] {
            let e = expand(declared, &none).unwrap();
            assert!(e.unknown_version, "{declared}");
            assert_eq!(e.schema_of, nearest, "{declared}");
            assert_eq!(
                e.parameters,
                expand(nearest, &none).unwrap().parameters,
                "{declared}"
            );
        }
        // Between 20250124 and 20250429: undo_edit, as the version before it had.
        let e = expand("text_editor_20250301", &none).unwrap();
        assert!(enum_of(&e, "command").contains(&"undo_edit".to_owned()));
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
