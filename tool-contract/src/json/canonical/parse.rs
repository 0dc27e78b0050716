//! Reads a JSON text into a tree that keeps member order and refuses duplicate names.
//!
//! serde_json does the reading (syntax, UTF-8, escapes, lone surrogates, numbers to the
//! nearest double with `float_roundtrip`, nesting within `MAX_NESTING`); this visitor only keeps
//! what `serde_json::Value` would lose: a repeated member name.

use std::borrow::Cow;
use std::cell::RefCell;
use std::fmt;

use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};

use super::error::CanonicalError;
use super::order::cmp_utf16;
use crate::json::depth::{self, Deep};

/// A parsed JSON value; strings borrow from the input when they hold no escape.
#[derive(Debug)]
pub(super) enum Node<'a> {
    Null,
    Bool(bool),
    Integer(i64),
    Double(f64),
    String(Cow<'a, str>),
    Array(Vec<Node<'a>>),
    /// Members sorted by [`cmp_utf16`], names unique.
    Object(Vec<(Cow<'a, str>, Node<'a>)>),
}

pub(super) fn parse(json: &[u8]) -> Result<Node<'_>, CanonicalError> {
    let duplicate = RefCell::new(None);
    let mut deserializer = depth::reader(json).map_err(|deep| CanonicalError::Invalid {
        line: deep.line,
        column: deep.column,
        reason: Deep::reason(),
    })?;
    let node = deserializer
        .deserialize_any(NodeVisitor {
            duplicate: &duplicate,
        })
        .and_then(|node| deserializer.end().map(|()| node));
    node.map_err(|error| match duplicate.into_inner() {
        Some(name) => CanonicalError::DuplicateKey { name },
        None => CanonicalError::Invalid {
            line: error.line(),
            column: error.column(),
            reason: reason_of(&error),
        },
    })
}

/// serde_json appends " at line L column C" to messages; the error carries both separately.
fn reason_of(error: &serde_json::Error) -> String {
    let text = error.to_string();
    match text.rfind(" at line ") {
        Some(at) => text[..at].to_owned(),
        None => text,
    }
}

/// Where a repeated member name is put, so the error can name it (serde's errors are text).
type DuplicateSlot<'s> = &'s RefCell<Option<String>>;

#[derive(Clone, Copy)]
struct NodeVisitor<'s> {
    duplicate: DuplicateSlot<'s>,
}

impl<'de> Visitor<'de> for NodeVisitor<'_> {
    type Value = Node<'de>;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("a JSON value")
    }

    fn visit_unit<E>(self) -> Result<Node<'de>, E> {
        Ok(Node::Null)
    }

    fn visit_bool<E>(self, value: bool) -> Result<Node<'de>, E> {
        Ok(Node::Bool(value))
    }

    fn visit_i64<E>(self, value: i64) -> Result<Node<'de>, E> {
        Ok(Node::Integer(value))
    }

    fn visit_u64<E>(self, value: u64) -> Result<Node<'de>, E> {
        Ok(i64::try_from(value).map_or(Node::Double(value as f64), Node::Integer))
    }

    fn visit_f64<E>(self, value: f64) -> Result<Node<'de>, E> {
        Ok(Node::Double(value))
    }

    fn visit_borrowed_str<E>(self, value: &'de str) -> Result<Node<'de>, E> {
        Ok(Node::String(Cow::Borrowed(value)))
    }

    fn visit_str<E>(self, value: &str) -> Result<Node<'de>, E> {
        Ok(Node::String(Cow::Owned(value.to_owned())))
    }

    fn visit_string<E>(self, value: String) -> Result<Node<'de>, E> {
        Ok(Node::String(Cow::Owned(value)))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Node<'de>, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element_seed(self)? {
            items.push(item);
        }
        Ok(Node::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Node<'de>, A::Error> {
        let mut members: Vec<(Cow<'de, str>, Node<'de>)> = Vec::new();
        while let Some(name) = map.next_key_seed(NameSeed)? {
            let value = map.next_value_seed(self)?;
            members.push((name, value));
        }
        members.sort_by(|(a, _), (b, _)| cmp_utf16(a, b));
        if let Some(pair) = members.windows(2).find(|pair| pair[0].0 == pair[1].0) {
            *self.duplicate.borrow_mut() = Some(pair[0].0.clone().into_owned());
            return Err(de::Error::custom("duplicate member name"));
        }
        Ok(Node::Object(members))
    }
}

impl<'de> de::DeserializeSeed<'de> for NodeVisitor<'_> {
    type Value = Node<'de>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Node<'de>, D::Error> {
        deserializer.deserialize_any(self)
    }
}

/// Member names: strings only (serde_json guarantees it), borrowed when unescaped.
struct NameSeed;

impl<'de> de::DeserializeSeed<'de> for NameSeed {
    type Value = Cow<'de, str>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_str(NameVisitor)
    }
}

struct NameVisitor;

impl<'de> Visitor<'de> for NameVisitor {
    type Value = Cow<'de, str>;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("a member name")
    }

    fn visit_borrowed_str<E>(self, value: &'de str) -> Result<Self::Value, E> {
        Ok(Cow::Borrowed(value))
    }

    fn visit_str<E>(self, value: &str) -> Result<Self::Value, E> {
        Ok(Cow::Owned(value.to_owned()))
    }
}
