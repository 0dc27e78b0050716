//! Reading provider JSON: shared helpers for the adapters.

use std::sync::Arc;

use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;

use super::ProviderError;
use crate::vocabulary::call::Api;

/// Parses one provider payload (a response, or one stream event).
///
/// Every provider payload is a JSON object; serde would also fill a struct from an array.
pub(super) fn parse<'a, T: Deserialize<'a>>(api: Api, bytes: &'a [u8]) -> Result<T, ProviderError> {
    if bytes.trim_ascii_start().first() != Some(&b'{') {
        return Err(malformed(api, "the payload is not a JSON object"));
    }
    serde_json::from_slice(bytes).map_err(|error| unreadable(api, error))
}

pub(super) fn unreadable(api: Api, error: serde_json::Error) -> ProviderError {
    ProviderError::Unreadable {
        api,
        source: Arc::new(error),
    }
}

pub(super) fn malformed(api: Api, reason: impl Into<String>) -> ProviderError {
    ProviderError::Malformed {
        api,
        reason: reason.into(),
    }
}

pub(super) fn protocol(api: Api, reason: impl Into<String>) -> ProviderError {
    ProviderError::Protocol {
        api,
        reason: reason.into(),
    }
}

/// Arguments given as a JSON object (Anthropic `input`, Gemini `args`, Interactions
/// `arguments`): their exact text, or `{}` when absent.
pub(super) fn object_text(value: Option<&RawValue>) -> Vec<u8> {
    value.map_or_else(|| b"{}".to_vec(), |raw| raw.get().as_bytes().to_vec())
}

/// Whether streamed pieces joined are one JSON text (a piece lost on the way rarely leaves
/// one); within the crate's one nesting limit, not serde_json's 128.
pub(super) fn is_json(text: &str) -> bool {
    crate::json::depth::from_slice::<serde::de::IgnoredAny>(text.as_bytes()).is_ok()
}

/// Whether a JSON text is a non-empty object (`{}` with any whitespace is empty).
pub(super) fn is_nonempty_object(text: &str) -> bool {
    let inner = text.trim();
    inner.starts_with('{') && inner.ends_with('}') && !inner[1..inner.len() - 1].trim().is_empty()
}

/// The error an `error` stream event reports, by its `error.message`.
pub(super) fn reported(api: Api, error: Option<&Value>) -> ProviderError {
    let message = error
        .and_then(|error| error.get("message"))
        .and_then(Value::as_str)
        .unwrap_or("stream error");
    ProviderError::Reported {
        api,
        message: message.to_owned(),
    }
}
