//! Key names → X keysyms: xdotool's `key` syntax (`Return`, `ctrl+shift+t`, `Page_Down`,
//! `KP_0`, `F5`), the lower-case names models use (`enter`, `esc`, `pagedown`, `cmd`), and
//! characters → keysyms for `type`.
//!
//! Hand-written: no maintained pure-Rust crate maps keysym *names* without linking libxkbcommon
//! (`xkbcommon` needs the C library and its headers, which this crate otherwise does not);
//! the table below is the subset of `X11/keysymdef.h` that computer-use models send.

/// An X keysym.
pub type Keysym = u32;

pub const SHIFT_L: Keysym = 0xffe1;
pub const RETURN: Keysym = 0xff0d;
pub const TAB: Keysym = 0xff09;
pub const CAPS_LOCK: Keysym = 0xffe5;

/// Longest key expression accepted (`key` / `hold_key` text).
pub const MAX_KEY_TEXT: usize = 256;
/// Most keys pressed together in one combination.
pub const MAX_COMBO: usize = 8;
/// Most combinations in one space-separated `key` sequence.
pub const MAX_SEQUENCE: usize = 32;

/// X keysym names (case as in `keysymdef.h`), matched exactly first, then ignoring case.
const NAMES: &[(&str, Keysym)] = &[
    ("BackSpace", 0xff08),
    ("Tab", 0xff09),
    ("ISO_Left_Tab", 0xfe20),
    ("Linefeed", 0xff0a),
    ("Clear", 0xff0b),
    ("Return", 0xff0d),
    ("Pause", 0xff13),
    ("Scroll_Lock", 0xff14),
    ("Sys_Req", 0xff15),
    ("Escape", 0xff1b),
    ("Delete", 0xffff),
    ("Home", 0xff50),
    ("Left", 0xff51),
    ("Up", 0xff52),
    ("Right", 0xff53),
    ("Down", 0xff54),
    ("Prior", 0xff55),
    ("Page_Up", 0xff55),
    ("Next", 0xff56),
    ("Page_Down", 0xff56),
    ("End", 0xff57),
    ("Begin", 0xff58),
    ("Select", 0xff60),
    ("Print", 0xff61),
    ("Execute", 0xff62),
    ("Insert", 0xff63),
    ("Undo", 0xff65),
    ("Redo", 0xff66),
    ("Menu", 0xff67),
    ("Find", 0xff68),
    ("Cancel", 0xff69),
    ("Help", 0xff6a),
    ("Break", 0xff6b),
    ("Num_Lock", 0xff7f),
    ("KP_Space", 0xff80),
    ("KP_Tab", 0xff89),
    ("KP_Enter", 0xff8d),
    ("KP_Home", 0xff95),
    ("KP_Left", 0xff96),
    ("KP_Up", 0xff97),
    ("KP_Right", 0xff98),
    ("KP_Down", 0xff99),
    ("KP_Prior", 0xff9a),
    ("KP_Page_Up", 0xff9a),
    ("KP_Next", 0xff9b),
    ("KP_Page_Down", 0xff9b),
    ("KP_End", 0xff9c),
    ("KP_Begin", 0xff9d),
    ("KP_Insert", 0xff9e),
    ("KP_Delete", 0xff9f),
    ("KP_Equal", 0xffbd),
    ("KP_Multiply", 0xffaa),
    ("KP_Add", 0xffab),
    ("KP_Separator", 0xffac),
    ("KP_Subtract", 0xffad),
    ("KP_Decimal", 0xffae),
    ("KP_Divide", 0xffaf),
    ("KP_0", 0xffb0),
    ("KP_1", 0xffb1),
    ("KP_2", 0xffb2),
    ("KP_3", 0xffb3),
    ("KP_4", 0xffb4),
    ("KP_5", 0xffb5),
    ("KP_6", 0xffb6),
    ("KP_7", 0xffb7),
    ("KP_8", 0xffb8),
    ("KP_9", 0xffb9),
    ("Shift_L", 0xffe1),
    ("Shift_R", 0xffe2),
    ("Control_L", 0xffe3),
    ("Control_R", 0xffe4),
    ("Caps_Lock", 0xffe5),
    ("Shift_Lock", 0xffe6),
    ("Meta_L", 0xffe7),
    ("Meta_R", 0xffe8),
    ("Alt_L", 0xffe9),
    ("Alt_R", 0xffea),
    ("Super_L", 0xffeb),
    ("Super_R", 0xffec),
    ("Hyper_L", 0xffed),
    ("Hyper_R", 0xffee),
    ("ISO_Level3_Shift", 0xfe03),
    ("space", 0x20),
    ("exclam", 0x21),
    ("quotedbl", 0x22),
    ("numbersign", 0x23),
    ("dollar", 0x24),
    ("percent", 0x25),
    ("ampersand", 0x26),
    ("apostrophe", 0x27),
    ("parenleft", 0x28),
    ("parenright", 0x29),
    ("asterisk", 0x2a),
    ("plus", 0x2b),
    ("comma", 0x2c),
    ("minus", 0x2d),
    ("period", 0x2e),
    ("slash", 0x2f),
    ("colon", 0x3a),
    ("semicolon", 0x3b),
    ("less", 0x3c),
    ("equal", 0x3d),
    ("greater", 0x3e),
    ("question", 0x3f),
    ("at", 0x40),
    ("bracketleft", 0x5b),
    ("backslash", 0x5c),
    ("bracketright", 0x5d),
    ("asciicircum", 0x5e),
    ("underscore", 0x5f),
    ("grave", 0x60),
    ("braceleft", 0x7b),
    ("bar", 0x7c),
    ("braceright", 0x7d),
    ("asciitilde", 0x7e),
    ("XF86AudioLowerVolume", 0x1008ff11),
    ("XF86AudioMute", 0x1008ff12),
    ("XF86AudioRaiseVolume", 0x1008ff13),
    ("XF86AudioPlay", 0x1008ff14),
    ("XF86AudioStop", 0x1008ff15),
    ("XF86AudioPrev", 0x1008ff16),
    ("XF86AudioNext", 0x1008ff17),
    ("XF86HomePage", 0x1008ff18),
    ("XF86Search", 0x1008ff1b),
    ("XF86Back", 0x1008ff26),
    ("XF86Forward", 0x1008ff27),
    ("XF86Refresh", 0x1008ff29),
];

