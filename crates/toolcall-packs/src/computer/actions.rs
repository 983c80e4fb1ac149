//! The `computer_use` schema and the checked [`Action`] a call's arguments become.
//!
//! Everything a model can get wrong (unknown action, missing or out-of-screen coordinate,
//! over-long wait, unknown key name, untypeable character) is refused here, before the
//! display is touched.

use std::time::Duration;

use serde_json::{Map, Value, json};
use toolcall_core::{ErrorCode, ToolError};

use super::keys::{self, Keysym};

/// Longest wait (and `hold_key` duration) accepted, in seconds.
pub const MAX_WAIT_SECS: f64 = 2.0;
/// Pixels of `delta_x`/`delta_y` per wheel click (one X button 4/5/6/7 press). 100 px is
/// what browsers scroll per wheel notch, so `delta_y: 100` moves a page by about 100 px.
pub const SCROLL_PIXELS_PER_CLICK: i64 = 100;
/// Most wheel clicks one call may send in each direction.
pub const MAX_SCROLL_CLICKS: u32 = 50;
/// Longest text one `type` call may send, in characters.
pub const MAX_TYPE_CHARS: usize = 4096;

/// Every action, in the order the schema lists them.
pub const ACTIONS: &[&str] = &[
    "screenshot",
    "left_click",
    "double_click",
    "triple_click",
    "right_click",
    "middle_click",
    "mouse_move",
    "left_click_drag",
    "left_mouse_down",
    "left_mouse_up",
    "type",
    "key",
    "hold_key",
    "scroll",
    "wait",
    "cursor_position",
];

/// The JSON Schema of `computer_use`. Property order matters: positional call syntax
/// (`computer_use("left_click", 100, 200)`, F-PY-1) maps arguments onto it in this order.
pub fn schema(width: u32, height: u32) -> Value {
    let point = |what: &str| {
        json!({
            "type": "array",
            "items": {"type": "integer"},
            "minItems": 2,
            "maxItems": 2,
            "description": format!(
                "{what} as [x, y] in screen pixels, x 0..{} and y 0..{}",
                width.saturating_sub(1),
                height.saturating_sub(1)
            ),
        })
    };
    json!({
        "type": "object",
        "properties": {
            "action": {"type": "string", "enum": ACTIONS, "description": "What to do."},
            "coordinate": point("Target position (clicks, mouse_move, scroll, end of left_click_drag)"),
            "text": {
                "type": "string",
                "description": "type: the text to type. key/hold_key: xdotool key syntax such as \
                    \"Return\", \"ctrl+c\", \"ctrl+shift+t\", \"Page_Down\". Clicks and scroll: \
                    modifier keys to hold, e.g. \"shift\"."
            },
            "start_coordinate": point("Where left_click_drag starts"),
            "delta_x": {"type": "integer", "description": "scroll: pixels to scroll right (negative: left)."},
            "delta_y": {"type": "integer", "description": "scroll: pixels to scroll down (negative: up)."},
            "duration": {
                "type": "number",
                "description": format!("wait / hold_key: seconds, at most {MAX_WAIT_SECS}.")
            },
            "scroll_direction": {"type": "string", "enum": ["up", "down", "left", "right"]},
            "scroll_amount": {"type": "integer", "description": "scroll: number of wheel clicks."}
        },
        "required": ["action"]
    })
}

/// A position on the model's screen (the configured width × height).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Point {
    pub x: u32,
    pub y: u32,
}

/// A checked action, ready to run.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    Screenshot,
    CursorPosition,
    MouseMove(Point),
    /// `count` presses of `button` (1 left, 2 middle, 3 right), holding `modifiers`.
    Click {
        button: u8,
        count: u8,
        at: Option<Point>,
        modifiers: Vec<Keysym>,
    },
    LeftDown(Option<Point>),
    LeftUp(Option<Point>),
    Drag {
        from: Point,
        to: Point,
        modifiers: Vec<Keysym>,
    },
    Type(String),
    Key(Vec<Vec<Keysym>>),
    HoldKey(Vec<Keysym>, Duration),
    /// Wheel clicks per button (4 up, 5 down, 6 left, 7 right).
    Scroll {
        at: Option<Point>,
        clicks: Vec<(u8, u32)>,
        modifiers: Vec<Keysym>,
    },
    Wait(Duration),
}

impl Action {
    /// Whether the screen may look different afterwards (so a screenshot is worth taking).
    pub fn changes_screen(&self) -> bool {
        !matches!(self, Action::Screenshot | Action::CursorPosition)
    }
}

fn invalid(message: impl Into<String>) -> ToolError {
    ToolError::new(ErrorCode::InvalidArguments, message)
}

