//! Tables for a person: comfy-table (colour and borders only on a terminal, and
//! `NO_COLOR` honoured), times in local time, long values cut.
//!
//! Every cell and footer is shown, never obeyed: a character that could drive the
//! terminal or reorder the row (a control such as ESC, a bidirectional control such as
//! U+202E: [`transcope_core::quote::is_unsafe`]) is escaped as `\u{1b}`, `\u{202e}`.
//! `--json` prints the data exactly as recorded instead.
//!
//! A column of IDs (session keys, project ids, and any value a filter takes back) is
//! [`Table::whole`]: never cut, and on a narrow terminal the other columns wrap
//! instead, so an ID read from a table pasted into the next command works. No line
//! ends in spaces.

use std::io::{IsTerminal, Write};
use std::sync::OnceLock;

use comfy_table::{presets, Attribute, Cell, ColumnConstraint, ContentArrangement, TableComponent};
use transcope_core::quote::escape_unsafe;

/// The local offset, read once at start-up (before any thread: the `time` crate only
/// reads it from a single-threaded process).
static OFFSET: OnceLock<time::UtcOffset> = OnceLock::new();

/// Read the local offset now (call first thing in `main`).
pub fn init_local_offset() {
    let _ = OFFSET.set(time::UtcOffset::current_local_offset().unwrap_or(time::UtcOffset::UTC));
}

/// A recorded time in local time (`YYYY-MM-DD HH:MM:SS`), or the text as it is when it
/// is not a time.
pub fn local_time(at: &str) -> String {
    let Some(t) = transcope_core::timestamp::parse(at) else {
        return at.to_owned();
    };
    let offset = OFFSET.get().copied().unwrap_or(time::UtcOffset::UTC);
    let nanos = i128::from(t.unix_micros()) * 1000;
    match time::OffsetDateTime::from_unix_timestamp_nanos(nanos) {
        Ok(d) => {
            let d = d.to_offset(offset);
            let fmt =
                time::macros::format_description!("[year]-[month]-[day] [hour]:[minute]:[second]");
            d.format(&fmt).unwrap_or_else(|_| at.to_owned())
        }
        Err(_) => at.to_owned(),
    }
}

/// `s` cut to `max` characters, the cut marked with `…`; line breaks and tabs shown as
/// spaces, any other unsafe character escaped ([`escape_unsafe`]).
pub fn cut(s: &str, max: usize) -> String {
    let spaced: String = s
        .chars()
        .map(|c| {
            if matches!(c, '\n' | '\r' | '\t') {
                ' '
            } else {
                c
            }
        })
        .collect();
    if spaced.chars().count() <= max {
        return escape_unsafe(&spaced).into_owned();
    }
    let mut out: String = spaced.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    escape_unsafe(&out).into_owned()
}

/// `n` and `word`, plural unless `n` is 1 (`1 session`, `12 sessions`).
pub fn count(n: u64, word: &str) -> String {
    if n == 1 {
        format!("1 {word}")
    } else {
        format!("{n} {word}s")
    }
}

/// A table being filled.
pub struct Table {
    inner: comfy_table::Table,
    rows: usize,
}

impl Table {
    /// A table with `header` (a header of empty names prints none).
    pub fn new(header: &[&str]) -> Table {
        Table::for_output(header, std::io::stdout().is_terminal(), None)
    }

    /// A table for a terminal (`tty`: fitted to its width, or `width` columns) or
    /// not (every cell whole).
    fn for_output(header: &[&str], tty: bool, width: Option<u16>) -> Table {
        let mut inner = comfy_table::Table::new();
        if let Some(w) = width {
            inner.set_width(w);
        }
        inner
            .load_preset(if tty {
                presets::UTF8_HORIZONTAL_ONLY
            } else {
                presets::ASCII_HORIZONTAL_ONLY
            })
            .set_content_arrangement(if tty {
                ContentArrangement::Dynamic
            } else {
                ContentArrangement::Disabled
            });
        // A line under the header, none between rows.
        for c in [
            TableComponent::HorizontalLines,
            TableComponent::MiddleIntersections,
            TableComponent::LeftBorderIntersections,
            TableComponent::RightBorderIntersections,
            TableComponent::TopBorder,
            TableComponent::TopBorderIntersections,
            TableComponent::BottomBorder,
            TableComponent::BottomBorderIntersections,
        ] {
            inner.remove_style(c);
        }
        if !tty || std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty()) {
            inner.force_no_tty();
        }
        if header.iter().any(|h| !h.is_empty()) {
            inner.set_header(
                header
                    .iter()
                    .map(|h| Cell::new(h).add_attribute(Attribute::Bold)),
            );
        }
        Table { inner, rows: 0 }
    }

    /// Keep the columns `columns` (by place) whole: never cut or wrapped, the others
    /// wrap first.
    pub fn whole(&mut self, columns: &[usize]) -> &mut Table {
        for &c in columns {
            if let Some(col) = self.inner.column_mut(c) {
                col.set_constraint(ColumnConstraint::ContentWidth);
            }
        }
        self
    }

    /// Add a row (each cell escaped: see the [module](self) documentation).
    pub fn row(&mut self, cells: Vec<String>) {
        self.inner
            .add_row(cells.iter().map(|c| escape_unsafe(c).into_owned()));
        self.rows += 1;
    }

    /// Print the table and, when given, a footer line (`footer` alone when empty).
    pub fn print(&self, out: &mut impl Write, footer: &str) -> std::io::Result<()> {
        let mut text = String::new();
        if self.rows > 0 {
            // The padding of a row's last cells is not kept: no line ends in spaces.
            for line in self.inner.lines() {
                text.push_str(line.trim_end_matches(' '));
                text.push('\n');
            }
        }
        if !footer.is_empty() {
            text.push_str(&escape_unsafe(footer));
            text.push('\n');
        }
        match out.write_all(text.as_bytes()) {
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
            r => r,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// On a terminal narrower than the table, the ID column stays whole and the
    /// others wrap; no line ends in a space (issue 34).
    #[test]
    fn a_narrow_terminal_wraps_other_columns_never_an_id() {
        let id = "ef958aa1-0e93-49f0-bb71-150f63befcd1.a4ca752985dd4f2a1";
        let mut t = Table::for_output(&["session", "content", "state"], true, Some(60));
        t.whole(&[0]);
        t.row(vec![
            id.into(),
            "a long sentence that has to wrap somewhere on a narrow screen".into(),
            "pending".into(),
        ]);
        let mut out = Vec::new();
        t.print(&mut out, "1 marker").unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(text.contains(id), "{text}");
        assert!(text.lines().all(|l| !l.ends_with(' ')), "{text:?}");
        assert!(text.lines().count() > 4, "the content wrapped: {text}");
    }

    #[test]
    fn counts_are_singular_for_one() {
        assert_eq!(count(1, "session"), "1 session");
        assert_eq!(count(0, "session"), "0 sessions");
        assert_eq!(count(12, "file"), "12 files");
    }
}