/// Names models use that are not X keysym names (matched ignoring case).
const ALIASES: &[(&str, Keysym)] = &[
    ("enter", 0xff0d),
    ("esc", 0xff1b),
    ("del", 0xffff),
    ("ins", 0xff63),
    ("pageup", 0xff55),
    ("pgup", 0xff55),
    ("pagedown", 0xff56),
    ("pgdn", 0xff56),
    ("arrowup", 0xff52),
    ("arrowdown", 0xff54),
    ("arrowleft", 0xff51),
    ("arrowright", 0xff53),
    ("spacebar", 0x20),
    ("ctrl", 0xffe3),
    ("control", 0xffe3),
    ("ctrl_l", 0xffe3),
    ("ctrl_r", 0xffe4),
    ("shift", 0xffe1),
    ("alt", 0xffe9),
    ("option", 0xffe9),
    ("altgr", 0xfe03),
    ("super", 0xffeb),
    ("win", 0xffeb),
    ("windows", 0xffeb),
    ("cmd", 0xffeb),
    ("command", 0xffeb),
    ("meta", 0xffe7),
    ("capslock", 0xffe5),
    ("numlock", 0xff7f),
    ("scrolllock", 0xff14),
    ("printscreen", 0xff61),
    ("prtsc", 0xff61),
    ("backtab", 0xfe20),
];

/// The keysym of a named key or single character, or `None` when the name is unknown.
pub fn keysym_for_name(name: &str) -> Option<Keysym> {
    let mut chars = name.chars();
    if let (Some(c), None) = (chars.next(), chars.clone().next()) {
        return char_keysym(c);
    }
    if let Some(&(_, k)) = NAMES.iter().find(|(n, _)| *n == name) {
        return Some(k);
    }
    if let Some(n) = function_key(name) {
        return Some(n);
    }
    NAMES
        .iter()
        .chain(ALIASES)
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|&(_, k)| k)
}

/// `F1`..`F35` (either case).
fn function_key(name: &str) -> Option<Keysym> {
    let digits = name.strip_prefix('F').or_else(|| name.strip_prefix('f'))?;
    if digits.is_empty() || digits.len() > 2 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let n: u32 = digits.parse().ok()?;
    (1..=35).contains(&n).then_some(0xffbe + n - 1)
}

/// The keysym that types `c`: Latin-1 maps to itself, newline/tab to Return/Tab, anything
/// else to its Unicode keysym (`0x0100_0000 + code point`). Other control characters have
/// no keysym and return `None`.
pub fn char_keysym(c: char) -> Option<Keysym> {
    let cp = c as u32;
    match c {
        '\n' | '\r' => Some(RETURN),
        '\t' => Some(TAB),
        _ if c.is_control() => None,
        _ if (0x20..=0x7e).contains(&cp) || (0xa0..=0xff).contains(&cp) => Some(cp),
        _ => Some(0x0100_0000 + cp),
    }
}

/// Parses xdotool `key` syntax: space-separated combinations, each `mod+mod+key`.
pub fn parse_key_sequence(text: &str) -> Result<Vec<Vec<Keysym>>, String> {
    if text.len() > MAX_KEY_TEXT {
        return Err(format!(
            "key text is {} bytes; at most {MAX_KEY_TEXT} are accepted",
            text.len()
        ));
    }
    let combos: Vec<&str> = text.split_whitespace().collect();
    if combos.is_empty() {
        return Err("key text is empty; give a key such as \"Return\" or \"ctrl+c\"".into());
    }
    if combos.len() > MAX_SEQUENCE {
        return Err(format!(
            "{} key combinations given; at most {MAX_SEQUENCE} per call",
            combos.len()
        ));
    }
    combos.into_iter().map(parse_combo).collect()
}