/// Turns validated arguments into an [`Action`], checking what the schema cannot: the
/// fields each action needs, coordinates inside the `width` × `height` screen, limits.
pub fn parse(args: &Value, width: u32, height: u32) -> Result<Action, ToolError> {
    let obj = args
        .as_object()
        .ok_or_else(|| invalid("arguments must be an object with an \"action\""))?;
    let action = obj.get("action").and_then(Value::as_str).ok_or_else(|| {
        invalid(format!(
            "\"action\" is required: one of {}",
            ACTIONS.join(", ")
        ))
    })?;
    let screen = Screen { width, height };
    let at = || screen.point(obj, "coordinate");
    match action {
        "screenshot" => Ok(Action::Screenshot),
        "cursor_position" => Ok(Action::CursorPosition),
        "mouse_move" => Ok(Action::MouseMove(require(at()?, action, "coordinate")?)),
        "left_click" | "right_click" | "middle_click" | "double_click" | "triple_click" => {
            let (button, count) = match action {
                "left_click" => (1, 1),
                "middle_click" => (2, 1),
                "right_click" => (3, 1),
                "double_click" => (1, 2),
                _ => (1, 3),
            };
            Ok(Action::Click {
                button,
                count,
                at: at()?,
                modifiers: modifiers(obj)?,
            })
        }
        "left_mouse_down" => Ok(Action::LeftDown(at()?)),
        "left_mouse_up" => Ok(Action::LeftUp(at()?)),
        "left_click_drag" => Ok(Action::Drag {
            from: require(
                screen.point(obj, "start_coordinate")?,
                action,
                "start_coordinate",
            )?,
            to: require(at()?, action, "coordinate")?,
            modifiers: modifiers(obj)?,
        }),
        "type" => {
            let text = require(text(obj), action, "text")?;
            let n = text.chars().count();
            if n > MAX_TYPE_CHARS {
                return Err(invalid(format!(
                    "text has {n} characters; type at most {MAX_TYPE_CHARS} per call"
                )));
            }
            if let Some(c) = text.chars().find(|&c| keys::char_keysym(c).is_none()) {
                return Err(invalid(format!(
                    "text contains control character U+{:04X}, which cannot be typed",
                    c as u32
                )));
            }
            Ok(Action::Type(text.to_owned()))
        }
        "key" => {
            let text = require(text(obj), action, "text")?;
            Ok(Action::Key(
                keys::parse_key_sequence(text).map_err(invalid)?,
            ))
        }
        "hold_key" => {
            let text = require(text(obj), action, "text")?;
            let combo = keys::parse_combo(text.trim()).map_err(invalid)?;
            let secs = require(duration(obj)?, action, "duration")?;
            Ok(Action::HoldKey(combo, secs))
        }
        "wait" => Ok(Action::Wait(require(duration(obj)?, action, "duration")?)),
        "scroll" => Ok(Action::Scroll {
            at: at()?,
            clicks: scroll_clicks(obj)?,
            modifiers: modifiers(obj)?,
        }),
        other => Err(invalid(format!(
            "unknown action {other:?}; actions: {}",
            ACTIONS.join(", ")
        ))),
    }
}

fn require<T>(v: Option<T>, action: &str, field: &str) -> Result<T, ToolError> {
    v.ok_or_else(|| invalid(format!("action {action:?} needs \"{field}\"")))
}

fn text(obj: &Map<String, Value>) -> Option<&str> {
    obj.get("text").and_then(Value::as_str)
}

/// Modifier keys named in `text` for clicks and scrolls (`"shift"`, `"ctrl+alt"`).
fn modifiers(obj: &Map<String, Value>) -> Result<Vec<Keysym>, ToolError> {
    match text(obj).map(str::trim) {
        None | Some("") => Ok(Vec::new()),
        Some(t) => keys::parse_combo(t).map_err(invalid),
    }
}

fn duration(obj: &Map<String, Value>) -> Result<Option<Duration>, ToolError> {
    let Some(v) = obj.get("duration") else {
        return Ok(None);
    };
    let secs = v
        .as_f64()
        .ok_or_else(|| invalid("\"duration\" must be a number of seconds"))?;
    if !secs.is_finite() || secs < 0.0 {
        return Err(invalid(format!(
            "\"duration\" must be between 0 and {MAX_WAIT_SECS} seconds, got {secs}"
        )));
    }
    if secs > MAX_WAIT_SECS {
        return Err(invalid(format!(
            "\"duration\" {secs} s is too long: at most {MAX_WAIT_SECS} seconds"
        )));
    }
    Ok(Some(Duration::from_secs_f64(secs)))
}

