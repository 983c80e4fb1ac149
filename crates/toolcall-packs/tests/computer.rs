//! `computer_use` against a real Xvfb: an X client started here records the pointer and key
//! events it receives, and every action must produce exactly the expected events.
//!
//! Each test starts its own Xvfb on a free display. Without Xvfb the tests skip with a
//! printed reason, unless `TOOLCALL_REQUIRE_XVFB=1` (set by `.ci/run`), when they fail.
#![cfg(feature = "computer")]
// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::thread::{JoinHandle, sleep};
use std::time::{Duration, Instant};

use base64::Engine as _;
use serde_json::{Value, json};
use toolcall_core::{ErrorCode, Tool, ToolContext, ToolError, ToolOutput};
use toolcall_packs::computer::xvfb::Xvfb;
use toolcall_packs::{PackConfig, load_pack};
use x11rb::connection::Connection;
use x11rb::protocol::Event;
use x11rb::protocol::xproto::{
    AtomEnum, ConnectionExt as _, CreateWindowAux, EventMask, InputFocus, KeyButMask, PropMode,
    WindowClass,
};
use x11rb::rust_connection::RustConnection;
use x11rb::wrapper::ConnectionExt as _;

const SHIFT: u16 = 1;
const LOCK: u16 = 2;
const CONTROL: u16 = 4;

const CONTROL_L: u32 = 0xffe3;
const SHIFT_L: u32 = 0xffe1;
const CAPS_LOCK: u32 = 0xffe5;

/// What the recording client saw. Positions are window = root coordinates.
#[derive(Debug, Clone, PartialEq)]
enum Ev {
    Motion(i16, i16),
    Press(u8, i16, i16, u16),
    Release(u8, i16, i16),
    /// press?, base keysym (level 0), keysym for the modifier state, state bits.
    Key(bool, u32, u32, u16),
}

struct Keymap {
    min: u8,
    per: usize,
    syms: Vec<u32>,
}

impl Keymap {
    fn fetch(conn: &impl Connection) -> Keymap {
        let s = conn.setup();
        let (min, max) = (s.min_keycode, s.max_keycode);
        let r = conn
            .get_keyboard_mapping(min, max - min + 1)
            .unwrap()
            .reply()
            .unwrap();
        Keymap {
            min,
            per: r.keysyms_per_keycode as usize,
            syms: r.keysyms,
        }
    }
    fn sym(&self, kc: u8, level: usize) -> u32 {
        let base = (kc - self.min) as usize * self.per;
        self.syms.get(base + level).copied().unwrap_or(0)
    }
}

/// A full-screen window (plus coloured patches) that records its input events.
///
/// What an action produced is read up to a marker: a property change on the window, made
/// after the action returned (every action ends with a round trip to the X server, so its
/// events were generated before the marker's). Once the window saw the marker, every
/// event before it is recorded: no waiting for quiet, no timing.
struct Recorder {
    events: Arc<Mutex<Vec<Ev>>>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
    /// The test's own connection, which sets the marker.
    conn: RustConnection,
    win: u32,
    marker: u32,
    marks_sent: AtomicU32,
    marks_seen: Arc<AtomicU32>,
}

/// A hang guard, never a speed claim.
const HANG_GUARD: Duration = Duration::from_secs(30);
const MARKER: &[u8] = b"TOOLCALL_TEST_MARKER";

