//! XDG desktop entries (`.desktop` files): reading the `[Desktop Entry]` group and turning
//! `Exec` into an argument vector, following the Desktop Entry Specification 1.5 (value
//! escapes, `Exec` quoting, field codes). Hand-written: the needed part is ~150 lines, and
//! the crates for it (freedesktop-desktop-entry, freedesktop_entry_parser) either run the
//! program through a shell-like string or pull in locale/icon machinery this pack does not use.

use std::path::{Path, PathBuf};

/// Largest `.desktop` file read, in bytes.
pub const MAX_ENTRY_BYTES: u64 = 64 * 1024;
/// Most entries scanned over all directories.
pub const MAX_ENTRIES: usize = 10_000;
/// How deep subdirectories of an applications directory are searched.
const MAX_DEPTH: usize = 3;

/// One application entry.
#[derive(Debug, Clone, PartialEq)]
pub struct DesktopEntry {
    /// Desktop file id without `.desktop`: the path below the applications directory with
    /// `/` replaced by `-` (`org.gnome.Calculator`, `kde4-kate`).
    pub id: String,
    pub name: String,
    /// `Exec` as an argument vector, field codes removed.
    pub argv: Vec<String>,
    /// `Path`: the working directory to start in.
    pub working_dir: Option<PathBuf>,
    pub file: PathBuf,
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum EntryError {
    #[error("{0}")]
    Invalid(String),
}

fn invalid(m: impl Into<String>) -> EntryError {
    EntryError::Invalid(m.into())
}

/// Undoes the key-file value escapes `\s \n \t \r \\`.
fn unescape_value(v: &str) -> String {
    let mut out = String::with_capacity(v.len());
    let mut chars = v.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('s') => out.push(' '),
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some('r') => out.push('\r'),
            Some('\\') => out.push('\\'),
            Some(other) => {
                out.push('\\');
                out.push(other);
            }
            None => out.push('\\'),
        }
    }
    out
}

/// Splits an (unescaped) `Exec` value into arguments and removes field codes.
///
/// Arguments are separated by spaces; a double-quoted argument may contain spaces, and inside
/// it `\"`, `` \` ``, `\$` and `\\` stand for the character. Field codes (`%f %F %u %U %i %c
/// %k` and the deprecated `%d %D %n %N %v %m`) are dropped, an argument that was only a field
/// code disappears, `%%` becomes `%`; any other `%x` makes the entry invalid.
pub fn parse_exec(exec: &str) -> Result<Vec<String>, EntryError> {
    let mut raw: Vec<(String, bool)> = Vec::new();
    let mut chars = exec.chars().peekable();
    loop {
        while chars.peek().is_some_and(|c| *c == ' ' || *c == '\t') {
            chars.next();
        }
        let Some(&first) = chars.peek() else { break };
        let mut arg = String::new();
        if first == '"' {
            chars.next();
            let mut closed = false;
            while let Some(c) = chars.next() {
                match c {
                    '"' => {
                        closed = true;
                        break;
                    }
                    '\\' => match chars.next() {
                        Some(e @ ('"' | '`' | '$' | '\\')) => arg.push(e),
                        Some(other) => {
                            return Err(invalid(format!(
                                "Exec: \\{other} is not a valid escape inside quotes"
                            )));
                        }
                        None => return Err(invalid("Exec: unterminated escape")),
                    },
                    other => arg.push(other),
                }
            }
            if !closed {
                return Err(invalid("Exec: unterminated quoted argument"));
            }
            if chars.peek().is_some_and(|c| *c != ' ' && *c != '\t') {
                return Err(invalid(
                    "Exec: a quoted argument must be followed by a space",
                ));
            }
            raw.push((arg, true));
        } else {
            while let Some(&c) = chars.peek() {
                if c == ' ' || c == '\t' {
                    break;
                }
                if c == '"' {
                    return Err(invalid("Exec: a quote may only start an argument"));
                }
                arg.push(c);
                chars.next();
            }
            raw.push((arg, false));
        }
    }
    let mut argv = Vec::new();
    for (arg, _quoted) in raw {
        let mut out = String::new();
        let mut had_code = false;
        let mut it = arg.chars();
        while let Some(c) = it.next() {
            if c != '%' {
                out.push(c);
                continue;
            }
            match it.next() {
                Some('%') => out.push('%'),
                Some(
                    'f' | 'F' | 'u' | 'U' | 'i' | 'c' | 'k' | 'd' | 'D' | 'n' | 'N' | 'v' | 'm',
                ) => had_code = true,
                Some(other) => {
                    return Err(invalid(format!("Exec: unknown field code %{other}")));
                }
                None => return Err(invalid("Exec: a lone % at the end")),
            }
        }
        if had_code && out.is_empty() {
            continue;
        }
        argv.push(out);
    }
    if argv.is_empty() {
        return Err(invalid("Exec is empty"));
    }
    Ok(argv)
}

/// Parses the text of a `.desktop` file. `Ok(None)` for entries that are not launchable
/// applications (other types, `Hidden=true`, no `Exec`).
pub fn parse_entry(text: &str, id: &str, file: &Path) -> Result<Option<DesktopEntry>, EntryError> {
    let mut in_group = false;
    let (mut name, mut exec, mut kind, mut hidden, mut path) = (None, None, None, false, None);
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if line.starts_with('[') {
            in_group = line == "[Desktop Entry]";
            continue;
        }
        if !in_group {
            continue;
        }
        let Some((key, value)) = line.split_once('=') else {
            continue;
        };
        let value = unescape_value(value.trim());
        match key.trim() {
            "Name" => name = Some(value),
            "Exec" => exec = Some(value),
            "Type" => kind = Some(value),
            "Hidden" => hidden = value == "true",
            "Path" if !value.is_empty() => path = Some(PathBuf::from(value)),
            _ => {}
        }
    }
    if hidden || kind.as_deref().is_some_and(|k| k != "Application") {
        return Ok(None);
    }
    let Some(exec) = exec else { return Ok(None) };
    let argv = parse_exec(&exec).map_err(|e| invalid(format!("{}: {e}", file.display())))?;
    Ok(Some(DesktopEntry {
        id: id.to_owned(),
        name: name.unwrap_or_else(|| id.to_owned()),
        argv,
        working_dir: path,
        file: file.to_owned(),
    }))
}

