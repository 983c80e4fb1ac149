//! One X11 connection: XTEST pointer and key input, the keyboard mapping (keysym → keycode,
//! spare keycodes remapped for characters the keymap lacks), and GetImage screenshots.
//!
//! All calls block; the tool runs them on a blocking thread. Coordinates here are real
//! screen pixels: scaling from the model's screen happens in the caller.

use std::thread::sleep;
use std::time::Duration;

use x11rb::connection::{Connection, RequestConnection};
use x11rb::image::{Image, ImageOrder, PixelLayout};
use x11rb::protocol::xproto::{self, ConnectionExt as _, KeyButMask, Window};
use x11rb::protocol::xtest::ConnectionExt as _;
use x11rb::rust_connection::RustConnection;

use super::keys::{self, Keysym};

#[derive(Debug, thiserror::Error)]
pub enum DisplayError {
    #[error(
        "cannot connect to X display {display:?}: {reason}. Is an X server (e.g. `Xvfb {display}`) running there?"
    )]
    Connect { display: String, reason: String },
    #[error("X display {0:?} lacks the XTEST extension, which input needs")]
    NoXtest(String),
    #[error("X request failed: {0}")]
    X(String),
    #[error("{0}")]
    Keyboard(String),
}

fn x<E: std::fmt::Display>(e: E) -> DisplayError {
    DisplayError::X(e.to_string())
}

/// An RGB image, 3 bytes per pixel, rows top to bottom.
#[derive(Debug, Clone, PartialEq)]
pub struct Rgb {
    pub width: u32,
    pub height: u32,
    pub data: Vec<u8>,
}

/// A connection to one X display, on its default screen.
pub struct Display {
    conn: RustConnection,
    root: Window,
    name: String,
}

impl std::fmt::Debug for Display {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Display").field("name", &self.name).finish()
    }
}

impl Display {
    /// Connects and checks that XTEST is available.
    pub fn connect(name: &str) -> Result<Self, DisplayError> {
        let (conn, screen) = x11rb::connect(Some(name)).map_err(|e| DisplayError::Connect {
            display: name.to_owned(),
            reason: e.to_string(),
        })?;
        let root = conn
            .setup()
            .roots
            .get(screen)
            .map(|s| s.root)
            .ok_or_else(|| DisplayError::X(format!("display {name:?} has no screen {screen}")))?;
        let has_xtest = conn
            .extension_information(x11rb::protocol::xtest::X11_EXTENSION_NAME)
            .map_err(x)?
            .is_some();
        if !has_xtest {
            return Err(DisplayError::NoXtest(name.to_owned()));
        }
        conn.xtest_get_version(2, 2)
            .map_err(x)?
            .reply()
            .map_err(x)?;
        Ok(Display {
            conn,
            root,
            name: name.to_owned(),
        })
    }

    /// The real screen size in pixels.
    pub fn size(&self) -> Result<(u32, u32), DisplayError> {
        let g = self
            .conn
            .get_geometry(self.root)
            .map_err(x)?
            .reply()
            .map_err(x)?;
        Ok((u32::from(g.width), u32::from(g.height)))
    }

    /// Waits until the server has processed everything sent so far.
    pub fn sync(&self) -> Result<(), DisplayError> {
        self.conn.get_input_focus().map_err(x)?.reply().map_err(x)?;
        Ok(())
    }

    pub fn move_to(&self, x_: u32, y: u32) -> Result<(), DisplayError> {
        let cx = i16::try_from(x_).unwrap_or(i16::MAX);
        let cy = i16::try_from(y).unwrap_or(i16::MAX);
        self.conn
            .xtest_fake_input(xproto::MOTION_NOTIFY_EVENT, 0, 0, self.root, cx, cy, 0)
            .map_err(x)?;
        Ok(())
    }

    pub fn button(&self, button: u8, press: bool) -> Result<(), DisplayError> {
        self.press_or_release(
            (xproto::BUTTON_PRESS_EVENT, xproto::BUTTON_RELEASE_EVENT),
            button,
            press,
        )
    }

