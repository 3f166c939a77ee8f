//! A JSON value and its text, for `doctor --json`: the command has no serde, and a report of
//! strings, numbers, lists and objects needs no more than this (the same escaping as
//! `perf`'s report, written again here so that `doctor` does not depend on `perf`).

use std::fmt::Write;

/// A JSON value. Objects keep their keys in the order they were added (stable output).
#[derive(Clone, Debug, PartialEq)]
pub enum Json {
    Null,
    Bool(bool),
    Int(i64),
    Str(String),
    Array(Vec<Json>),
    Object(Vec<(String, Json)>),
}

impl Json {
    /// An object from `(key, value)` pairs.
    pub fn object<K: Into<String>>(fields: impl IntoIterator<Item = (K, Json)>) -> Json {
        Json::Object(fields.into_iter().map(|(k, v)| (k.into(), v)).collect())
    }

    /// A string, or `null` for `None`.
    pub fn opt_str(s: Option<impl Into<String>>) -> Json {
        s.map_or(Json::Null, |s| Json::Str(s.into()))
    }

    /// An array of strings.
    pub fn strings<S: Into<String>>(items: impl IntoIterator<Item = S>) -> Json {
        Json::Array(items.into_iter().map(|s| Json::Str(s.into())).collect())
    }

    /// The compact text of the value, on one line.
    pub fn render(&self) -> String {
        let mut out = String::new();
        self.write(&mut out);
        out
    }

    fn write(&self, out: &mut String) {
        match self {
            Json::Null => out.push_str("null"),
            Json::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            Json::Int(i) => {
                let _ = write!(out, "{i}");
            }
            Json::Str(s) => escape(s, out),
            Json::Array(items) => {
                out.push('[');
                for (i, v) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    v.write(out);
                }
                out.push(']');
            }
            Json::Object(fields) => {
                out.push('{');
                for (i, (k, v)) in fields.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    escape(k, out);
                    out.push(':');
                    v.write(out);
                }
                out.push('}');
            }
        }
    }
}

impl From<&str> for Json {
    fn from(s: &str) -> Json {
        Json::Str(s.to_string())
    }
}

impl From<String> for Json {
    fn from(s: String) -> Json {
        Json::Str(s)
    }
}

/// `s` as a JSON string: quotes, backslashes and control characters escaped (RFC 8259 §7;
/// everything else, non-ASCII included, is valid as it is).
fn escape(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_render_as_json() {
        let cases: [(Json, &str); 7] = [
            (Json::Null, "null"),
            (Json::Bool(true), "true"),
            (Json::Int(-3), "-3"),
            (Json::from("a\"b\\c\nd\te\u{1}é"), r#""a\"b\\c\nd\te\u0001é""#),
            (Json::Array(vec![]), "[]"),
            (Json::strings(["x", "y"]), r#"["x","y"]"#),
            (Json::object([("k", Json::Int(1)), ("n", Json::Null)]), r#"{"k":1,"n":null}"#),
        ];
        for (value, text) in cases {
            assert_eq!(value.render(), text);
        }
    }
}
