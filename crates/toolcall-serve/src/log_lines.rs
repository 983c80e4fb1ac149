//! The gateway's JSON log lines, written by hand.
//!
//! `toolcall serve` logs one JSON line per request and one per call. `tracing_subscriber`'s
//! JSON formatter wrote them through `serde_json` and an `io::Write` → `fmt::Write` adaptor
//! that checks each small piece as UTF-8: about 19 k instructions a line, 13 % of a whole
//! request's instructions in the running gateway. [`JsonLines`] writes the same line
//! straight into the subscriber's buffer: the same keys in the same order (`timestamp`,
//! `level`, `fields`, `target`), the same values (strings, numbers and booleans as
//! `tracing_serde` writes them, anything else by its `Debug` text) and the same string
//! escapes as `serde_json`. An event inside a span, or one forwarded from the `log` crate,
//! goes to `tracing_subscriber`'s own JSON formatter, which writes those parts too.
//!
//! ```no_run
//! tracing_subscriber::fmt()
//!     .json()
//!     .event_format(toolcall_serve::log_lines::JsonLines::default())
//!     .init();
//! ```

use std::fmt::{self, Write};

use tracing::field::{Field, Visit};
use tracing::{Event, Subscriber};
use tracing_subscriber::fmt::format::{Format, Json, Writer};
use tracing_subscriber::fmt::time::{FormatTime, SystemTime};
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields};
use tracing_subscriber::registry::LookupSpan;

/// The JSON event formatter of `toolcall serve` (see the module's documentation).
#[derive(Debug)]
pub struct JsonLines {
    /// `tracing_subscriber`'s JSON formatter, for events in a span or from `log`.
    general: Format<Json, SystemTime>,
}

impl Default for JsonLines {
    fn default() -> Self {
        JsonLines {
            general: tracing_subscriber::fmt::format().json(),
        }
    }
}

impl<S, N> FormatEvent<S, N> for JsonLines
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'w> FormatFields<'w> + 'static,
{
    fn format_event(
        &self,
        ctx: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        let meta = event.metadata();
        let in_span = event
            .parent()
            .and_then(|id| ctx.span(id))
            .or_else(|| ctx.lookup_current())
            .is_some();
        if in_span || meta.fields().field("log.target").is_some() {
            return self.general.format_event(ctx, writer, event);
        }
        thread_local! {
            /// The line is written here and handed to the subscriber's writer in one piece:
            /// each small write through its `Writer` (a `dyn fmt::Write`) cost more than
            /// the bytes it wrote, about half of a line's instructions (session 38).
            static LINE: std::cell::RefCell<String> = const { std::cell::RefCell::new(String::new()) };
        }
        LINE.with(|line| {
            // A field's `Debug` that logs comes back here: that line is written directly.
            let Ok(mut line) = line.try_borrow_mut() else {
                return write_line(&mut writer, event);
            };
            line.clear();
            let written = write_line(&mut *line, event);
            let handed = writer.write_str(&line);
            // A buffer grown by one long line is not kept.
            if line.capacity() > 64 * 1024 {
                *line = String::new();
            }
            written.and(handed)
        })
    }
}

/// Writes `event` (outside any span) as one JSON line.
fn write_line(out: &mut impl Write, event: &Event<'_>) -> fmt::Result {
    let meta = event.metadata();
    out.write_str("{\"timestamp\":\"")?;
    // Digits, `-`, `+`, `T`, `:`, `.` and `Z`: nothing to escape.
    write_now(out)?;
    out.write_str("\",\"level\":\"")?;
    out.write_str(meta.level().as_str())?;
    out.write_str("\",\"fields\":{")?;
    let mut fields = Fields {
        out: &mut *out,
        first: true,
        result: Ok(()),
    };
    event.record(&mut fields);
    fields.result?;
    out.write_str("},\"target\":")?;
    write_string(out, meta.target())?;
    out.write_str("}\n")
}