    pub fn key(&self, keycode: u8, press: bool) -> Result<(), DisplayError> {
        self.press_or_release(
            (xproto::KEY_PRESS_EVENT, xproto::KEY_RELEASE_EVENT),
            keycode,
            press,
        )
    }

    /// Fakes the press (first event type) or release (second) of a button or key.
    fn press_or_release(
        &self,
        (press_kind, release_kind): (u8, u8),
        detail: u8,
        press: bool,
    ) -> Result<(), DisplayError> {
        let kind = if press { press_kind } else { release_kind };
        self.conn
            .xtest_fake_input(kind, detail, 0, x11rb::NONE, 0, 0, 0)
            .map_err(x)?;
        Ok(())
    }

    fn query_pointer(&self) -> Result<xproto::QueryPointerReply, DisplayError> {
        self.conn
            .query_pointer(self.root)
            .map_err(x)?
            .reply()
            .map_err(x)
    }

    /// The pointer position in real pixels.
    pub fn pointer(&self) -> Result<(u32, u32), DisplayError> {
        let p = self.query_pointer()?;
        Ok((
            u32::try_from(p.root_x).unwrap_or(0),
            u32::try_from(p.root_y).unwrap_or(0),
        ))
    }

    /// The current core keyboard mapping.
    pub fn keymap(&self) -> Result<Keymap, DisplayError> {
        let setup = self.conn.setup();
        let (min, max) = (setup.min_keycode, setup.max_keycode);
        let count = max.saturating_sub(min).saturating_add(1);
        let reply = self
            .conn
            .get_keyboard_mapping(min, count)
            .map_err(x)?
            .reply()
            .map_err(x)?;
        Ok(Keymap {
            min,
            per: usize::from(reply.keysyms_per_keycode),
            syms: reply.keysyms,
        })
    }

    /// Maps `keycode` to `keysym` on both shift levels (`0` = NoSymbol clears it).
    pub fn set_keycode(&self, keycode: u8, keysym: Keysym) -> Result<(), DisplayError> {
        self.conn
            .change_keyboard_mapping(1, keycode, 2, &[keysym, keysym])
            .map_err(x)?;
        Ok(())
    }

    /// The whole screen as RGB.
    pub fn capture(&self) -> Result<Rgb, DisplayError> {
        let (w, h) = self.size()?;
        let (w16, h16) = (u16::try_from(w).map_err(x)?, u16::try_from(h).map_err(x)?);
        let (image, visual_id) = Image::get(&self.conn, self.root, 0, 0, w16, h16).map_err(x)?;
        let visual = self
            .conn
            .setup()
            .roots
            .iter()
            .flat_map(|s| &s.allowed_depths)
            .flat_map(|d| &d.visuals)
            .find(|v| v.visual_id == visual_id)
            .copied()
            .ok_or_else(|| DisplayError::X(format!("unknown visual {visual_id:#x}")))?;
        let layout = PixelLayout::from_visual_type(visual)
            .map_err(|_| DisplayError::X("screenshots need a TrueColor visual".into()))?;
        let mut data = Vec::with_capacity(w as usize * h as usize * 3);
        let fast = u8::from(image.bits_per_pixel()) == 32
            && image.byte_order() == ImageOrder::LsbFirst
            && (visual.red_mask, visual.green_mask, visual.blue_mask)
                == (0xff0000, 0x00ff00, 0x0000ff);
        if fast {
            // The usual 24-bit TrueColor layout: BGRX bytes, rows padded to 32 bits.
            let stride = w as usize * 4;
            for row in image.data().chunks(stride).take(h as usize) {
                for px in row.chunks_exact(4) {
                    if let [b, g, r, _] = *px {
                        data.extend_from_slice(&[r, g, b]);
                    }
                }
            }
        } else {
            for yy in 0..h16 {
                for xx in 0..w16 {
                    let (r, g, b) = layout.decode(image.get_pixel(xx, yy));
                    data.extend_from_slice(&[(r >> 8) as u8, (g >> 8) as u8, (b >> 8) as u8]);
                }
            }
        }
        if data.len() != w as usize * h as usize * 3 {
            return Err(DisplayError::X(format!(
                "GetImage returned {} bytes for a {w}x{h} screen",
                image.data().len()
            )));
        }
        Ok(Rgb {
            width: w,
            height: h,
            data,
        })
    }

