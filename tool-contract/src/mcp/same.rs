//! Whether the bytes kept of a call's arguments say what rmcp read of them, compared while
//! they are read: no second `Value` is built for a request that matches, which is every
//! request but a strange one.

use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};

/// `Some(true)` when `kept` reads as `read` (numbers as serde_json's `Value` holds them,
/// every member once); `None` when that cannot be told without building `kept`'s `Value`
/// (a difference, a repeated member, text that does not parse).
pub(super) fn reads_as(kept: &[u8], read: &Map<String, Value>) -> Option<bool> {
    let mut reader = crate::json::depth::reader(kept).ok()?;
    Same(Expected::Members(read))
        .deserialize(&mut reader)
        .ok()?;
    reader.end().ok()?;
    Some(true)
}

/// What one kept value must read as.
#[derive(Clone, Copy)]
enum Expected<'v> {
    Value(&'v Value),
    /// The members of an object.
    Members(&'v Map<String, Value>),
}

/// Reads one value and fails at the first difference (an error ends the reading at once).
struct Same<'v>(Expected<'v>);

fn differs<E: de::Error>() -> E {
    E::custom("differs")
}

impl<'de> DeserializeSeed<'de> for Same<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl Same<'_> {
    fn number(self, number: Number) -> bool {
        matches!(self.0, Expected::Value(Value::Number(read)) if *read == number)
    }

    fn check<E: de::Error>(holds: bool) -> Result<(), E> {
        if holds { Ok(()) } else { Err(differs()) }
    }
}

impl<'de> Visitor<'de> for Same<'_> {
    type Value = ();

    fn expecting(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str("the value rmcp read")
    }

    fn visit_bool<E: de::Error>(self, kept: bool) -> Result<(), E> {
        Self::check(matches!(self.0, Expected::Value(Value::Bool(read)) if *read == kept))
    }

    fn visit_i64<E: de::Error>(self, kept: i64) -> Result<(), E> {
        Self::check(self.number(Number::from(kept)))
    }

    fn visit_u64<E: de::Error>(self, kept: u64) -> Result<(), E> {
        Self::check(self.number(Number::from(kept)))
    }

    fn visit_f64<E: de::Error>(self, kept: f64) -> Result<(), E> {
        Self::check(Number::from_f64(kept).is_some_and(|kept| self.number(kept)))
    }

    fn visit_str<E: de::Error>(self, kept: &str) -> Result<(), E> {
        Self::check(matches!(self.0, Expected::Value(Value::String(read)) if read == kept))
    }

    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        Self::check(matches!(self.0, Expected::Value(Value::Null)))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut kept: A) -> Result<(), A::Error> {
        let Expected::Value(Value::Array(read)) = self.0 else {
            return Err(differs());
        };
        for item in read {
            kept.next_element_seed(Same(Expected::Value(item)))?
                .ok_or_else(differs)?;
        }
        Self::check(kept.next_element::<IgnoredAny>()?.is_none())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut kept: A) -> Result<(), A::Error> {
        let read = match self.0 {
            Expected::Members(read) | Expected::Value(Value::Object(read)) => read,
            Expected::Value(_) => return Err(differs()),
        };
        // Each read member at most once: where it lives in `read` names it.
        let mut found: Vec<*const Value> = Vec::with_capacity(read.len());
        while let Some(key) = kept.next_key::<Key<'de>>()? {
            let value = read.get(key.as_str()).ok_or_else(differs)?;
            kept.next_value_seed(Same(Expected::Value(value)))?;
            found.push(value);
        }
        found.sort_unstable();
        found.dedup();
        Self::check(found.len() == read.len())
    }
}

/// A member's name, borrowed from the kept bytes when it holds no escape.
enum Key<'de> {
    Borrowed(&'de str),
    Owned(String),
}

impl Key<'_> {
    fn as_str(&self) -> &str {
        match self {
            Key::Borrowed(key) => key,
            Key::Owned(key) => key,
        }
    }
}

impl<'de> de::Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct KeyVisitor;

        impl<'de> Visitor<'de> for KeyVisitor {
            type Value = Key<'de>;

            fn expecting(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                formatter.write_str("a member's name")
            }

            fn visit_borrowed_str<E: de::Error>(self, key: &'de str) -> Result<Key<'de>, E> {
                Ok(Key::Borrowed(key))
            }

            fn visit_str<E: de::Error>(self, key: &str) -> Result<Key<'de>, E> {
                Ok(Key::Owned(key.to_owned()))
            }
        }

        deserializer.deserialize_str(KeyVisitor)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn members(value: Value) -> Map<String, Value> {
        match value {
            Value::Object(members) => members,
            _ => Map::new(),
        }
    }

    #[test]
    fn the_same_arguments_read_as_read_without_a_value() {
        let read = members(json!({
            "s": "x\u{e9}", "n": -3, "u": 7, "f": 1.5, "b": true, "z": null,
            "a": [1, {"k": "v"}], "o": {}
        }));
        let kept =
            br#"{"o":{},"a":[1,{"k":"v"}],"z":null,"b":true,"f":1.5,"u":7,"n":-3,"s":"x\u00e9"}"#;
        assert_eq!(reads_as(kept, &read), Some(true));
    }

    #[test]
    fn any_difference_leaves_it_to_the_full_reading() {
        let read = members(json!({ "a": 1, "b": [1, 2] }));
        for kept in [
            &br#"{"a":1}"#[..],
            br#"{"a":1,"b":[1,2],"c":0}"#,
            br#"{"a":2,"b":[1,2]}"#,
            br#"{"a":1.0,"b":[1,2]}"#,
            br#"{"a":1,"b":[1]}"#,
            br#"{"a":1,"b":[1,2,3]}"#,
            br#"{"a":"1","b":[1,2]}"#,
            br#"{"a":1,"a":1}"#,
            br#"{"a":1,"b":[1,2]} x"#,
            br#"[1]"#,
            b"{",
        ] {
            assert_eq!(
                reads_as(kept, &read),
                None,
                "{}",
                String::from_utf8_lossy(kept)
            );
        }
    }
}
