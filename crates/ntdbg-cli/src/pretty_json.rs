//! serde_json's pretty layout (two-space indents), byte for byte, with each line break and its
//! indent written in one piece.
//!
//! `serde_json::PrettyFormatter` writes an indent one level at a time: a frame's field in
//! `ntdbg run --json` sits six levels deep, so most of the writes of a long stack were two
//! spaces each.

use serde::Serialize;
use serde_json::ser::Formatter;
use std::io::{self, Write};

/// `,` then a line break then indents: every break is a slice of it.
const BREAK: &[u8] = b",\n                                                                ";

/// The pretty formatter.
#[derive(Default)]
struct Pretty {
    /// Nesting depth (levels of two spaces).
    depth: usize,
    /// Whether the innermost open array or object has a value yet.
    has_value: bool,
}

impl Pretty {
    /// A line break (after a comma unless `first`) indented to the current depth.
    fn line_break<W: ?Sized + Write>(&self, out: &mut W, first: bool) -> io::Result<()> {
        let from = usize::from(first);
        let mut spaces = self.depth * 2;
        let room = BREAK.len() - 2;
        let head = spaces.min(room);
        out.write_all(&BREAK[from..2 + head])?;
        spaces -= head;
        while spaces > 0 {
            let more = spaces.min(room);
            out.write_all(&BREAK[2..2 + more])?;
            spaces -= more;
        }
        Ok(())
    }

    /// Closes an array or object with `close`, on its own line when it had values.
    fn close<W: ?Sized + Write>(&mut self, out: &mut W, close: &[u8]) -> io::Result<()> {
        self.depth -= 1;
        if self.has_value {
            self.line_break(out, true)?;
        }
        out.write_all(close)
    }

    /// Opens an array or object with `open`.
    fn open<W: ?Sized + Write>(&mut self, out: &mut W, open: &[u8]) -> io::Result<()> {
        self.depth += 1;
        self.has_value = false;
        out.write_all(open)
    }
}

impl Formatter for Pretty {
    fn begin_array<W: ?Sized + Write>(&mut self, out: &mut W) -> io::Result<()> {
        self.open(out, b"[")
    }

    fn end_array<W: ?Sized + Write>(&mut self, out: &mut W) -> io::Result<()> {
        self.close(out, b"]")
    }

    fn begin_array_value<W: ?Sized + Write>(&mut self, out: &mut W, first: bool) -> io::Result<()> {
        self.line_break(out, first)
    }

    fn end_array_value<W: ?Sized + Write>(&mut self, _out: &mut W) -> io::Result<()> {
        self.has_value = true;
        Ok(())
    }

    fn begin_object<W: ?Sized + Write>(&mut self, out: &mut W) -> io::Result<()> {
        self.open(out, b"{")
    }

    fn end_object<W: ?Sized + Write>(&mut self, out: &mut W) -> io::Result<()> {
        self.close(out, b"}")
    }

    fn begin_object_key<W: ?Sized + Write>(&mut self, out: &mut W, first: bool) -> io::Result<()> {
        self.line_break(out, first)
    }

    fn begin_object_value<W: ?Sized + Write>(&mut self, out: &mut W) -> io::Result<()> {
        out.write_all(b": ")
    }

    fn end_object_value<W: ?Sized + Write>(&mut self, _out: &mut W) -> io::Result<()> {
        self.has_value = true;
        Ok(())
    }
}

/// Writes `value` as pretty-printed JSON, exactly as `serde_json::to_writer_pretty` does.
pub fn to_writer_pretty<W: Write, T: ?Sized + Serialize>(
    out: W,
    value: &T,
) -> serde_json::Result<()> {
    value.serialize(&mut serde_json::Serializer::with_formatter(
        out,
        Pretty::default(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pretty(value: &serde_json::Value) -> String {
        let mut out = Vec::new();
        to_writer_pretty(&mut out, value).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn lays_out_as_serde_json_does() {
        let value = json!([
            {"a": [1, [], {}, [[]], {"b": null}], "c": "x\n\"y\"", "d": {"e": {"f": [true]}}},
            [],
            {},
            1.5
        ]);
        assert_eq!(
            pretty(&value),
            serde_json::to_string_pretty(&value).unwrap()
        );
    }

    #[test]
    fn indents_deeper_than_one_break_holds() {
        let mut value = json!([1, 2]);
        for _ in 0..70 {
            value = json!({ "k": [value, 3] });
        }
        assert_eq!(
            pretty(&value),
            serde_json::to_string_pretty(&value).unwrap()
        );
    }
}