/// Writes the time now as `tracing_subscriber`'s [`SystemTime`] writes it (RFC 3339 in UTC,
/// to the microsecond: `2026-11-28T12:03:48.123456Z`), its date and time to the second
/// written once a second on each thread.
fn write_now(out: &mut impl Write) -> fmt::Result {
    use std::cell::Cell;
    thread_local! {
        /// The last second written, and its text up to the `.`.
        static SECOND: Cell<(u64, [u8; 19])> = const { Cell::new((u64::MAX, [0; 19])) };
    }
    let Ok(since) = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH) else {
        return SystemTime.format_time(&mut Writer::new(out));
    };
    let secs = since.as_secs();
    let (cached, mut text) = SECOND.get();
    if cached != secs {
        match second_text(secs) {
            Some(t) => text = t,
            // Beyond year 9999: tracing_subscriber's own spelling.
            None => return SystemTime.format_time(&mut Writer::new(out)),
        }
        SECOND.set((secs, text));
    }
    out.write_str(std::str::from_utf8(&text).map_err(|_| fmt::Error)?)?;
    let mut micros = *b".000000Z";
    let mut n = since.subsec_micros();
    for digit in micros[1..7].iter_mut().rev() {
        *digit = b'0' + (n % 10) as u8;
        n /= 10;
    }
    out.write_str(std::str::from_utf8(&micros).map_err(|_| fmt::Error)?)
}

/// `YYYY-MM-DDTHH:MM:SS` of `secs` since the Unix epoch, in UTC; `None` past year 9999.
fn second_text(secs: u64) -> Option<[u8; 19]> {
    if secs > 253_402_300_799 {
        return None;
    }
    // Days to a civil date (Howard Hinnant's algorithm; days since 1970-01-01 ≥ 0 here).
    let days = secs / 86_400;
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z % 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + u64::from(month <= 2);
    let time = secs % 86_400;
    let mut text = *b"0000-00-00T00:00:00";
    let mut put = |at: usize, width: usize, mut n: u64| {
        for i in (at..at + width).rev() {
            text[i] = b'0' + (n % 10) as u8;
            n /= 10;
        }
    };
    put(0, 4, year);
    put(5, 2, month);
    put(8, 2, day);
    put(11, 2, time / 3600);
    put(14, 2, time / 60 % 60);
    put(17, 2, time % 60);
    Some(text)
}

/// Writes an event's fields as the members of a JSON object.
struct Fields<'a, W: Write> {
    out: &'a mut W,
    first: bool,
    result: fmt::Result,
}

impl<W: Write> Fields<'_, W> {
    /// Writes `"name":` and then `value`, once no earlier write failed.
    fn member(&mut self, field: &Field, value: impl FnOnce(&mut W) -> fmt::Result) {
        if self.result.is_err() {
            return;
        }
        let comma = if self.first { "" } else { "," };
        self.first = false;
        self.result = self
            .out
            .write_str(comma)
            .and_then(|()| write_string(self.out, field.name()))
            .and_then(|()| self.out.write_char(':'))
            .and_then(|()| value(self.out));
    }
}

impl<W: Write> Visit for Fields<'_, W> {
    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.member(field, |out| {
            out.write_char('"')?;
            write!(Escaped(&mut *out), "{value:?}")?;
            out.write_char('"')
        });
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        self.member(field, |out| write_string(out, value));
    }

    fn record_bool(&mut self, field: &Field, value: bool) {
        self.member(field, |out| {
            out.write_str(if value { "true" } else { "false" })
        });
    }

    fn record_u64(&mut self, field: &Field, value: u64) {
        self.member(field, |out| write!(out, "{value}"));
    }

    fn record_i64(&mut self, field: &Field, value: i64) {
        self.member(field, |out| write!(out, "{value}"));
    }

    fn record_f64(&mut self, field: &Field, value: f64) {
        // As serde_json writes it (shortest round trip; `null` when not finite).
        self.member(field, |out| match serde_json::to_string(&value) {
            Ok(text) => out.write_str(&text),
            Err(_) => out.write_str("null"),
        });
    }
}

