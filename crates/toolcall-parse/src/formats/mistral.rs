//! `mistral`: `[TOOL_CALLS][{"name","arguments"}, ...]` (v3) and
//! `[TOOL_CALLS]name[ARGS]{...}` (v11+, optionally `name[CALL_ID]id[ARGS]{...}`).
//! Explicit markup: any name, flagged when unregistered.

pub(crate) const MARKER: &str = "[TOOL_CALLS]";
pub(crate) const ARGS: &str = "[ARGS]";
pub(crate) const CALL_ID: &str = "[CALL_ID]";

/// What follows the marker, once decidable.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Head {
    /// A JSON array or object starts at this offset.
    Json(usize),
    /// `name[ARGS]`: name, optional call id, JSON starts at this offset.
    Named(String, Option<String>, usize),
    /// Not a Mistral call.
    Invalid,
}

/// Decides the head from `rest` (the bytes after the marker); `None` = need more bytes.
pub(crate) fn head(rest: &str, is_final: bool) -> Option<Head> {
    let trimmed = rest.trim_start();
    let skip = rest.len() - trimmed.len();
    let first = trimmed.bytes().next();
    match first {
        None => return if is_final { Some(Head::Invalid) } else { None },
        Some(b'[' | b'{') => return Some(Head::Json(skip)),
        _ => {}
    }
    let name_len = trimmed
        .bytes()
        .take_while(|b| super::call_syntax::is_name_byte(*b))
        .count();
    if name_len == 0 || name_len > 256 {
        return Some(Head::Invalid);
    }
    let name = trimmed.get(..name_len)?.to_owned();
    let after = trimmed.get(name_len..)?;
    if after.is_empty() {
        return if is_final { Some(Head::Invalid) } else { None };
    }
    if let Some(a) = after.strip_prefix(ARGS) {
        let ws = a.len() - a.trim_start().len();
        return Some(Head::Named(name, None, skip + name_len + ARGS.len() + ws));
    }
    if let Some(a) = after.strip_prefix(CALL_ID) {
        let id_len = a
            .bytes()
            .take_while(|b| b.is_ascii_alphanumeric() || *b == b'_' || *b == b'-')
            .count();
        let rest2 = a.get(id_len..)?;
        if rest2.is_empty() {
            return if is_final || id_len > 128 {
                Some(Head::Invalid)
            } else {
                None
            };
        }
        if rest2.starts_with(ARGS) {
            let id = a.get(..id_len)?.to_owned();
            return Some(Head::Named(
                name,
                Some(id),
                skip + name_len + CALL_ID.len() + id_len + ARGS.len(),
            ));
        }
        if ARGS.starts_with(rest2) && !is_final {
            return None;
        }
        return Some(Head::Invalid);
    }
    if (ARGS.starts_with(after) || CALL_ID.starts_with(after)) && !is_final {
        return None;
    }
    Some(Head::Invalid)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heads() {
        assert_eq!(head(" [{", false), Some(Head::Json(1)));
        assert_eq!(head("get[AR", false), None);
        assert_eq!(
            head("get[ARGS]{", false),
            Some(Head::Named("get".into(), None, 9))
        );
        assert_eq!(
            head("get[CALL_ID]abc[ARGS]{", false),
            Some(Head::Named("get".into(), Some("abc".into()), 21))
        );
        assert_eq!(head("get now", false), Some(Head::Invalid));
    }
}
