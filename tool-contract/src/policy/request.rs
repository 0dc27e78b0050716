//! One call as a Cedar request: the caller as the principal entity, the tool's action, and its
//! validated arguments as `context.input`, converted along the tool's [`CedarType`].

use std::collections::{BTreeSet, HashMap, HashSet};

use cedar_policy::{Context, Entity, EntityId, EntityUid, RestrictedExpression};
use serde_json::Value;
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use crate::vocabulary::Principal;

use super::schema::{Attribute, CedarType};

/// Who calls, as the policies see them: the principal, and the scopes of the access token
/// the call came with, if it came with one.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Caller<'a> {
    pub(crate) principal: &'a Principal,
    pub(crate) scopes: Option<&'a BTreeSet<String>>,
}

/// Why a call's arguments could not be put to the policies.
#[derive(Debug)]
pub(super) struct Unrepresentable(pub(super) String);

/// The principal entity for `caller`, of type `principal_type`.
pub(super) fn principal_entity(
    principal_type: &cedar_policy::EntityTypeName,
    caller: Caller<'_>,
) -> Result<Entity, Unrepresentable> {
    let principal = caller.principal;
    let uid =
        EntityUid::from_type_name_and_id(principal_type.clone(), EntityId::new(&principal.subject));
    let mut attributes = HashMap::from([
        (
            "id".to_owned(),
            RestrictedExpression::new_string(principal.subject.clone()),
        ),
        (
            "tenant".to_owned(),
            RestrictedExpression::new_string(principal.tenant.clone()),
        ),
    ]);
    if let Some(scopes) = caller.scopes {
        let scopes = scopes.iter().cloned().map(RestrictedExpression::new_string);
        attributes.insert("scopes".to_owned(), RestrictedExpression::new_set(scopes));
    }
    Entity::new(uid, attributes, HashSet::new())
        .map_err(|error| Unrepresentable(format!("the principal: {error}")))
}

/// The context `{ input: … }` of validated `arguments`.
pub(super) fn context(input: &CedarType, arguments: &Value) -> Result<Context, Unrepresentable> {
    let input = expression(input, arguments)?;
    Context::from_pairs([("input".to_owned(), input)])
        .map_err(|error| Unrepresentable(format!("the arguments: {error}")))
}

/// `value`, which the contract validated, as a Cedar value of type `ty`.
fn expression(ty: &CedarType, value: &Value) -> Result<RestrictedExpression, Unrepresentable> {
    let mismatch = || Unrepresentable(format!("{value} is not a {ty:?}"));
    Ok(match ty {
        CedarType::String => {
            RestrictedExpression::new_string(value.as_str().ok_or_else(mismatch)?.to_owned())
        }
        CedarType::Bool => RestrictedExpression::new_bool(value.as_bool().ok_or_else(mismatch)?),
        CedarType::Long => RestrictedExpression::new_long(value.as_i64().ok_or_else(mismatch)?),
        CedarType::Decimal => {
            RestrictedExpression::new_decimal(decimal(value.as_f64().ok_or_else(mismatch)?)?)
        }
        CedarType::Datetime => {
            RestrictedExpression::new_datetime(datetime(value.as_str().ok_or_else(mismatch)?)?)
        }
        CedarType::Enum(name) => {
            let member = value.as_str().ok_or_else(mismatch)?;
            RestrictedExpression::new_entity_uid(EntityUid::from_type_name_and_id(
                name.clone(),
                EntityId::new(member),
            ))
        }
        CedarType::Set(member) => RestrictedExpression::new_set(
            value
                .as_array()
                .ok_or_else(mismatch)?
                .iter()
                .map(|item| expression(member, item))
                .collect::<Result<Vec<_>, _>>()?,
        ),
        CedarType::Record(attributes) => record(attributes, value)?,
    })
}

fn record(
    attributes: &[Attribute],
    value: &Value,
) -> Result<RestrictedExpression, Unrepresentable> {
    let object = value
        .as_object()
        .ok_or_else(|| Unrepresentable(format!("{value} is not an object")))?;
    let mut fields = Vec::with_capacity(attributes.len());
    for attribute in attributes {
        match object.get(attribute.key) {
            Some(Value::Null) | None if attribute.optional => {}
            Some(field) => {
                fields.push((attribute.key.to_owned(), expression(&attribute.ty, field)?))
            }
            None => return Err(Unrepresentable(format!("no {:?}", attribute.key))),
        }
    }
    RestrictedExpression::new_record(fields)
        .map_err(|error| Unrepresentable(format!("a record: {error}")))
}

/// A finite double as Cedar's `decimal` literal: digits, a point, one to four digits.
fn decimal(number: f64) -> Result<String, Unrepresentable> {
    // Rust's `Display` of a double is its shortest round-trip digits, never in exponent form;
    // a value needing more than four places is refused rather than rounded, so a policy never
    // decides on a number the call did not carry. Cedar's own parser checks the range.
    let text = number.to_string();
    let text = if text.contains('.') {
        text
    } else {
        format!("{text}.0")
    };
    let places = text.len() - text.find('.').map_or(text.len(), |point| point + 1);
    if places > 4 {
        return Err(Unrepresentable(format!(
            "{number} has more than the four places after the point a Cedar decimal holds"
        )));
    }
    Ok(text)
}

/// An RFC 3339 date-time as the form Cedar's `datetime` reads: UTC, to the millisecond.
fn datetime(text: &str) -> Result<String, Unrepresentable> {
    let instant = OffsetDateTime::parse(text, &Rfc3339)
        .map_err(|error| Unrepresentable(format!("{text:?}: {error}")))?
        .to_offset(time::UtcOffset::UTC);
    if instant.nanosecond() % 1_000_000 != 0 {
        return Err(Unrepresentable(format!(
            "{text:?} is finer than the millisecond a Cedar datetime holds"
        )));
    }
    Ok(format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z",
        instant.year(),
        u8::from(instant.month()),
        instant.day(),
        instant.hour(),
        instant.minute(),
        instant.second(),
        instant.millisecond()
    ))
}

#[cfg(test)]
mod tests {
    use super::{datetime, decimal};

    #[test]
    fn decimals_carry_up_to_four_places_and_never_round() {
        assert_eq!(decimal(12.5).unwrap(), "12.5");
        assert_eq!(decimal(3.0).unwrap(), "3.0");
        assert_eq!(decimal(-0.0001).unwrap(), "-0.0001");
        assert!(decimal(0.00001).is_err());
        assert!(decimal(1.0 / 3.0).is_err());
    }

    #[test]
    fn datetimes_read_in_utc_to_the_millisecond() {
        assert_eq!(
            datetime("2026-12-06T10:00:00.250+01:00").unwrap(),
            "2026-12-06T09:00:00.250Z"
        );
        assert!(datetime("2026-12-06T10:00:00.0001Z").is_err());
    }
}
