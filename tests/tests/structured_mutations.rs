//! Structured property tests: valid outputs of a contract are generated, then changed at one
//! place, at any depth, in one way (a wrong type, a field extra or missing, a duplicate key, a
//! number no field can hold, nesting past the limit, a forbidden key in another spelling).
//! Every valid document is accepted as it is; every changed one is refused with the violation
//! that change calls for, at the place it was made; nothing panics.

use proptest::prelude::*;
use serde_json::{Map, Value, json};
use tool_contract::json::canonical;
use tool_contract::{ToolContract, ToolOutput, ViolationKind};

/// Find a shipment.
#[derive(serde::Deserialize, ToolContract)]
#[tool_contract(output = Shipment, effect = read_only, source_label = "shipping",
                producer_revision = "ship-1")]
struct FindShipment {}

#[derive(Debug, serde::Serialize, ToolOutput)]
struct Shipment {
    #[tool_output(max_len = 20)]
    id: String,
    #[tool_output(minimum = 0, maximum = 1000)]
    parcels: u16,
    express: bool,
    #[tool_output(max_len = 40)]
    note: Option<String>,
    #[tool_output(max_items = 3)]
    legs: Vec<Leg>,
    #[tool_output(free_form(max_depth = 6, max_bytes = 4096))]
    meta: Value,
}

#[derive(Debug, serde::Serialize, ToolOutput)]
struct Leg {
    #[tool_output(max_len = 10)]
    from: String,
    #[tool_output(minimum = -100, maximum = 100)]
    hours: i32,
    #[tool_output(max_items = 3)]
    stops: Vec<Stop>,
}

#[derive(Debug, serde::Serialize, ToolOutput)]
struct Stop {
    #[tool_output(max_len = 10)]
    name: String,
    minutes: u32,
}

fn text(max: usize) -> impl Strategy<Value = String> {
    proptest::collection::vec(
        prop_oneof![
            Just('a'),
            Just('é'),
            Just(' '),
            Just('"'),
            Just('\\'),
            Just('\u{1F600}')
        ],
        0..=max,
    )
    .prop_map(|chars| chars.into_iter().collect())
}

fn stop() -> impl Strategy<Value = Value> {
    (text(10), 0_u32..100_000)
        .prop_map(|(name, minutes)| json!({ "name": name, "minutes": minutes }))
}

fn leg() -> impl Strategy<Value = Value> {
    (
        text(10),
        -100_i32..=100,
        proptest::collection::vec(stop(), 0..=3),
    )
        .prop_map(|(from, hours, stops)| json!({ "from": from, "hours": hours, "stops": stops }))
}

/// Free-form values within the field's limits, without forbidden keys.
fn meta() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        (-1_000_000_i64..1_000_000).prop_map(Value::from),
        text(8).prop_map(Value::from),
    ];
    leaf.prop_recursive(3, 12, 3, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..3).prop_map(Value::from),
            proptest::collection::btree_map(
                prop_oneof![Just("a"), Just("size"), Just("colour")],
                inner,
                0..3
            )
            .prop_map(|map| Value::Object(
                map.into_iter().map(|(k, v)| (k.to_owned(), v)).collect()
            )),
        ]
    })
}

fn shipment() -> impl Strategy<Value = Value> {
    (
        text(20),
        0_u16..=1000,
        any::<bool>(),
        proptest::option::of(text(40)),
        proptest::collection::vec(leg(), 0..=3),
        meta(),
    )
        .prop_map(|(id, parcels, express, note, legs, meta)| {
            json!({ "id": id, "parcels": parcels, "express": express, "note": note, "legs": legs, "meta": meta })
        })
}

/// A place in a document where the contract declares something.
#[derive(Debug, Clone)]
enum Place {
    /// A declared field of a struct object: its pointer, and the struct's.
    Field { pointer: String, parent: String },
    /// The free-form value.
    FreeForm(String),
}