/// Parses one combination such as `ctrl+shift+t`; a trailing `+` key is written `ctrl++`.
pub fn parse_combo(combo: &str) -> Result<Vec<Keysym>, String> {
    let (body, plus_key) = match combo.strip_suffix("++") {
        Some(rest) => (rest, true),
        None if combo == "+" => ("", true),
        None => (combo, false),
    };
    let mut keys = Vec::new();
    if !body.is_empty() {
        for part in body.split('+') {
            if part.is_empty() {
                return Err(format!("empty key name in {combo:?}"));
            }
            let k = keysym_for_name(part).ok_or_else(|| {
                format!(
                    "unknown key {part:?} in {combo:?}; use names like Return, Tab, Escape, \
                     BackSpace, Delete, Page_Down, F5, ctrl, shift, alt, super, or one character"
                )
            })?;
            keys.push(k);
        }
    }
    if plus_key {
        keys.push(0x2b);
    }
    if keys.len() > MAX_COMBO {
        return Err(format!(
            "{combo:?} presses {} keys at once; at most {MAX_COMBO}",
            keys.len()
        ));
    }
    Ok(keys)
}

#[cfg(test)]
mod tests {
    use super::*;

    // covers P-CU
    #[test]
    fn seed_key_names_resolve() {
        assert_eq!(parse_key_sequence("enter").unwrap(), vec![vec![0xff0d]]);
        assert_eq!(parse_key_sequence("Return").unwrap(), vec![vec![0xff0d]]);
        assert_eq!(parse_key_sequence("tab").unwrap(), vec![vec![0xff09]]);
        assert_eq!(parse_key_sequence("escape").unwrap(), vec![vec![0xff1b]]);
        assert_eq!(parse_key_sequence("backspace").unwrap(), vec![vec![0xff08]]);
        assert_eq!(parse_key_sequence("delete").unwrap(), vec![vec![0xffff]]);
        assert_eq!(
            parse_key_sequence("ctrl+c").unwrap(),
            vec![vec![0xffe3, 0x63]]
        );
        assert_eq!(
            parse_key_sequence("ctrl+shift+t").unwrap(),
            vec![vec![0xffe3, 0xffe1, 0x74]]
        );
        assert_eq!(parse_key_sequence("Page_Down").unwrap(), vec![vec![0xff56]]);
        assert_eq!(parse_key_sequence("pagedown").unwrap(), vec![vec![0xff56]]);
        assert_eq!(parse_key_sequence("F5").unwrap(), vec![vec![0xffc2]]);
        assert_eq!(parse_key_sequence("f12").unwrap(), vec![vec![0xffc9]]);
        assert_eq!(parse_key_sequence("super").unwrap(), vec![vec![0xffeb]]);
        assert_eq!(parse_key_sequence("KP_0").unwrap(), vec![vec![0xffb0]]);
        assert_eq!(
            parse_key_sequence("alt+Tab").unwrap(),
            vec![vec![0xffe9, 0xff09]]
        );
        assert_eq!(
            parse_key_sequence("ctrl++").unwrap(),
            vec![vec![0xffe3, 0x2b]]
        );
        assert_eq!(
            parse_key_sequence("ctrl+a Delete").unwrap(),
            vec![vec![0xffe3, 0x61], vec![0xffff]]
        );
    }

    // covers P-CU, R-7
    #[test]
    fn bad_key_text_is_an_error_not_a_panic() {
        assert!(parse_key_sequence("").is_err());
        assert!(parse_key_sequence("   ").is_err());
        assert!(
            parse_key_sequence("ctrl+nosuchkey")
                .unwrap_err()
                .contains("nosuchkey")
        );
        assert!(parse_key_sequence("ctrl++c").is_err());
        assert!(parse_key_sequence(&"a ".repeat(200)).is_err());
        assert!(parse_key_sequence("F0").is_err());
        assert!(parse_key_sequence("F99").is_err());
        assert!(parse_key_sequence("a+b+c+d+e+f+g+h+i").is_err());
    }

    // covers P-CU
    #[test]
    fn characters_map_to_keysyms() {
        assert_eq!(char_keysym('a'), Some(0x61));
        assert_eq!(char_keysym('ó'), Some(0xf3));
        assert_eq!(char_keysym('ż'), Some(0x0100_017c));
        assert_eq!(char_keysym('✓'), Some(0x0100_2713));
        assert_eq!(char_keysym('\n'), Some(RETURN));
        assert_eq!(char_keysym('\u{7}'), None);
    }
}