/// An integer, also when a model wrote it as a whole float (`512.0`).
fn as_whole(v: &Value) -> Option<i64> {
    v.as_i64().or_else(|| {
        v.as_f64()
            .filter(|f| f.fract() == 0.0 && f.abs() < 1e15)
            .map(|f| f as i64)
    })
}

fn int(obj: &Map<String, Value>, field: &str) -> Result<Option<i64>, ToolError> {
    match obj.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => as_whole(v)
            .map(Some)
            .ok_or_else(|| invalid(format!("\"{field}\" must be an integer"))),
    }
}

/// Wheel clicks from `delta_x`/`delta_y` (pixels) or `scroll_direction` +
/// `scroll_amount` (clicks).
fn scroll_clicks(obj: &Map<String, Value>) -> Result<Vec<(u8, u32)>, ToolError> {
    let mut clicks = Vec::new();
    let dx = int(obj, "delta_x")?;
    let dy = int(obj, "delta_y")?;
    let dir = obj.get("scroll_direction").and_then(Value::as_str);
    if dx.is_some() || dy.is_some() {
        for (delta, neg, pos) in [(dy, 4u8, 5u8), (dx, 6, 7)] {
            let Some(d) = delta else { continue };
            if d == 0 {
                continue;
            }
            let n = pixels_to_clicks(d);
            if n > MAX_SCROLL_CLICKS {
                return Err(invalid(format!(
                    "scrolling {d} px is {n} wheel clicks; at most {MAX_SCROLL_CLICKS} \
                     ({} px) per call",
                    i64::from(MAX_SCROLL_CLICKS) * SCROLL_PIXELS_PER_CLICK
                )));
            }
            clicks.push((if d < 0 { neg } else { pos }, n));
        }
        if dir.is_some() {
            return Err(invalid(
                "give either delta_x/delta_y or scroll_direction/scroll_amount, not both",
            ));
        }
    } else if let Some(dir) = dir {
        let button = match dir {
            "up" => 4,
            "down" => 5,
            "left" => 6,
            "right" => 7,
            other => {
                return Err(invalid(format!(
                    "scroll_direction {other:?} must be up, down, left or right"
                )));
            }
        };
        let amount = int(obj, "scroll_amount")?.unwrap_or(1);
        if amount < 0 || amount > i64::from(MAX_SCROLL_CLICKS) {
            return Err(invalid(format!(
                "scroll_amount must be 0..={MAX_SCROLL_CLICKS} wheel clicks, got {amount}"
            )));
        }
        if amount > 0 {
            clicks.push((button, amount as u32));
        }
    } else {
        return Err(invalid(
            "scroll needs delta_y/delta_x (pixels, positive is down/right) or \
             scroll_direction with scroll_amount",
        ));
    }
    Ok(clicks)
}

/// Whole wheel clicks for a pixel distance, rounded to nearest; any non-zero distance
/// scrolls at least one click.
fn pixels_to_clicks(d: i64) -> u32 {
    let a = d.unsigned_abs();
    let per = SCROLL_PIXELS_PER_CLICK.unsigned_abs();
    let n = (a + per / 2) / per;
    u32::try_from(n.max(1)).unwrap_or(u32::MAX)
}

struct Screen {
    width: u32,
    height: u32,
}

