//! The `computer` pack (P-CU): one tool, `computer_use`, that drives a real X11
//! display (Xvfb headless, or any X server) through XTEST and reads it back with GetImage.
//!
//! | module | owns |
//! |---|---|
//! | [`actions`] | the schema (property order = positional order for F-PY-1) and checking arguments into an [`actions::Action`] before the display is touched |
//! | `keys` | key names and characters → X keysyms |
//! | `display` | the x11rb connection: pointer, keys, keymap remapping, screen capture |
//! | `screenshot` | scaling between the model's screen and the real one, PNG, base64 |
//! | `xvfb` | a private Xvfb for tests (feature `test-support`) |
//!
//! Pack options: `width`, `height` (the screen the model sees, default 1024×768),
//! `display` (default: `DISPLAY`), `screenshot_after_action` (default true),
//! `screenshot_delay_ms` (pause before that screenshot so apps can repaint, default 200),
//! `keymap_settle_ms` (how long a spare keycode keeps a remapped character after typing it,
//! default 100).
//!
//! The model's coordinates are checked against its screen, then scaled to the real one;
//! screenshots are scaled back to the model's size. No model text reaches a shell or a
//! subprocess: keys and text become keysyms and XTEST events.

pub mod actions;
mod display;
mod keys;
mod screenshot;
#[cfg(feature = "test-support")]
pub mod xvfb;

use std::sync::{Arc, Mutex};
use std::thread::sleep;
use std::time::Duration;

use async_trait::async_trait;
use serde_json::{Map, Value, json};
use toolcall_core::{Registry, Tool, ToolContext, ToolError, ToolOutput, ToolSpec};

use crate::{Pack, PackConfig, PackError};
use actions::{Action, Point};
use display::{Display, DisplayError};
use screenshot::scale_axis;

/// The tool's name.
pub const TOOL_NAME: &str = "computer_use";

/// How the tool sees and reaches the screen.
#[derive(Debug, Clone, PartialEq)]
pub struct ComputerOptions {
    /// The screen size the model sees and its coordinates refer to.
    pub width: u32,
    pub height: u32,
    /// X display name (`:1`); `None` reads `DISPLAY` at the first call.
    pub display: Option<String>,
    pub screenshot_after_action: bool,
    pub screenshot_delay: Duration,
    pub keymap_settle: Duration,
}

impl Default for ComputerOptions {
    fn default() -> Self {
        ComputerOptions {
            width: 1024,
            height: 768,
            display: None,
            screenshot_after_action: true,
            screenshot_delay: Duration::from_millis(200),
            keymap_settle: Duration::from_millis(100),
        }
    }
}

const OPTION_NAMES: &[&str] = &[
    "width",
    "height",
    "display",
    "screenshot_after_action",
    "screenshot_delay_ms",
    "keymap_settle_ms",
];

impl ComputerOptions {
    /// Reads pack options, refusing unknown names and out-of-range values.
    pub fn from_options(options: &Map<String, Value>) -> Result<Self, PackError> {
        let bad = |message: String| PackError::Config {
            pack: "computer".into(),
            message,
        };
        let mut o = ComputerOptions::default();
        for (key, value) in options {
            let int = |lo: u64, hi: u64| {
                value
                    .as_u64()
                    .filter(|v| (lo..=hi).contains(v))
                    .ok_or_else(|| bad(format!("option {key:?} must be an integer {lo}..={hi}")))
            };
            match key.as_str() {
                "width" => o.width = int(16, 16384)? as u32,
                "height" => o.height = int(16, 16384)? as u32,
                "display" => {
                    let d = value
                        .as_str()
                        .filter(|s| !s.is_empty() && s.len() <= 256)
                        .ok_or_else(|| {
                            bad("option \"display\" must be a name like \":1\"".into())
                        })?;
                    o.display = Some(d.to_owned());
                }
                "screenshot_after_action" => {
                    o.screenshot_after_action = value.as_bool().ok_or_else(|| {
                        bad("option \"screenshot_after_action\" must be true or false".into())
                    })?;
                }
                "screenshot_delay_ms" => o.screenshot_delay = Duration::from_millis(int(0, 5000)?),
                "keymap_settle_ms" => o.keymap_settle = Duration::from_millis(int(0, 2000)?),
                other => {
                    return Err(bad(format!(
                        "unknown option {other:?}; options: {}",
                        OPTION_NAMES.join(", ")
                    )));
                }
            }
        }
        Ok(o)
    }
}

/// Loads the pack: the registry holds `computer_use`. The display is connected at the first
/// call, so listing tools works without one.
pub fn pack(config: &PackConfig) -> Result<Pack, PackError> {
    let opts = ComputerOptions::from_options(&config.options)?;
    let mut registry = Registry::new();
    registry.add_tool(Arc::new(ComputerUse::new(opts)))?;
    Ok(Pack {
        name: "computer",
        registry,
        state: None,
        on_end: None,
        round_output: None,
    })
}

