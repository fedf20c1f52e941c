//! Markdown's table syntax, which every Markdown text of the runner writes: the report
//! (`markdown`), its targets section (`targets`) and the instruction counts.

use std::fmt::{Display, Write};

/// A Markdown table's header and separator rows: the `text` columns left-aligned, then the
/// `numbers` columns right-aligned.
pub fn header(text: &[&str], numbers: &[&str]) -> String {
    let mut out = row(text.iter().chain(numbers));
    out.push('|');
    out.push_str(&"---|".repeat(text.len()));
    out.push_str(&"---:|".repeat(numbers.len()));
    out.push('\n');
    out
}

/// One line of a Markdown table.
pub fn row(cells: impl IntoIterator<Item = impl Display>) -> String {
    let mut out = String::from("|");
    for cell in cells {
        let _ = write!(out, " {cell} |");
    }
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use super::{header, row};

    #[test]
    fn names_align_left_and_numbers_right() {
        assert_eq!(
            header(&["allocator"], &["a", "b"]),
            "| allocator | a | b |\n|---|---:|---:|\n"
        );
        assert_eq!(
            header(&["name", "what"], &[]),
            "| name | what |\n|---|---|\n"
        );
        assert_eq!(row(["x", "1.0"]), "| x | 1.0 |\n");
    }
}