impl Screen {
    fn point(&self, obj: &Map<String, Value>, field: &str) -> Result<Option<Point>, ToolError> {
        let v = match obj.get(field) {
            None | Some(Value::Null) => return Ok(None),
            Some(v) => v,
        };
        let pair = v
            .as_array()
            .filter(|a| a.len() == 2)
            .ok_or_else(|| invalid(format!("\"{field}\" must be [x, y]")))?;
        let (Some(x), Some(y)) = (
            pair.first().and_then(as_whole),
            pair.get(1).and_then(as_whole),
        ) else {
            return Err(invalid(format!("\"{field}\" must be two integers [x, y]")));
        };
        let inside = |v: i64, max: u32| v >= 0 && v < i64::from(max);
        if !inside(x, self.width) || !inside(y, self.height) {
            return Err(invalid(format!(
                "\"{field}\" [{x}, {y}] is outside the {}x{} screen: x must be 0..{} and y 0..{}",
                self.width,
                self.height,
                self.width.saturating_sub(1),
                self.height.saturating_sub(1)
            )));
        }
        // Both fit: 0 <= v < u32 max.
        Ok(Some(Point {
            x: x as u32,
            y: y as u32,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(v: Value) -> Result<Action, ToolError> {
        parse(&v, 1024, 768)
    }

    // covers P-CU, F-PY-1
    #[test]
    fn schema_property_order_is_the_positional_order() {
        let s = schema(1024, 768);
        let names: Vec<&str> = s["properties"]
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(
            names,
            [
                "action",
                "coordinate",
                "text",
                "start_coordinate",
                "delta_x",
                "delta_y",
                "duration",
                "scroll_direction",
                "scroll_amount"
            ]
        );
        assert_eq!(s["required"], json!(["action"]));
    }

    // covers P-CU
    #[test]
    fn seed_actions_parse() {
        assert_eq!(
            p(json!({"action":"screenshot"})).unwrap(),
            Action::Screenshot
        );
        assert_eq!(
            p(json!({"action":"left_click","coordinate":[512,384]})).unwrap(),
            Action::Click {
                button: 1,
                count: 1,
                at: Some(Point { x: 512, y: 384 }),
                modifiers: vec![]
            }
        );
        assert_eq!(
            p(json!({"action":"scroll","delta_y":100})).unwrap(),
            Action::Scroll {
                at: None,
                clicks: vec![(5, 1)],
                modifiers: vec![]
            }
        );
        assert_eq!(
            p(json!({"action":"scroll","delta_y":-250,"delta_x":40})).unwrap(),
            Action::Scroll {
                at: None,
                clicks: vec![(4, 3), (7, 1)],
                modifiers: vec![]
            }
        );
        assert_eq!(
            p(json!({"action":"scroll","scroll_direction":"left","scroll_amount":3,"coordinate":[1,2],"text":"shift"})).unwrap(),
            Action::Scroll {
                at: Some(Point { x: 1, y: 2 }),
                clicks: vec![(6, 3)],
                modifiers: vec![keys::SHIFT_L]
            }
        );
        assert_eq!(
            p(json!({"action":"mouse_move","coordinate":[10.0,20.0]})).unwrap(),
            Action::MouseMove(Point { x: 10, y: 20 })
        );
        assert_eq!(
            p(json!({"action":"wait","duration":1})).unwrap(),
            Action::Wait(Duration::from_secs(1))
        );
        assert!(matches!(
            p(json!({"action":"left_click_drag","start_coordinate":[100,200],"coordinate":[300,400]})).unwrap(),
            Action::Drag { from: Point { x: 100, y: 200 }, to: Point { x: 300, y: 400 }, .. }
        ));
    }

    // covers P-CU, R-7
    #[test]
    fn bad_arguments_are_clear_errors() {
        let msg = |v| p(v).unwrap_err().message;
        assert!(
            msg(json!({"action":"left_click","coordinate":[1024,0]}))
                .contains("outside the 1024x768")
        );
        assert!(msg(json!({"action":"mouse_move","coordinate":[-1,5]})).contains("outside"));
        assert!(msg(json!({"action":"mouse_move"})).contains("needs \"coordinate\""));
        assert!(msg(json!({"action":"wait","duration":2.5})).contains("at most 2"));
        assert!(msg(json!({"action":"wait","duration":-1})).contains("between 0"));
        assert!(msg(json!({"action":"hold_key","text":"a","duration":3})).contains("at most 2"));
        assert!(msg(json!({"action":"type","text":"a\u{7}"})).contains("U+0007"));
        assert!(msg(json!({"action":"fly"})).contains("unknown action"));
        assert!(msg(json!({"action":"scroll"})).contains("delta_y"));
        assert!(msg(json!({"action":"scroll","delta_y":100000})).contains("at most"));
        assert!(msg(json!({"action":"key","text":"ctrl+bogus"})).contains("bogus"));
        assert!(msg(json!({"action":"left_click","coordinate":[1]})).contains("[x, y]"));
        assert!(msg(json!("screenshot")).contains("object"));
        assert!(msg(json!({"action":"mouse_move","coordinate":[1.5,2]})).contains("integers"));
        assert!(msg(json!({"action":7})).contains("required"));
        assert!(msg(json!({"action":"type","text":5})).contains("needs \"text\""));
        assert!(msg(json!({"action":"mouse_move","coordinate":"512,384"})).contains("[x, y]"));
        assert!(msg(json!({"action":"scroll","delta_y":"down"})).contains("integer"));
        assert!(msg(json!({"action":"wait","duration":"long"})).contains("number"));
        assert!(
            msg(json!({"action":"type","text":"x".repeat(MAX_TYPE_CHARS + 1)})).contains("at most")
        );
        assert!(msg(json!({"action":"mouse_move","coordinate":["1","2"]})).contains("integers"));
        assert_eq!(
            p(json!({"action":"wait","duration":9})).unwrap_err().code,
            ErrorCode::InvalidArguments
        );
    }
}