/// Every declared place of a valid shipment, at every depth.
fn places(document: &Value) -> Vec<Place> {
    let mut places = Vec::new();
    let mut structs = vec![String::new()];
    while let Some(parent) = structs.pop() {
        let Some(Value::Object(object)) = document.pointer(&parent) else {
            continue;
        };
        for (key, value) in object {
            let pointer = format!("{parent}/{key}");
            if key == "meta" {
                places.push(Place::FreeForm(pointer));
                continue;
            }
            places.push(Place::Field {
                pointer: pointer.clone(),
                parent: parent.clone(),
            });
            if let Value::Array(items) = value {
                structs.extend((0..items.len()).map(|index| format!("{pointer}/{index}")));
            }
        }
    }
    places
}

/// One change.
#[derive(Debug, Clone, Copy)]
enum Change {
    WrongType,
    Missing,
    Extra,
    Duplicate,
    BadNumber,
    TooDeep,
    ForbiddenKey(usize),
}

fn change() -> impl Strategy<Value = Change> {
    prop_oneof![
        Just(Change::WrongType),
        Just(Change::Missing),
        Just(Change::Extra),
        Just(Change::Duplicate),
        Just(Change::BadNumber),
        Just(Change::TooDeep),
        (0..SPELLINGS.len()).prop_map(Change::ForbiddenKey),
    ]
}

/// Forbidden words, spelled as an attacker would spell them.
const SPELLINGS: [&str; 10] = [
    "token",
    "to\u{2060}ken",
    "pass\u{00AD}word",
    "\u{FF54}\u{FF4F}\u{FF4B}\u{FF45}\u{FF4E}",
    "api key",
    "api.key",
    "aws_secret_access_key",
    "SecretAccessKey",
    "bearer",
    "jwt",
];

/// A value of another JSON type than `value`.
fn other_type(value: &Value) -> Value {
    match value {
        Value::String(_) => json!(7),
        Value::Number(_) => json!("7"),
        Value::Bool(_) => json!("true"),
        Value::Null => json!(false),
        Value::Array(_) => json!({}),
        Value::Object(_) => json!([]),
    }
}