    /// Presses and releases keys so that `keysyms` arrive in order, as typed text.
    /// Keysyms missing from the keymap are put on spare keycodes for the duration and the
    /// keycodes cleared again afterwards; `settle` is how long clients get to look a
    /// remapped key up before its keycode changes again.
    pub fn type_keysyms(&self, keysyms: &[Keysym], settle: Duration) -> Result<(), DisplayError> {
        let map = self.keymap()?;
        // Caps Lock would invert the case of every letter: switch it off while typing.
        let caps = if self.caps_lock_on()? {
            map.lookup(keys::CAPS_LOCK).map(|(kc, _)| kc)
        } else {
            None
        };
        if let Some(kc) = caps {
            self.tap(kc)?;
        }
        let mut used: Vec<u8> = Vec::new();
        let typed = self.type_segments(&map, keysyms, settle, &mut used);
        if let Some(kc) = caps {
            self.tap(kc)?;
        }
        self.sync()?;
        self.restore(&used, settle)?;
        typed
    }

    fn type_segments(
        &self,
        map: &Keymap,
        keysyms: &[Keysym],
        settle: Duration,
        used: &mut Vec<u8>,
    ) -> Result<(), DisplayError> {
        let spares = map.spare();
        let shift = map.lookup(keys::SHIFT_L).map(|(kc, _)| kc);
        let mut i = 0;
        while i < keysyms.len() {
            // One segment: as many keysyms as fit on the spare keycodes at once.
            let mut extra: Vec<(Keysym, u8)> = Vec::new();
            let mut end = i;
            for &ks in keysyms.get(i..).unwrap_or_default() {
                if map.lookup(ks).is_none() && !extra.iter().any(|&(k, _)| k == ks) {
                    match spares.get(extra.len()) {
                        Some(&kc) => extra.push((ks, kc)),
                        None => break,
                    }
                }
                end += 1;
            }
            if end == i {
                return Err(DisplayError::Keyboard(
                    "the keymap has no free keycode to type this character".into(),
                ));
            }
            if !extra.is_empty() {
                if !used.is_empty() {
                    // Clients look keysyms up when they read the event: let them read
                    // the last segment before its keycodes change.
                    self.sync()?;
                    sleep(settle);
                }
                for &(ks, kc) in &extra {
                    self.set_keycode(kc, ks)?;
                    if !used.contains(&kc) {
                        used.push(kc);
                    }
                }
                self.sync()?;
            }
            let resolver = Resolver { map, extra };
            for &ks in keysyms.get(i..end).unwrap_or_default() {
                let (kc, needs_shift) = resolver
                    .resolve(ks)
                    .ok_or_else(|| DisplayError::Keyboard(format!("no keycode for {ks:#x}")))?;
                let shift = shift.filter(|_| needs_shift);
                if let Some(s) = shift {
                    self.key(s, true)?;
                }
                self.tap(kc)?;
                if let Some(s) = shift {
                    self.key(s, false)?;
                }
            }
            i = end;
        }
        Ok(())
    }

    fn tap(&self, keycode: u8) -> Result<(), DisplayError> {
        self.key(keycode, true)?;
        self.key(keycode, false)
    }

    /// Whether the Lock modifier (Caps Lock) is active.
    pub fn caps_lock_on(&self) -> Result<bool, DisplayError> {
        let p = self.query_pointer()?;
        Ok(u16::from(p.mask) & u16::from(KeyButMask::LOCK) != 0)
    }

