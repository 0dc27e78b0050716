//! How a call is named as an operation: by its contract's `operation` rule. The ledger runs an
//! operation once and answers a repeat of it with the first result, so this name decides
//! whether a second call is a retry or a new action.

use std::panic::{AssertUnwindSafe, catch_unwind};

use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::contract::ToolSpec;
use crate::dispatch::handler::KeyRule;
use crate::json::canonical;
use crate::json::depth;
use crate::results::digest::{canonical_within, lower_hex};
use crate::vocabulary::{Correlation, ForbiddenKeys, Operation, ToolCall};

/// What names one call's operation, besides the call itself.
pub(crate) struct Naming<'a> {
    pub(crate) spec: Option<&'static ToolSpec>,
    /// The application's rule, for `operation = key_rule`.
    pub(crate) key_rule: Option<&'a KeyRule>,
    pub(crate) forbidden: &'a ForbiddenKeys,
}

/// The operation of `call`, or `None` when the call itself cannot name it (`per_call` with no
/// id the provider keeps across turns): then each dispatch of a context is its own operation,
/// and the caller draws a fresh name.
///
/// - a read (or a tool the registry lacks): its call id, each call its own;
/// - `per_call`: the provider's call id (with its response id where calls are matched by
///   name, since such a "call id" is only the tool's name);
/// - `key_rule`: the application's key from the typed input;
/// - fields: a digest of those members' values, in the order declared;
/// - `same_arguments`: a digest of the canonical arguments.
///
/// Arguments that do not read as the tool's input still get a name (by their bytes): the
/// dispatch refuses them anyway.
pub(crate) fn operation_id(naming: &Naming<'_>, call: &ToolCall) -> Option<String> {
    let name = call.name.as_str();
    let Some(operation) = naming.spec.and_then(ToolSpec::operation) else {
        return Some(format!("{name}:{}", call.call_id));
    };
    Some(match operation {
        Operation::PerCall => match (call.correlation, &call.response_id) {
            (Correlation::Id, _) => format!("{name}:call:{}", call.call_id),
            (Correlation::Name, Some(response)) => {
                format!("{name}:call:{response}/{}", call.call_id)
            }
            (Correlation::Name, None) => return None,
        },
        Operation::KeyRule => {
            let rule = naming.key_rule.and_then(|rule| {
                catch_unwind(AssertUnwindSafe(|| rule(&call.arguments, naming.forbidden)))
                    .ok()
                    .flatten()
            });
            match rule {
                Some(key) => format!("{name}:{key}"),
                None => arguments_digest(naming.spec, name, &call.arguments),
            }
        }
        Operation::Fields(keys) => match fields_digest(naming.spec, name, keys, &call.arguments) {
            Some(digest) => digest,
            None => arguments_digest(naming.spec, name, &call.arguments),
        },
        Operation::SameArguments => arguments_digest(naming.spec, name, &call.arguments),
    })
}

/// Whether `operation_id` is a `key_rule` operation whose key the application's rule left
/// empty (or blank): every call of the tool would be that one operation, and each later one an
/// `IDEMPOTENCY_CONFLICT`. Such a call runs nothing.
pub(crate) fn key_is_empty(spec: &ToolSpec, operation_id: &str) -> bool {
    spec.operation() == Some(Operation::KeyRule)
        && operation_id
            .strip_prefix(spec.name())
            .and_then(|rest| rest.strip_prefix(':'))
            .is_some_and(|key| key.trim().is_empty())
}

/// `name:` and 32 hex digits of the SHA-256 of the tool's name and its canonical arguments
/// (their bytes, past the tool's size or when they do not parse).
pub(crate) fn arguments_digest(spec: Option<&ToolSpec>, name: &str, arguments: &[u8]) -> String {
    let canonical = canonical_within(spec, arguments);
    let arguments = canonical.as_deref().unwrap_or(arguments);
    digest_of(name, arguments)
}

/// `name:` and 32 hex digits of the SHA-256 of the tool's name and the canonical JSON array of
/// the values of `keys`, in order; `None` when the arguments are not an object within the
/// tool's limits.
fn fields_digest(
    spec: Option<&ToolSpec>,
    name: &str,
    keys: &[&str],
    arguments: &[u8],
) -> Option<String> {
    let canonical = canonical_within(spec, arguments)?;
    let Value::Object(mut members) = depth::from_slice::<Value>(&canonical).ok()? else {
        return None;
    };
    let values: Vec<Value> = keys
        .iter()
        .map(|key| members.remove(*key).unwrap_or(Value::Null))
        .collect();
    let named = canonical::to_vec(&Value::Array(values)).ok()?;
    Some(digest_of(name, &named))
}

fn digest_of(name: &str, bytes: &[u8]) -> String {
    let mut digest = Sha256::new();
    digest.update(name.as_bytes());
    digest.update([0]);
    digest.update(bytes);
    format!("{name}:{}", &lower_hex(&digest.finalize())[..32])
}
