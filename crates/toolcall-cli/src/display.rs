//! Text shortened for terminal output.

/// At most `max` characters of `s`, with an ellipsis when cut.
pub fn shorten(s: &str, max: usize) -> String {
    let one_line = s.replace('\n', " ");
    if one_line.chars().count() <= max {
        one_line
    } else {
        let cut: String = one_line.chars().take(max).collect();
        format!("{cut}…")
    }
}

/// The first line of `s`, at most `max` characters, with an ellipsis when cut.
pub fn first_line(s: &str, max: usize) -> String {
    shorten(s.lines().next().unwrap_or("").trim(), max)
}
