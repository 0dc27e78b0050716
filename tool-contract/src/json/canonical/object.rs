//! Canonical objects of known members, written in one pass: the digest objects (request,
//! result, call binding, contract, principal), whose member names are fixed at compile time.

use super::write::write_str;
use crate::json::scan::find_string_special;

/// A member name as RFC 8785 writes it, with its colon: `"name":`. Only for plain ASCII names
/// with nothing to escape, so the text is its canonical form, fixed at compile time; each
/// object lists its members in canonical order (ASCII: byte order is UTF-16 order).
macro_rules! member_name {
    ($name:literal) => {
        concat!("\"", $name, "\":").as_bytes()
    };
}
pub(crate) use member_name;

/// A member's value, by how it becomes canonical JSON.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Field<'a> {
    /// Text from outside: escaped as it is written.
    Str(&'a str),
    /// Such text, or `null`.
    OptStr(Option<&'a str>),
    /// Text with nothing to escape (a domain, an API's name, a hex digest): written between
    /// quotes as it is.
    Plain(&'a str),
    /// Already canonical JSON.
    Json(&'a [u8]),
}

impl Field<'static> {
    /// `null`.
    pub(crate) const NULL: Self = Field::Json(b"null");
}

/// Feeds the canonical form of an object to `sink`, in one pass: `members` are its names (from
/// [`member_name!`], in canonical order) and values.
pub(crate) fn write_object(sink: &mut impl FnMut(&[u8]), members: &[(&[u8], Field<'_>)]) {
    debug_assert!(
        members.windows(2).all(|pair| pair[0].0 < pair[1].0),
        "members in canonical order"
    );
    // Room for the largest digest object (the call binding) without growing: what would not
    // fit (a model result, large arguments) goes to the sink as it is, never copied.
    let mut scratch = Vec::with_capacity(1024);
    scratch.push(b'{');
    for (index, (name, value)) in members.iter().enumerate() {
        if index > 0 {
            scratch.push(b',');
        }
        scratch.extend_from_slice(name);
        match *value {
            Field::Str(text) | Field::OptStr(Some(text)) => write_str(&mut scratch, text),
            Field::OptStr(None) => scratch.extend_from_slice(b"null"),
            Field::Plain(text) => {
                debug_assert_eq!(
                    find_string_special(text.as_bytes(), 0),
                    text.len(),
                    "plain text has nothing to escape"
                );
                scratch.push(b'"');
                scratch.extend_from_slice(text.as_bytes());
                scratch.push(b'"');
            }
            Field::Json(bytes) if scratch.len() + bytes.len() < scratch.capacity() => {
                scratch.extend_from_slice(bytes);
            }
            Field::Json(bytes) => {
                sink(&scratch);
                scratch.clear();
                sink(bytes);
            }
        }
    }
    scratch.push(b'}');
    sink(&scratch);
}

#[cfg(test)]
mod tests {
    use super::{Field, write_object};

    fn written(members: &[(&[u8], Field<'_>)]) -> String {
        let mut out = Vec::new();
        write_object(&mut |bytes: &[u8]| out.extend_from_slice(bytes), members);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn an_object_is_written_as_serde_jcs_writes_it_whether_values_are_copied_or_streamed() {
        let long = format!("[\"{}\"]", "x".repeat(3000));
        for json in ["[1,2]", long.as_str()] {
            let members = [
                (member_name!("a"), Field::Str("q\"\n\u{1}é")),
                (member_name!("b"), Field::OptStr(None)),
                (member_name!("c"), Field::OptStr(Some("t"))),
                (member_name!("d"), Field::Plain("abc123")),
                (member_name!("e"), Field::Json(json.as_bytes())),
                (member_name!("f"), Field::NULL),
            ];
            let expected = serde_jcs::to_string(&serde_json::json!({
                "a": "q\"\n\u{1}é",
                "b": null,
                "c": "t",
                "d": "abc123",
                "e": serde_json::from_str::<serde_json::Value>(json).unwrap(),
                "f": null,
            }))
            .unwrap();
            assert_eq!(written(&members), expected);
        }
    }
}