impl Recorder {
    fn start(display: &str, background: u32, patches: &[(i16, i16, u16, u16, u32)]) -> Recorder {
        let events = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let (ready_tx, ready_rx) = mpsc::channel();
        let display = display.to_owned();
        let patches = patches.to_vec();
        let marks_seen = Arc::new(AtomicU32::new(0));
        let (ev, st, seen) = (events.clone(), stop.clone(), marks_seen.clone());
        let (marker_conn, _) = x11rb::connect(Some(&display)).unwrap();
        let marker = marker_conn
            .intern_atom(false, MARKER)
            .unwrap()
            .reply()
            .unwrap()
            .atom;
        let thread = std::thread::spawn(move || {
            let (conn, n) = x11rb::connect(Some(&display)).unwrap();
            let screen = conn.setup().roots[n].clone();
            let win = conn.generate_id().unwrap();
            let mask = EventMask::BUTTON_PRESS
                | EventMask::BUTTON_RELEASE
                | EventMask::POINTER_MOTION
                | EventMask::KEY_PRESS
                | EventMask::KEY_RELEASE
                | EventMask::EXPOSURE
                | EventMask::PROPERTY_CHANGE;
            conn.create_window(
                x11rb::COPY_DEPTH_FROM_PARENT,
                win,
                screen.root,
                0,
                0,
                screen.width_in_pixels,
                screen.height_in_pixels,
                0,
                WindowClass::INPUT_OUTPUT,
                x11rb::COPY_FROM_PARENT,
                &CreateWindowAux::new()
                    .background_pixel(background)
                    .override_redirect(1)
                    .event_mask(mask),
            )
            .unwrap();
            for (x, y, w, h, colour) in patches {
                let child = conn.generate_id().unwrap();
                conn.create_window(
                    x11rb::COPY_DEPTH_FROM_PARENT,
                    child,
                    win,
                    x,
                    y,
                    w,
                    h,
                    0,
                    WindowClass::INPUT_OUTPUT,
                    x11rb::COPY_FROM_PARENT,
                    &CreateWindowAux::new().background_pixel(colour),
                )
                .unwrap();
            }
            conn.map_subwindows(win).unwrap();
            conn.map_window(win).unwrap();
            conn.flush().unwrap();
            loop {
                if let Event::Expose(e) = conn.wait_for_event().unwrap()
                    && e.window == win
                {
                    break;
                }
            }
            conn.set_input_focus(InputFocus::PARENT, win, x11rb::CURRENT_TIME)
                .unwrap();
            conn.get_input_focus().unwrap().reply().unwrap();
            let mut keymap = Keymap::fetch(&conn);
            ready_tx.send(win).unwrap();
            let bits = |s: KeyButMask| u16::from(s);
            while !st.load(Ordering::Relaxed) {
                let event = match conn.poll_for_event() {
                    Ok(Some(e)) => e,
                    Ok(None) => {
                        sleep(Duration::from_millis(2));
                        continue;
                    }
                    Err(_) => break,
                };
                let rec = match event {
                    Event::MotionNotify(e) => Some(Ev::Motion(e.event_x, e.event_y)),
                    Event::ButtonPress(e) => {
                        Some(Ev::Press(e.detail, e.event_x, e.event_y, bits(e.state)))
                    }
                    Event::ButtonRelease(e) => Some(Ev::Release(e.detail, e.event_x, e.event_y)),
                    Event::KeyPress(e) | Event::KeyRelease(e) => {
                        let press =
                            e.response_type & 0x7f == x11rb::protocol::xproto::KEY_PRESS_EVENT;
                        let state = bits(e.state);
                        let base = keymap.sym(e.detail, 0);
                        let shifted = keymap.sym(e.detail, 1);
                        let eff = if state & SHIFT != 0 && shifted != 0 {
                            shifted
                        } else {
                            base
                        };
                        Some(Ev::Key(press, base, eff, state))
                    }
                    Event::MappingNotify(_) => {
                        keymap = Keymap::fetch(&conn);
                        None
                    }
                    Event::PropertyNotify(e) if e.window == win && e.atom == marker => {
                        seen.fetch_add(1, Ordering::SeqCst);
                        None
                    }
                    _ => None,
                };
                if let Some(r) = rec {
                    ev.lock().unwrap().push(r);
                }
            }
        });
        let win = ready_rx
            .recv_timeout(HANG_GUARD)
            .expect("recording window did not come up");
        Recorder {
            events,
            stop,
            thread: Some(thread),
            conn: marker_conn,
            win,
            marker,
            marks_sent: AtomicU32::new(0),
            marks_seen,
        }
    }

    /// Returns and clears the events recorded so far: all that came before a marker set
    /// now (see [`Recorder`]).
    fn take(&self) -> Vec<Ev> {
        let n = self.marks_sent.fetch_add(1, Ordering::SeqCst) + 1;
        self.conn
            .change_property32(
                PropMode::REPLACE,
                self.win,
                self.marker,
                AtomEnum::CARDINAL,
                &[n],
            )
            .unwrap();
        self.conn.flush().unwrap();
        let deadline = Instant::now() + HANG_GUARD;
        while self.marks_seen.load(Ordering::SeqCst) < n {
            assert!(
                Instant::now() < deadline,
                "the recording window never saw the marker"
            );
            sleep(Duration::from_millis(2));
        }
        std::mem::take(&mut *self.events.lock().unwrap())
    }
}