/// The `computer_use` tool. The X connection is opened on first use and kept; after an X
/// failure it is dropped and the next call reconnects.
pub struct ComputerUse {
    opts: Arc<ComputerOptions>,
    conn: Arc<Mutex<Option<Display>>>,
}

impl ComputerUse {
    pub fn new(opts: ComputerOptions) -> Self {
        ComputerUse {
            opts: Arc::new(opts),
            conn: Arc::new(Mutex::new(None)),
        }
    }

    pub fn options(&self) -> &ComputerOptions {
        &self.opts
    }
}

/// The spec offered to models, for a `width` × `height` screen.
pub fn spec(width: u32, height: u32) -> ToolSpec {
    ToolSpec::new(
        TOOL_NAME,
        format!(
            "Use the mouse and keyboard and take screenshots of a {width}x{height} screen. \
             Coordinates are [x, y] pixels from the top-left corner (x 0..{}, y 0..{}). \
             Take a screenshot first to see the screen. scroll: positive delta_y is down, {} px \
             per wheel click. wait and hold_key: at most {} seconds.",
            width.saturating_sub(1),
            height.saturating_sub(1),
            actions::SCROLL_PIXELS_PER_CLICK,
            actions::MAX_WAIT_SECS
        ),
        actions::schema(width, height),
    )
    // Longest honest call: a 4096-character `type` with several keymap remaps.
    .with_timeout(Duration::from_secs(60))
    // Clicks and keys act on whatever is on the screen.
    .with_annotations(toolcall_core::ToolAnnotations {
        read_only: Some(false),
        destructive: Some(true),
        idempotent: Some(false),
    })
}

#[async_trait]
impl Tool for ComputerUse {
    fn spec(&self) -> ToolSpec {
        spec(self.opts.width, self.opts.height)
    }

    async fn call(&self, _ctx: &ToolContext, arguments: Value) -> Result<ToolOutput, ToolError> {
        // Refuse bad arguments here, before any X traffic.
        let action = actions::parse(&arguments, self.opts.width, self.opts.height)?;
        let opts = self.opts.clone();
        let conn = self.conn.clone();
        tokio::task::spawn_blocking(move || run(&opts, &conn, &action))
            .await
            .map_err(|e| ToolError::failed(format!("computer_use worker stopped: {e}")))?
            .map(ToolOutput::from)
    }
}

fn display_name(opts: &ComputerOptions) -> Result<String, ToolError> {
    if let Some(d) = &opts.display {
        return Ok(d.clone());
    }
    match std::env::var("DISPLAY") {
        Ok(d) if !d.is_empty() => Ok(d),
        _ => Err(ToolError::failed(
            "no X display configured: set the computer pack option \"display\" (e.g. \":1\") \
             or the DISPLAY environment variable",
        )),
    }
}

fn run(
    opts: &ComputerOptions,
    slot: &Mutex<Option<Display>>,
    action: &Action,
) -> Result<Value, ToolError> {
    // A poisoned lock only means an earlier call panicked; the connection is still usable
    // or gets replaced below.
    let mut guard = slot.lock().unwrap_or_else(|p| p.into_inner());
    if guard.is_none() {
        let name = display_name(opts)?;
        *guard = Some(Display::connect(&name).map_err(|e| ToolError::failed(e.to_string()))?);
    }
    let Some(display) = guard.as_ref() else {
        return Err(ToolError::failed("no X connection"));
    };
    match execute(opts, display, action) {
        Ok(v) => Ok(v),
        Err(e) => {
            if matches!(e, DisplayError::X(_)) {
                *guard = None;
            }
            Err(ToolError::failed(format!("{}: {e}", action_name(action))))
        }
    }
}

fn action_name(action: &Action) -> &'static str {
    match action {
        Action::Screenshot => "screenshot",
        Action::CursorPosition => "cursor_position",
        Action::MouseMove(_) => "mouse_move",
        Action::Click {
            button: 2,
            count: 1,
            ..
        } => "middle_click",
        Action::Click {
            button: 3,
            count: 1,
            ..
        } => "right_click",
        Action::Click { count: 2, .. } => "double_click",
        Action::Click { count: 3, .. } => "triple_click",
        Action::Click { .. } => "left_click",
        Action::LeftDown(_) => "left_mouse_down",
        Action::LeftUp(_) => "left_mouse_up",
        Action::Drag { .. } => "left_click_drag",
        Action::Type(_) => "type",
        Action::Key(_) => "key",
        Action::HoldKey(..) => "hold_key",
        Action::Scroll { .. } => "scroll",
        Action::Wait(_) => "wait",
    }
}

/// Steps of pointer motion between the ends of a drag, so applications see a drag.
const DRAG_STEPS: u32 = 10;