/// JSON text of `value`, with the first member of the object at `duplicate_in` written twice.
fn write(value: &Value, at: &str, duplicate_in: Option<&str>, out: &mut String) {
    match value {
        Value::Object(object) => {
            out.push('{');
            let mut first = true;
            for (index, (key, member)) in object.iter().enumerate() {
                let times = if index == 0 && duplicate_in == Some(at) {
                    2
                } else {
                    1
                };
                for _ in 0..times {
                    if !first {
                        out.push(',');
                    }
                    first = false;
                    out.push_str(&serde_json::to_string(key).unwrap());
                    out.push(':');
                    write(member, &format!("{at}/{key}"), duplicate_in, out);
                }
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (index, item) in items.iter().enumerate() {
                if index > 0 {
                    out.push(',');
                }
                write(item, &format!("{at}/{index}"), duplicate_in, out);
            }
            out.push(']');
        }
        scalar => out.push_str(&scalar.to_string()),
    }
}

/// The changed document's text, and the violation it calls for (`None`: the change does not
/// apply at this place) with the pointer it must be reported at.
fn apply(
    document: &Value,
    place: &Place,
    change: Change,
) -> Option<(String, ViolationKind, String)> {
    let mut changed = document.clone();
    let (kind, at) = match (change, place) {
        (Change::WrongType, Place::Field { pointer, .. }) => {
            let target = changed.pointer_mut(pointer)?;
            let found = other_type(target);
            // `note` may be null: a string or null are both its type.
            if target.is_null() {
                return None;
            }
            *target = found;
            (
                ViolationKind::WrongType {
                    expected: expected_type(document.pointer(pointer)?),
                    found: expected_type(changed.pointer(pointer)?),
                },
                pointer.clone(),
            )
        }
        (Change::Missing, Place::Field { pointer, parent }) => {
            let key = pointer.rsplit('/').next()?;
            changed.pointer_mut(parent)?.as_object_mut()?.remove(key);
            (ViolationKind::MissingField, pointer.clone())
        }
        (Change::Extra, Place::Field { parent, .. }) => {
            changed
                .pointer_mut(parent)?
                .as_object_mut()?
                .insert("zz_extra".into(), json!(1));
            (ViolationKind::UnknownField, format!("{parent}/zz_extra"))
        }
        (Change::Duplicate, Place::Field { parent, .. }) => {
            let first = changed.pointer(parent)?.as_object()?.keys().next()?.clone();
            let mut out = String::new();
            write(&changed, "", Some(parent), &mut out);
            return Some((
                out,
                ViolationKind::DuplicateKey,
                format!("{parent}/{first}"),
            ));
        }
        (Change::BadNumber, Place::Field { pointer, .. }) => {
            let target = changed.pointer_mut(pointer)?;
            if !target.is_number() {
                return None;
            }
            // 2^53 + 1: past every field's Rust type, whose range is reported, or the
            // field's own maximum where it states one.
            *target = serde_json::from_str("9007199254740993").unwrap();
            let kind = match pointer.rsplit('/').next()? {
                "parcels" => ViolationKind::AboveMaximum { maximum: 1000.0 },
                "hours" => ViolationKind::AboveMaximum { maximum: 100.0 },
                _ => ViolationKind::IntegerOutOfRange {
                    min: 0,
                    max: i64::from(u32::MAX),
                },
            };
            (kind, pointer.clone())
        }
        (Change::TooDeep, Place::FreeForm(pointer)) => {
            *changed.pointer_mut(pointer)? = (0..7).fold(json!(1), |inner, _| json!([inner]));
            // Reported where the seventh level opens.
            (
                ViolationKind::TooDeep { max: 6 },
                format!("{pointer}{}", "/0".repeat(6)),
            )
        }
        (Change::ForbiddenKey(spelling), Place::FreeForm(pointer)) => {
            let mut object = Map::new();
            object.insert(SPELLINGS[spelling].to_owned(), json!("x"));
            *changed.pointer_mut(pointer)? = Value::Object(object);
            (
                ViolationKind::ForbiddenKey,
                format!("{pointer}/{}", escape_pointer(SPELLINGS[spelling])),
            )
        }
        _ => return None,
    };
    Some((changed.to_string(), kind, at))
}

fn escape_pointer(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

fn json_type(value: &Value) -> tool_contract::vocabulary::JsonType {
    use tool_contract::vocabulary::JsonType;
    match value {
        Value::Null => JsonType::Null,
        Value::Bool(_) => JsonType::Boolean,
        Value::Number(_) => JsonType::Number,
        Value::String(_) => JsonType::String,
        Value::Array(_) => JsonType::Array,
        Value::Object(_) => JsonType::Object,
    }
}

/// The type the contract declares where a valid document holds `value` (every number of
/// this contract is an integer field).
fn expected_type(value: &Value) -> tool_contract::vocabulary::JsonType {
    match json_type(value) {
        tool_contract::vocabulary::JsonType::Number => tool_contract::vocabulary::JsonType::Integer,
        other => other,
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn a_valid_document_is_accepted_as_it_is(document in shipment()) {
        let bytes = document.to_string();
        let output = FindShipment {}.validate_output(bytes.as_bytes());
        let output = output.map_err(|violations| TestCaseError::fail(format!("{violations:?}")))?;
        prop_assert_eq!(output.to_canonical_json(), canonical::canonicalize(bytes.as_bytes()).unwrap());
    }

    #[test]
    fn a_document_changed_at_any_depth_is_refused_with_the_violation_of_that_change(
        document in shipment(),
        pick in any::<prop::sample::Index>(),
        change in change(),
    ) {
        let places = places(&document);
        let place = pick.get(&places);
        let Some((text, kind, at)) = apply(&document, place, change) else {
            return Ok(());
        };
        let violations = FindShipment {}
            .validate_output(text.as_bytes())
            .expect_err("a changed document is refused");
        prop_assert!(
            violations.iter().any(|violation| *violation.kind() == kind && violation.path() == at),
            "{:?} at {:?} on {}: {:?}", kind, at, text, violations
        );
    }
}