impl Drop for Recorder {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Xvfb + recording window + the tool, dropped in that reverse order.
struct Rig {
    rec: Recorder,
    tool: Arc<dyn Tool>,
    xvfb: Xvfb,
}

const BACKGROUND: u32 = 0x3366cc;

fn rig_with(
    width: u32,
    height: u32,
    patches: &[(i16, i16, u16, u16, u32)],
    options: Value,
) -> Option<Rig> {
    let xvfb = common::start_xvfb(width, height)?;
    let rec = Recorder::start(xvfb.display(), BACKGROUND, patches);
    let mut opts = json!({
        "display": xvfb.display(),
        "screenshot_after_action": false,
        "keymap_settle_ms": 400,
    });
    for (k, v) in options.as_object().unwrap() {
        opts[k] = v.clone();
    }
    let tool = common::computer_tool(&opts);
    Some(Rig { rec, tool, xvfb })
}

fn rig() -> Option<Rig> {
    rig_with(1024, 768, &[], json!({}))
}

impl Rig {
    async fn call(&self, args: Value) -> Result<ToolOutput, ToolError> {
        self.tool.call(&ToolContext::default(), args).await
    }
    async fn ok(&self, args: Value) -> Value {
        match self.call(args.clone()).await {
            Ok(out) => out.data,
            Err(e) => panic!("{args} failed: {e}"),
        }
    }
    /// Runs an action and returns the button and key events it produced (motion apart).
    async fn events(&self, args: Value) -> (Vec<Ev>, Vec<Ev>) {
        self.rec.take();
        self.ok(args).await;
        let all = self.rec.take();
        all.into_iter().partition(|e| !matches!(e, Ev::Motion(..)))
    }
}

macro_rules! rig_or_skip {
    ($e:expr) => {
        match $e {
            Some(r) => r,
            None => return,
        }
    };
}

fn click(button: u8, x: i16, y: i16, n: usize) -> Vec<Ev> {
    let mut v = Vec::new();
    for _ in 0..n {
        v.push(Ev::Press(button, x, y, 0));
        v.push(Ev::Release(button, x, y));
    }
    v
}

fn decode_png(block: &Value) -> image::RgbImage {
    assert_eq!(block["type"], "image");
    assert_eq!(block["media_type"], "image/png");
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(block["data"].as_str().unwrap())
        .unwrap();
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n");
    image::load_from_memory_with_format(&bytes, image::ImageFormat::Png)
        .unwrap()
        .to_rgb8()
}

fn rgb(v: u32) -> [u8; 3] {
    [(v >> 16) as u8, (v >> 8) as u8, v as u8]
}

// covers P-CU
#[tokio::test]
async fn clicks_arrive_with_button_count_and_position() {
    let r = rig_or_skip!(rig());
    let cases = [
        ("left_click", 1, 1, [100, 200]),
        ("right_click", 3, 1, [1000, 700]),
        ("middle_click", 2, 1, [0, 0]),
        ("double_click", 1, 2, [512, 384]),
        ("triple_click", 1, 3, [1023, 767]),
    ];
    for (action, button, n, [x, y]) in cases {
        let (events, motion) = r
            .events(json!({"action": action, "coordinate": [x, y]}))
            .await;
        assert_eq!(events, click(button, x, y, n), "{action}");
        if let Some(last) = motion.last() {
            assert_eq!(last, &Ev::Motion(x, y), "{action}");
        }
    }
    // Without a coordinate the click lands where the pointer is.
    let (events, motion) = r.events(json!({"action": "left_click"})).await;
    assert_eq!(events, click(1, 1023, 767, 1));
    assert!(motion.is_empty());
}

// covers P-CU
#[tokio::test]
async fn shift_click_holds_the_modifier() {
    let r = rig_or_skip!(rig());
    let (events, _) = r
        .events(json!({"action": "left_click", "coordinate": [300, 300], "text": "shift"}))
        .await;
    assert_eq!(
        events,
        vec![
            Ev::Key(true, SHIFT_L, SHIFT_L, 0),
            Ev::Press(1, 300, 300, SHIFT),
            Ev::Release(1, 300, 300),
            Ev::Key(false, SHIFT_L, SHIFT_L, SHIFT),
        ]
    );
}

// covers P-CU
#[tokio::test]
async fn move_drag_down_up_and_cursor_position() {
    let r = rig_or_skip!(rig());
    let (events, motion) = r
        .events(json!({"action": "mouse_move", "coordinate": [10, 20]}))
        .await;
    assert!(events.is_empty());
    assert_eq!(motion, vec![Ev::Motion(10, 20)]);
    let pos = r.ok(json!({"action": "cursor_position"})).await;
    assert_eq!(pos["coordinate"], json!([10, 20]));

    r.rec.take();
    r.ok(json!({"action": "left_click_drag", "start_coordinate": [100, 200], "coordinate": [300, 400]}))
        .await;
    let all = r.rec.take();
    let press = all.iter().position(|e| matches!(e, Ev::Press(..))).unwrap();
    let release = all
        .iter()
        .position(|e| matches!(e, Ev::Release(..)))
        .unwrap();
    assert_eq!(all[press], Ev::Press(1, 100, 200, 0));
    assert_eq!(all[release], Ev::Release(1, 300, 400));
    assert_eq!(all[..press].last(), Some(&Ev::Motion(100, 200)));
    let during: Vec<&Ev> = all[press + 1..release].iter().collect();
    assert!(during.len() >= 2, "drag must move while pressed: {all:?}");
    assert!(during.iter().all(|e| matches!(e, Ev::Motion(..))));
    assert_eq!(during.last(), Some(&&Ev::Motion(300, 400)));
    assert_eq!(all.len(), release + 1);

    let (events, _) = r
        .events(json!({"action": "left_mouse_down", "coordinate": [50, 60]}))
        .await;
    assert_eq!(events, vec![Ev::Press(1, 50, 60, 0)]);
    let (events, _) = r
        .events(json!({"action": "left_mouse_up", "coordinate": [70, 80]}))
        .await;
    assert_eq!(events, vec![Ev::Release(1, 70, 80)]);
}

// covers P-CU
#[tokio::test]
async fn scroll_sends_wheel_buttons_per_100_pixels() {
    let r = rig_or_skip!(rig());
    let cases = [
        (
            json!({"action": "scroll", "coordinate": [500, 500], "delta_y": 300}),
            5,
            3,
        ),
        (json!({"action": "scroll", "delta_y": -100}), 4, 1),
        (json!({"action": "scroll", "delta_x": 200}), 7, 2),
        (json!({"action": "scroll", "delta_x": -40}), 6, 1),
        (
            json!({"action": "scroll", "scroll_direction": "up", "scroll_amount": 2}),
            4,
            2,
        ),
        (
            json!({"action": "scroll", "scroll_direction": "down", "scroll_amount": 4}),
            5,
            4,
        ),
        (
            json!({"action": "scroll", "scroll_direction": "left", "scroll_amount": 1}),
            6,
            1,
        ),
        (
            json!({"action": "scroll", "scroll_direction": "right", "scroll_amount": 3}),
            7,
            3,
        ),
    ];
    for (args, button, n) in cases {
        let (events, _) = r.events(args.clone()).await;
        assert_eq!(events, click(button, 500, 500, n), "{args}");
    }
}

fn key_presses(events: &[Ev]) -> Vec<(u32, u32, u16)> {
    events
        .iter()
        .filter_map(|e| match *e {
            Ev::Key(true, base, eff, state) => Some((base, eff, state)),
            _ => None,
        })
        .collect()
}

/// Every press has its release, in reverse order for a combination.
fn assert_balanced(events: &[Ev]) {
    let mut down: Vec<u32> = Vec::new();
    for e in events {
        match *e {
            Ev::Key(true, base, ..) => down.push(base),
            Ev::Key(false, base, ..) => assert_eq!(down.pop(), Some(base), "{events:?}"),
            _ => {}
        }
    }
    assert!(down.is_empty(), "keys left down: {events:?}");
}

// covers P-CU
#[tokio::test]
async fn key_names_and_combinations() {
    let r = rig_or_skip!(rig());
    let (events, _) = r
        .events(json!({"action": "key", "text": "ctrl+shift+t"}))
        .await;
    assert_eq!(
        events,
        vec![
            Ev::Key(true, CONTROL_L, CONTROL_L, 0),
            Ev::Key(true, SHIFT_L, SHIFT_L, CONTROL),
            Ev::Key(true, 't' as u32, 'T' as u32, CONTROL | SHIFT),
            Ev::Key(false, 't' as u32, 'T' as u32, CONTROL | SHIFT),
            Ev::Key(false, SHIFT_L, SHIFT_L, CONTROL | SHIFT),
            Ev::Key(false, CONTROL_L, CONTROL_L, CONTROL),
        ]
    );
    let single = [
        ("enter", 0xff0d),
        ("Return", 0xff0d),
        ("tab", 0xff09),
        ("escape", 0xff1b),
        ("backspace", 0xff08),
        ("delete", 0xffff),
        ("Page_Down", 0xff56),
        ("F5", 0xffc2),
        ("Up", 0xff52),
        ("super", 0xffeb),
    ];
    for (name, keysym) in single {
        let (events, _) = r.events(json!({"action": "key", "text": name})).await;
        assert_eq!(key_presses(&events), vec![(keysym, keysym, 0)], "{name}");
        assert_balanced(&events);
    }
    for (combo, letter) in [("ctrl+c", 'c'), ("ctrl+v", 'v')] {
        let (events, _) = r.events(json!({"action": "key", "text": combo})).await;
        assert_eq!(
            key_presses(&events),
            vec![
                (CONTROL_L, CONTROL_L, 0),
                (letter as u32, letter as u32, CONTROL)
            ],
            "{combo}"
        );
        assert_balanced(&events);
    }
    // A sequence, xdotool style.
    let (events, _) = r
        .events(json!({"action": "key", "text": "ctrl+a Delete"}))
        .await;
    assert_eq!(
        key_presses(&events),
        vec![
            (CONTROL_L, CONTROL_L, 0),
            ('a' as u32, 'a' as u32, CONTROL),
            (0xffff, 0xffff, 0)
        ]
    );
    assert_balanced(&events);

    // hold_key keeps the key down for the duration.
    r.rec.take();
    let t = Instant::now();
    r.ok(json!({"action": "hold_key", "text": "shift", "duration": 0.5}))
        .await;
    assert!(t.elapsed() >= Duration::from_millis(500));
    let events = r.rec.take();
    assert_eq!(key_presses(&events), vec![(SHIFT_L, SHIFT_L, 0)]);
    assert_balanced(&events);
}

/// The characters the typed key presses produce (Shift presses left out).
fn typed(events: &[Ev]) -> Vec<u32> {
    key_presses(events)
        .into_iter()
        .filter(|&(base, ..)| base != SHIFT_L)
        .map(|(_, eff, _)| eff)
        .collect()
}

// covers P-CU
#[tokio::test]
async fn type_ascii() {
    let r = rig_or_skip!(rig());
    let text = "Hello, World! 42 ~_~ a@b.c";
    let (events, _) = r.events(json!({"action": "type", "text": text})).await;
    assert_eq!(
        typed(&events),
        text.chars().map(|c| c as u32).collect::<Vec<_>>()
    );
    assert_balanced(&events);
    let (events, _) = r.events(json!({"action": "type", "text": "a\tb\n"})).await;
    assert_eq!(typed(&events), vec![0x61, 0xff09, 0x62, 0xff0d]);
}

// covers P-CU
#[tokio::test]
async fn type_is_not_inverted_by_caps_lock() {
    let r = rig_or_skip!(rig());
    let conn = x11rb::connect(Some(r.xvfb.display())).unwrap().0;
    let root = conn.setup().roots[0].root;
    let lock_on = || {
        let p = conn.query_pointer(root).unwrap().reply().unwrap();
        u16::from(p.mask) & LOCK != 0
    };
    r.events(json!({"action": "key", "text": "Caps_Lock"}))
        .await;
    assert!(lock_on());
    let (events, _) = r.events(json!({"action": "type", "text": "aB"})).await;
    let letters: Vec<(u32, u16)> = key_presses(&events)
        .into_iter()
        .filter(|&(base, ..)| base != SHIFT_L && base != CAPS_LOCK)
        .map(|(_, eff, state)| (eff, state & (SHIFT | LOCK)))
        .collect();
    // Lock is off while typing; Shift only for the capital.
    assert_eq!(letters, vec![('a' as u32, 0), ('B' as u32, SHIFT)]);
    assert!(lock_on(), "Caps Lock is restored");
}

// covers P-CU
#[tokio::test]
async fn type_unicode_through_remapped_keycodes() {
    let r = rig_or_skip!(rig());
    let conn = x11rb::connect(Some(r.xvfb.display())).unwrap().0;
    let before = Keymap::fetch(&conn).syms;
    let (events, _) = r
        .events(json!({"action": "type", "text": "zażółć ✓"}))
        .await;
    assert_eq!(
        typed(&events),
        vec![
            0x7a,        // z
            0x61,        // a
            0x0100_017c, // ż
            0xf3,        // ó (Latin-1 keysym oacute)
            0x0100_0142, // ł
            0x0100_0107, // ć
            0x20,        // space
            0x0100_2713, // ✓
        ]
    );
    assert_balanced(&events);
    // The spare keycodes are cleared again.
    assert_eq!(Keymap::fetch(&conn).syms, before);
}

// covers P-CU
#[tokio::test]
async fn screenshot_shows_known_colours() {
    let red = 0xff0000;
    let green = 0x00ff00;
    let r = rig_or_skip!(rig_with(
        1024,
        768,
        &[(100, 100, 200, 100, red), (600, 400, 100, 100, green)],
        json!({})
    ));
    let data = r.ok(json!({"action": "screenshot"})).await;
    assert_eq!(
        data.as_object().unwrap().keys().collect::<Vec<_>>(),
        ["type", "media_type", "data"]
    );
    let img = decode_png(&data);
    assert_eq!(img.dimensions(), (1024, 768));
    let px = |x, y| img.get_pixel(x, y).0;
    assert_eq!(px(0, 0), rgb(BACKGROUND));
    assert_eq!(px(50, 50), rgb(BACKGROUND));
    assert_eq!(px(100, 100), rgb(red));
    assert_eq!(px(299, 199), rgb(red));
    assert_eq!(px(300, 199), rgb(BACKGROUND));
    assert_eq!(px(650, 450), rgb(green));
    assert_eq!(px(1023, 767), rgb(BACKGROUND));
}

// covers P-CU
#[tokio::test]
async fn screenshot_after_action_comes_with_the_result() {
    let r = rig_or_skip!(rig_with(
        1024,
        768,
        &[],
        json!({"screenshot_after_action": true, "screenshot_delay_ms": 0})
    ));
    let data = r
        .ok(json!({"action": "left_click", "coordinate": [5, 5]}))
        .await;
    assert_eq!(data["action"], "left_click");
    let img = decode_png(&data["screenshot"]);
    assert_eq!(img.dimensions(), (1024, 768));
    assert_eq!(img.get_pixel(512, 384).0, rgb(BACKGROUND));
    // Reading the pointer changes nothing, so no screenshot.
    let data = r.ok(json!({"action": "cursor_position"})).await;
    assert!(data.get("screenshot").is_none());
}

// covers P-CU
#[tokio::test]
async fn real_1280x800_display_is_scaled_both_ways() {
    let red = 0xff0000;
    let green = 0x00ff00;
    let r = rig_or_skip!(rig_with(
        1280,
        800,
        &[(0, 0, 640, 400, red), (640, 400, 640, 400, green)],
        json!({})
    ));
    let (events, _) = r
        .events(json!({"action": "left_click", "coordinate": [512, 384]}))
        .await;
    assert_eq!(events, click(1, 640, 400, 1));
    let (events, _) = r
        .events(json!({"action": "double_click", "coordinate": [1023, 767]}))
        .await;
    assert_eq!(events, click(1, 1279, 799, 2));
    let (events, _) = r
        .events(json!({"action": "mouse_move", "coordinate": [256, 192]}))
        .await;
    assert!(events.is_empty());
    let pos = r.ok(json!({"action": "cursor_position"})).await;
    assert_eq!(pos["coordinate"], json!([256, 192]));

    let img = decode_png(&r.ok(json!({"action": "screenshot"})).await);
    assert_eq!(img.dimensions(), (1024, 768));
    let px = |x, y| img.get_pixel(x, y).0;
    assert_eq!(px(100, 100), rgb(red));
    assert_eq!(px(500, 370), rgb(red));
    assert_eq!(px(900, 700), rgb(green));
    assert_eq!(px(530, 400), rgb(green));
    assert_eq!(px(900, 100), rgb(BACKGROUND));
    assert_eq!(px(100, 700), rgb(BACKGROUND));
}

// covers P-CU, R-7, R-9
#[tokio::test]
async fn out_of_bounds_and_long_waits_are_refused_before_the_display() {
    let r = rig_or_skip!(rig());
    r.rec.take();
    let refused = [
        json!({"action": "left_click", "coordinate": [1024, 10]}),
        json!({"action": "mouse_move", "coordinate": [10, 768]}),
        json!({"action": "double_click", "coordinate": [-1, 10]}),
        json!({"action": "left_click_drag", "start_coordinate": [10, 10], "coordinate": [5000, 5000]}),
        json!({"action": "left_click_drag", "start_coordinate": [2000, 10], "coordinate": [5, 5]}),
        json!({"action": "scroll", "coordinate": [0, 9999], "delta_y": 100}),
        json!({"action": "wait", "duration": 2.5}),
        json!({"action": "wait", "duration": 3600}),
        json!({"action": "hold_key", "text": "a", "duration": 30}),
        json!({"action": "key", "text": "ctrl+nosuchkey"}),
        json!({"action": "type", "text": "bell\u{7}"}),
        json!({"action": "mouse_move"}),
        json!({"action": "teleport"}),
    ];
    let t = Instant::now();
    for args in refused {
        let err = r.call(args.clone()).await.unwrap_err();
        assert_eq!(err.code, ErrorCode::InvalidArguments, "{args}: {err}");
        assert!(!err.message.is_empty());
    }
    assert!(
        // The refused waits are 2.5 s, 30 s and an hour; 20 s catches the long ones
        // without depending on how loaded the machine is.
        t.elapsed() < Duration::from_secs(20),
        "refusals must not wait"
    );
    let err = r
        .call(json!({"action": "left_click", "coordinate": [1024, 10]}))
        .await
        .unwrap_err();
    assert!(err.message.contains("outside the 1024x768 screen"), "{err}");
    let err = r
        .call(json!({"action": "wait", "duration": 2.5}))
        .await
        .unwrap_err();
    assert!(err.message.contains("at most 2"), "{err}");
    assert_eq!(r.rec.take(), vec![], "a refused call touched the display");

    // A wait within the limit really waits, and the tool has a timeout for the executor.
    let t = Instant::now();
    r.ok(json!({"action": "wait", "duration": 0.3})).await;
    assert!(t.elapsed() >= Duration::from_millis(300));
    assert!(r.tool.spec().timeout.is_some());
}

// covers P-CU, R-7
#[tokio::test]
async fn unreachable_display_is_a_clear_error() {
    let mut n = 977;
    while std::path::Path::new(&format!("/tmp/.X11-unix/X{n}")).exists() {
        n += 1;
    }
    let config = PackConfig {
        base_dir: std::env::temp_dir(),
        options: json!({"display": format!(":{n}")})
            .as_object()
            .unwrap()
            .clone(),
    };
    let pack = load_pack("computer", &config).unwrap();
    let tool = pack
        .registry
        .get("computer_use")
        .unwrap()
        .handler
        .clone()
        .unwrap();
    let err = tool
        .call(&ToolContext::default(), json!({"action": "screenshot"}))
        .await
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::ToolFailed);
    assert!(
        err.message
            .contains(&format!("cannot connect to X display \":{n}\"")),
        "{err}"
    );
    // Still refused, not crashed, on the next call.
    assert!(
        tool.call(
            &ToolContext::default(),
            json!({"action": "left_click", "coordinate": [1, 1]})
        )
        .await
        .is_err()
    );
}