/// `s` as a JSON string.
fn write_string(out: &mut impl Write, s: &str) -> fmt::Result {
    out.write_char('"')?;
    Escaped(&mut *out).write_str(s)?;
    out.write_char('"')
}

/// The bytes a JSON string escapes: `"`, `\\` and the control characters.
const NEEDS_ESCAPE: [bool; 256] = {
    let mut table = [false; 256];
    let mut b = 0;
    while b < 0x20 {
        table[b] = true;
        b += 1;
    }
    table[b'"' as usize] = true;
    table[b'\\' as usize] = true;
    table
};

/// Text written through this is escaped for the inside of a JSON string, as `serde_json`
/// escapes it: `"` and `\`, the short escapes `\b \f \n \r \t`, every other control
/// character as `\u00XX`; everything else as is.
struct Escaped<'a, W: Write>(&'a mut W);

impl<W: Write> Write for Escaped<'_, W> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        let bytes = s.as_bytes();
        let mut start = 0;
        for (i, &b) in bytes.iter().enumerate() {
            if !NEEDS_ESCAPE[usize::from(b)] {
                continue;
            }
            let short = match b {
                b'"' => "\\\"",
                b'\\' => "\\\\",
                b'\n' => "\\n",
                b'\r' => "\\r",
                b'\t' => "\\t",
                0x08 => "\\b",
                0x0c => "\\f",
                0..=0x1f => "",
                _ => continue,
            };
            // `i` is at an ASCII byte: a char boundary.
            self.0.write_str(&s[start..i])?;
            if short.is_empty() {
                const HEX: &[u8; 16] = b"0123456789abcdef";
                self.0.write_str("\\u00")?;
                self.0.write_char(char::from(HEX[usize::from(b >> 4)]))?;
                self.0.write_char(char::from(HEX[usize::from(b & 0xf)]))?;
            } else {
                self.0.write_str(short)?;
            }
            start = i + 1;
        }
        self.0.write_str(&s[start..])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seconds_are_written_as_tracing_subscriber_writes_them() {
        let text = |secs| String::from_utf8(second_text(secs).unwrap().to_vec()).unwrap();
        assert_eq!(text(0), "1970-01-01T00:00:00");
        assert_eq!(text(951_782_400), "2000-02-29T00:00:00");
        assert_eq!(text(951_868_799), "2000-02-29T23:59:59");
        assert_eq!(text(951_868_800), "2000-03-01T00:00:00");
        assert_eq!(text(1_795_868_628), "2026-11-28T12:23:48");
        assert_eq!(text(4_107_542_399), "2100-02-28T23:59:59");
        assert_eq!(text(4_107_542_400), "2100-03-01T00:00:00");
        assert_eq!(text(253_402_300_799), "9999-12-31T23:59:59");
        assert_eq!(second_text(253_402_300_800), None);
        // Now, beside tracing_subscriber's own text (again if a second passed in between).
        for _ in 0..3 {
            let mut theirs = String::new();
            SystemTime
                .format_time(&mut Writer::new(&mut theirs))
                .unwrap();
            let mut ours = String::new();
            write_now(&mut Writer::new(&mut ours)).unwrap();
            assert_eq!(ours.len(), theirs.len(), "{ours} {theirs}");
            if ours[..19] == theirs[..19] {
                assert!(ours.ends_with('Z') && ours.as_bytes()[19] == b'.', "{ours}");
                return;
            }
        }
        panic!("the seconds never agreed");
    }

    #[test]
    fn strings_are_escaped_as_serde_json_escapes_them() {
        let all: String = (0u32..0x80)
            .filter_map(char::from_u32)
            .chain("é ü 中 😀 \u{2028}".chars())
            .collect();
        for s in [
            "",
            "plain",
            "a\"b\\c",
            "\n\r\t\u{8}\u{c}\u{0}\u{1f}\u{7f}",
            &all,
        ] {
            let mut out = String::new();
            write_string(&mut out, s).unwrap();
            assert_eq!(out, serde_json::to_string(s).unwrap(), "{s:?}");
        }
    }
}
