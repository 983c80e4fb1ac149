//! `hermes`: `<tool_call>{json}</tool_call>` (Hermes, Qwen 2.5/3). Explicit markup: any name
//! is accepted (flagged when unregistered). The closing tag may be missing at the very end
//! of the output; the content is still a call when its JSON is complete, never when cut.

pub(crate) const OPEN: &str = "<tool_call>";
pub(crate) const CLOSE: &str = "</tool_call>";

/// What the start of a `<tool_call>` body says, for announcing the call while it streams.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Probe {
    NeedMore,
    /// Not the canonical `{"name": "...", "arguments": {` prefix: wait for the whole call.
    No,
    /// The name, and the offset of the arguments object's `{`.
    Yes(String, usize),
}

/// The prefix is bounded: a body that has not shown it within this many bytes is parsed
/// only when complete.
const MAX_PROBE: usize = 512;

/// Recognises `{"name": "<name>", "arguments": {` (or `"parameters"`) at the start of `s`.
pub(crate) fn probe(s: &[u8]) -> Probe {
    let mut i = 0;
    let ws = |i: &mut usize| {
        while s.get(*i).is_some_and(u8::is_ascii_whitespace) {
            *i += 1;
        }
    };
    let lit = |i: &mut usize, want: &[u8]| -> Option<bool> {
        let have = s.get(*i..)?;
        let n = have.len().min(want.len());
        if have[..n] != want[..n] {
            return Some(false);
        }
        if n < want.len() {
            return None;
        }
        *i += want.len();
        Some(true)
    };
    macro_rules! step {
        ($e:expr) => {
            match $e {
                Some(true) => {}
                Some(false) => return Probe::No,
                None => {
                    return if s.len() > MAX_PROBE {
                        Probe::No
                    } else {
                        Probe::NeedMore
                    };
                }
            }
        };
    }
    ws(&mut i);
    step!(lit(&mut i, b"{"));
    ws(&mut i);
    step!(lit(&mut i, b"\"name\""));
    ws(&mut i);
    step!(lit(&mut i, b":"));
    ws(&mut i);
    step!(lit(&mut i, b"\""));
    let name_start = i;
    loop {
        match s.get(i) {
            None => {
                return if s.len() > MAX_PROBE {
                    Probe::No
                } else {
                    Probe::NeedMore
                };
            }
            Some(b'"') => break,
            Some(b'\\') => return Probe::No,
            Some(_) if i - name_start > 256 => return Probe::No,
            Some(_) => i += 1,
        }
    }
    let Ok(name) = std::str::from_utf8(&s[name_start..i]) else {
        return Probe::No;
    };
    if name.is_empty() {
        return Probe::No;
    }
    let name = name.to_owned();
    i += 1;
    ws(&mut i);
    step!(lit(&mut i, b","));
    ws(&mut i);
    let key_at = i;
    match lit(&mut i, b"\"arguments\"") {
        Some(true) => {}
        Some(false) => {
            i = key_at;
            step!(lit(&mut i, b"\"parameters\""));
        }
        None => {
            // Could still be either key.
            let rest = s.get(key_at..).unwrap_or(&[]);
            if b"\"parameters\"".starts_with(rest) || b"\"arguments\"".starts_with(rest) {
                return if s.len() > MAX_PROBE {
                    Probe::No
                } else {
                    Probe::NeedMore
                };
            }
            return Probe::No;
        }
    }
    ws(&mut i);
    step!(lit(&mut i, b":"));
    ws(&mut i);
    match s.get(i) {
        Some(b'{') => Probe::Yes(name, i),
        Some(_) => Probe::No,
        None if s.len() > MAX_PROBE => Probe::No,
        None => Probe::NeedMore,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn probes_the_canonical_prefix() {
        let full = br#" {"name": "get", "arguments": {"a": 1}}"#;
        for cut in 0..full.len() {
            let p = probe(&full[..cut]);
            assert!(
                matches!(p, Probe::NeedMore | Probe::Yes(..)),
                "{cut}: {p:?}"
            );
        }
        assert_eq!(probe(full), Probe::Yes("get".into(), 30));
        assert_eq!(probe(br#"{"arguments": {}, "name": "x"}"#), Probe::No);
        assert_eq!(
            probe(br#"{"name": "x", "parameters": {"#),
            Probe::Yes("x".into(), 28)
        );
    }
}