/// Reads one `.desktop` file.
pub fn read_entry(file: &Path, id: &str) -> Result<Option<DesktopEntry>, EntryError> {
    let meta = std::fs::metadata(file).map_err(|e| invalid(format!("{}: {e}", file.display())))?;
    if meta.len() > MAX_ENTRY_BYTES {
        return Err(invalid(format!("{} is too large", file.display())));
    }
    let text =
        std::fs::read_to_string(file).map_err(|e| invalid(format!("{}: {e}", file.display())))?;
    parse_entry(&text, id, file)
}

/// The default search path: `$XDG_DATA_HOME/applications` (default
/// `~/.local/share/applications`) then `<dir>/applications` for each of `$XDG_DATA_DIRS`
/// (default `/usr/local/share:/usr/share`).
pub fn default_dirs() -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    match std::env::var_os("XDG_DATA_HOME").filter(|v| !v.is_empty()) {
        Some(home) => dirs.push(PathBuf::from(home).join("applications")),
        None => {
            if let Some(home) = std::env::var_os("HOME") {
                dirs.push(PathBuf::from(home).join(".local/share/applications"));
            }
        }
    }
    let data_dirs = std::env::var("XDG_DATA_DIRS")
        .ok()
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| "/usr/local/share:/usr/share".to_owned());
    for d in data_dirs.split(':').filter(|d| !d.is_empty()) {
        dirs.push(PathBuf::from(d).join("applications"));
    }
    dirs
}

/// Every launchable entry in `dirs`; for a desktop file id found twice the earlier
/// directory wins. Unreadable or invalid files are skipped (and logged).
pub fn scan(dirs: &[PathBuf]) -> Vec<DesktopEntry> {
    let mut found: Vec<DesktopEntry> = Vec::new();
    for dir in dirs {
        let mut stack = vec![(dir.clone(), String::new(), 0usize)];
        while let Some((path, prefix, depth)) = stack.pop() {
            let Ok(read) = std::fs::read_dir(&path) else {
                continue;
            };
            for item in read.flatten() {
                if found.len() >= MAX_ENTRIES {
                    return found;
                }
                let file_name = item.file_name().to_string_lossy().into_owned();
                let p = item.path();
                if p.is_dir() {
                    if depth < MAX_DEPTH {
                        stack.push((p, format!("{prefix}{file_name}-"), depth + 1));
                    }
                    continue;
                }
                let Some(stem) = file_name.strip_suffix(".desktop") else {
                    continue;
                };
                let id = format!("{prefix}{stem}");
                if found.iter().any(|e| e.id == id) {
                    continue;
                }
                match read_entry(&p, &id) {
                    Ok(Some(entry)) => found.push(entry),
                    Ok(None) => {}
                    Err(e) => tracing::debug!(error = %e, "skipping desktop entry"),
                }
            }
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    // covers P-APP
    #[test]
    fn exec_quoting_and_field_codes() {
        assert_eq!(parse_exec("gedit %U").unwrap(), ["gedit"]);
        assert_eq!(
            parse_exec("app --file=%f -x").unwrap(),
            ["app", "--file=", "-x"]
        );
        assert_eq!(
            parse_exec(r#""/opt/My App/run" --title "a \"b\" \$c \\d" 100%%"#).unwrap(),
            ["/opt/My App/run", "--title", r#"a "b" $c \d"#, "100%"]
        );
        assert_eq!(parse_exec("x %i %c %k %F").unwrap(), ["x"]);
        assert_eq!(parse_exec("sleep\t600").unwrap(), ["sleep", "600"]);
        for bad in [
            "", "   ", "%f", "x %z", "x %", r#""open"#, r#"a"b""#, r#""a"b"#, r#""\q""#,
        ] {
            assert!(parse_exec(bad).is_err(), "{bad:?} accepted");
        }
    }

    // covers P-APP
    #[test]
    fn entry_groups_types_and_escapes() {
        let f = Path::new("t.desktop");
        let text = "# c\n[Desktop Entry]\nType=Application\nName=Test\\sApp\nName[de]=Testprogramm\nExec=sleep 600 %U\nPath=/tmp\n[Desktop Action New]\nExec=other\n";
        let e = parse_entry(text, "t", f).unwrap().unwrap();
        assert_eq!(e.name, "Test App");
        assert_eq!(e.argv, ["sleep", "600"]);
        assert_eq!(e.working_dir, Some(PathBuf::from("/tmp")));
        assert!(
            parse_entry("[Desktop Entry]\nType=Link\nExec=x\n", "t", f)
                .unwrap()
                .is_none()
        );
        assert!(
            parse_entry("[Desktop Entry]\nHidden=true\nExec=x\n", "t", f)
                .unwrap()
                .is_none()
        );
        assert!(
            parse_entry("[Desktop Entry]\nName=x\n", "t", f)
                .unwrap()
                .is_none()
        );
        assert!(parse_entry("[Other]\nExec=x\n", "t", f).unwrap().is_none());
        assert!(parse_entry("[Desktop Entry]\nExec=x %q\n", "t", f).is_err());
    }
}