    /// Runs `during` while the keys of `combo` are held (pressed in order, released in
    /// reverse), remapping spare keycodes for keysyms the keymap lacks.
    pub fn with_keys_held<T>(
        &self,
        combo: &[Keysym],
        settle: Duration,
        during: impl FnOnce(&Self) -> Result<T, DisplayError>,
    ) -> Result<T, DisplayError> {
        if combo.is_empty() {
            return during(self);
        }
        let map = self.keymap()?;
        let spares = map.spare();
        let mut extra: Vec<(Keysym, u8)> = Vec::new();
        for &ks in combo {
            if map.lookup(ks).is_none() && !extra.iter().any(|&(k, _)| k == ks) {
                let kc = *spares.get(extra.len()).ok_or_else(|| {
                    DisplayError::Keyboard("the keymap has no free keycode for this key".into())
                })?;
                extra.push((ks, kc));
            }
        }
        let used: Vec<u8> = extra.iter().map(|&(_, kc)| kc).collect();
        for &(ks, kc) in &extra {
            self.set_keycode(kc, ks)?;
        }
        let resolver = Resolver { map: &map, extra };
        let shift = map.lookup(keys::SHIFT_L).map(|(kc, _)| kc);
        let mut pressed: Vec<u8> = Vec::new();
        let outcome = (|| {
            for &ks in combo {
                let (kc, needs_shift) = resolver
                    .resolve(ks)
                    .ok_or_else(|| DisplayError::Keyboard(format!("no keycode for {ks:#x}")))?;
                if let Some(s) = shift.filter(|s| needs_shift && !pressed.contains(s)) {
                    self.key(s, true)?;
                    pressed.push(s);
                }
                if !pressed.contains(&kc) {
                    self.key(kc, true)?;
                    pressed.push(kc);
                }
            }
            self.sync()?;
            during(self)
        })();
        // Release whatever went down, even when something failed on the way.
        for &kc in pressed.iter().rev() {
            self.key(kc, false)?;
        }
        self.sync()?;
        self.restore(&used, settle)?;
        outcome
    }

    fn restore(&self, used: &[u8], settle: Duration) -> Result<(), DisplayError> {
        if used.is_empty() {
            return Ok(());
        }
        sleep(settle);
        for &kc in used {
            self.set_keycode(kc, 0)?;
        }
        self.sync()
    }
}

/// The core keyboard mapping: `per` keysyms for each keycode from `min` on.
#[derive(Debug, Clone)]
pub struct Keymap {
    min: u8,
    per: usize,
    syms: Vec<Keysym>,
}

impl Keymap {
    fn keycodes(&self) -> impl Iterator<Item = (u8, &[Keysym])> {
        let per = self.per.max(1);
        self.syms
            .chunks(per)
            .zip(self.min..=u8::MAX)
            .map(|(syms, kc)| (kc, syms))
    }

    /// The keycode producing `keysym`, and whether Shift is needed: the unshifted level of
    /// any key first, then the shifted level.
    pub fn lookup(&self, keysym: Keysym) -> Option<(u8, bool)> {
        if keysym == 0 {
            return None;
        }
        for level in 0..2 {
            if let Some((kc, _)) = self
                .keycodes()
                .find(|(_, syms)| syms.get(level) == Some(&keysym))
            {
                return Some((kc, level == 1));
            }
        }
        None
    }

    /// Keycodes with no keysym at all, highest first (the ones least likely to be in use).
    pub fn spare(&self) -> Vec<u8> {
        let mut v: Vec<u8> = self
            .keycodes()
            .filter(|(_, syms)| syms.iter().all(|&s| s == 0))
            .map(|(kc, _)| kc)
            .collect();
        v.reverse();
        v
    }
}

struct Resolver<'a> {
    map: &'a Keymap,
    extra: Vec<(Keysym, u8)>,
}

impl Resolver<'_> {
    fn resolve(&self, ks: Keysym) -> Option<(u8, bool)> {
        self.map.lookup(ks).or_else(|| {
            self.extra
                .iter()
                .find(|&&(k, _)| k == ks)
                .map(|&(_, kc)| (kc, false))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // covers P-CU
    #[test]
    fn keymap_lookup_prefers_unshifted_and_finds_spares() {
        let map = Keymap {
            min: 8,
            per: 2,
            syms: vec![0x61, 0x41, 0, 0, 0x31, 0x21, 0, 0],
        };
        assert_eq!(map.lookup(0x61), Some((8, false)));
        assert_eq!(map.lookup(0x41), Some((8, true)));
        assert_eq!(map.lookup(0x21), Some((10, true)));
        assert_eq!(map.lookup(0x0100_017c), None);
        assert_eq!(map.lookup(0), None);
        assert_eq!(map.spare(), vec![11, 9]);
    }
}