fn execute(opts: &ComputerOptions, d: &Display, action: &Action) -> Result<Value, DisplayError> {
    let (rw, rh) = d.size()?;
    let real = |p: Point| {
        (
            scale_axis(p.x, opts.width, rw),
            scale_axis(p.y, opts.height, rh),
        )
    };
    let move_to = |p: Point| {
        let (x, y) = real(p);
        d.move_to(x, y)
    };
    let settle = opts.keymap_settle;
    let name = action_name(action);
    let mut summary = json!({"action": name});
    match action {
        Action::Screenshot => return capture(opts, d),
        Action::CursorPosition => {
            let (x, y) = d.pointer()?;
            let m = [
                scale_axis(x, rw, opts.width),
                scale_axis(y, rh, opts.height),
            ];
            summary["coordinate"] = json!(m);
            summary["text"] = json!(format!("The cursor is at [{}, {}]", m[0], m[1]));
            return Ok(summary);
        }
        Action::MouseMove(p) => {
            move_to(*p)?;
            d.sync()?;
        }
        Action::Click {
            button,
            count,
            at,
            modifiers,
        } => {
            if let Some(p) = at {
                move_to(*p)?;
            }
            d.with_keys_held(modifiers, settle, |d| {
                for _ in 0..*count {
                    d.button(*button, true)?;
                    d.button(*button, false)?;
                }
                d.sync()
            })?;
        }
        Action::LeftDown(at) | Action::LeftUp(at) => {
            if let Some(p) = at {
                move_to(*p)?;
            }
            d.button(1, matches!(action, Action::LeftDown(_)))?;
            d.sync()?;
        }
        Action::Drag {
            from,
            to,
            modifiers,
        } => {
            let (x0, y0) = real(*from);
            let (x1, y1) = real(*to);
            d.move_to(x0, y0)?;
            d.with_keys_held(modifiers, settle, |d| {
                d.button(1, true)?;
                for i in 1..=DRAG_STEPS {
                    let lerp = |a: u32, b: u32| {
                        let (a, b) = (i64::from(a), i64::from(b));
                        let v = a + (b - a) * i64::from(i) / i64::from(DRAG_STEPS);
                        u32::try_from(v).unwrap_or(0)
                    };
                    d.move_to(lerp(x0, x1), lerp(y0, y1))?;
                }
                d.button(1, false)?;
                d.sync()
            })?;
        }
        Action::Type(text) => {
            // A Windows line break is one Return, not two.
            let text = text.replace("\r\n", "\n");
            let syms: Vec<_> = text.chars().filter_map(keys::char_keysym).collect();
            d.type_keysyms(&syms, settle)?;
        }
        Action::Key(sequence) => {
            for combo in sequence {
                d.with_keys_held(combo, settle, |_| Ok(()))?;
            }
        }
        Action::HoldKey(combo, duration) => {
            d.with_keys_held(combo, settle, |_| {
                sleep(*duration);
                Ok(())
            })?;
        }
        Action::Scroll {
            at,
            clicks,
            modifiers,
        } => {
            if let Some(p) = at {
                move_to(*p)?;
            }
            d.with_keys_held(modifiers, settle, |d| {
                for &(button, n) in clicks {
                    for _ in 0..n {
                        d.button(button, true)?;
                        d.button(button, false)?;
                    }
                }
                d.sync()
            })?;
        }
        Action::Wait(duration) => sleep(*duration),
    }
    if opts.screenshot_after_action && action.changes_screen() {
        sleep(opts.screenshot_delay);
        summary["screenshot"] = capture(opts, d)?;
    }
    Ok(summary)
}

fn capture(opts: &ComputerOptions, d: &Display) -> Result<Value, DisplayError> {
    let rgb = d.capture()?;
    let scaled = screenshot::scale(rgb, opts.width, opts.height).map_err(DisplayError::X)?;
    let png = screenshot::encode_png(&scaled).map_err(DisplayError::X)?;
    Ok(screenshot::image_block(&png))
}

#[cfg(test)]
mod tests {
    use super::*;

    // covers P-CU
    #[test]
    fn options_are_read_and_checked() {
        let o = ComputerOptions::from_options(
            json!({"width":1280,"height":800,"display":":7","screenshot_after_action":false})
                .as_object()
                .unwrap(),
        )
        .unwrap();
        assert_eq!((o.width, o.height), (1280, 800));
        assert_eq!(o.display.as_deref(), Some(":7"));
        assert!(!o.screenshot_after_action);
        for bad in [
            json!({"width":0}),
            json!({"height":"big"}),
            json!({"display":""}),
            json!({"colour":true}),
        ] {
            assert!(ComputerOptions::from_options(bad.as_object().unwrap()).is_err());
        }
    }

    // covers P-CU, V-1
    #[test]
    fn pack_registers_computer_use() {
        let pack = pack(&PackConfig::default()).unwrap();
        let spec = pack.registry.spec(TOOL_NAME).unwrap();
        assert!(spec.description.contains("1024x768"));
        assert!(pack.registry.get(TOOL_NAME).unwrap().handler.is_some());
    }
}
