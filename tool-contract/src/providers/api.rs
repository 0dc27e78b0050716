//! `ProviderApi`: what every provider API does, in one interface, so that code written once
//! serves them all.

use serde_json::Value;

use super::emit::{self, Answer, EmitError};
use super::{ProviderError, Turn};
use crate::binder::{Binder, Verified};
use crate::vocabulary::call::{Adapter, Principal};

/// One provider API: the adapter that reads and writes it, a whole response or a stream read
/// into a [`Turn`], and the next request's results written from verified results only.
///
/// The four APIs are [`OpenAiResponses`](super::OpenAiResponses),
/// [`AnthropicMessages`](super::AnthropicMessages),
/// [`GeminiGenerateContent`](super::GeminiGenerateContent) and
/// [`GeminiInteractions`](super::GeminiInteractions); [`provider_api`](super::provider_api) finds one by its
/// [`Api`](super::Api). Each module's free functions (`openai::parse_response`, …) are the same calls.
///
/// ```
/// use tool_contract::providers::{Api, provider_api};
///
/// let anthropic = provider_api(Api::AnthropicMessages).expect("an adapter ships");
/// let mut stream = anthropic.stream();
/// for event in [
///     r#"{"type":"message_start","message":{"id":"msg_1","content":[],"stop_reason":null}}"#,
///     r#"{"type":"message_delta","delta":{"stop_reason":"end_turn"}}"#,
///     r#"{"type":"message_stop"}"#,
/// ] {
///     stream.push(event.as_bytes())?;
/// }
/// assert!(stream.finish()?.calls.is_empty());
/// # Ok::<(), tool_contract::providers::ProviderError>(())
/// ```
pub trait ProviderApi: Send + Sync {
    /// The adapter: the API, and the revision of its reading and writing rules.
    fn adapter(&self) -> Adapter;

    /// Reads the calls of a whole (non-streamed) response body.
    ///
    /// # Errors
    ///
    /// [`ProviderError`] when the body is not the API's, was cut short, or names a call twice;
    /// none of its calls may run then.
    fn parse(&self, body: &[u8]) -> Result<Turn, ProviderError>;

    /// An assembler of a streamed response that has seen nothing.
    fn stream(&self) -> Box<dyn StreamAssembler>;

    /// One call's item of the next request, from its verified result.
    fn result_item(&self, verified: &Verified<'_>) -> Value;

    /// The next request's results around `items`, one per call, in call order.
    fn result_payload(&self, items: Vec<Value>) -> Value;

    /// The items of a payload [`write_results`](Self::write_results) wrote, in call order.
    fn result_items<'p>(&self, payload: &'p Value) -> &'p [Value];

    /// The next request's results for every call of `turn`: each call's one answer, verified,
    /// in call order, correlated by call id.
    ///
    /// # Errors
    ///
    /// [`EmitError`] unless every call of the turn has exactly one answer that verifies, and
    /// no answer is for another call or an adapter the registry does not accept.
    fn write_results(
        &self,
        binder: &Binder<'_>,
        principal: &Principal,
        turn: &Turn,
        answers: &[Answer],
    ) -> Result<Value, EmitError> {
        let verified = emit::verified_in_call_order(binder, principal, turn, answers)?;
        let items = verified.iter().map(|result| self.result_item(result));
        Ok(self.result_payload(items.collect()))
    }
}

/// Assembles a streamed response event by event (each the JSON `data` of one server-sent
/// event); a stream that breaks its protocol or ends early is an error, and none of its calls
/// may run.
pub trait StreamAssembler: Send {
    /// Feeds one event.
    ///
    /// # Errors
    ///
    /// [`ProviderError`] for a malformed event or one the stream's protocol does not allow.
    fn push(&mut self, event: &[u8]) -> Result<(), ProviderError>;

    /// The calls of the stream, once it ended as the API ends a turn.
    ///
    /// # Errors
    ///
    /// [`ProviderError`] when the stream stopped early or broke its protocol.
    fn finish(self: Box<Self>) -> Result<Turn, ProviderError>;
}

/// Implements [`ProviderApi`] for a module's unit type: its reading side from the module's
/// `ADAPTER`, its whole-body reader and its `StreamAssembler` (which also gets the
/// [`StreamAssembler`] trait); the writing side is the three functions given, and the module's
/// free writer function (documented as given) is a thin alias of `write_results`.
macro_rules! impl_provider_api {
    (
        $provider:ident reads with $parse:path;
        $(#[$writer_doc:meta])*
        writes with $writer:ident;
        $($writes:tt)*
    ) => {
        $(#[$writer_doc])*
        ///
        /// # Errors
        ///
        /// [`EmitError`](super::EmitError) unless every call of the turn has exactly one
        /// answer that verifies, and no answer is for another call or an adapter the registry
        /// does not accept.
        pub fn $writer(
            binder: &Binder<'_>,
            principal: &Principal,
            turn: &Turn,
            answers: &[Answer],
        ) -> Result<Value, super::EmitError> {
            $provider.write_results(binder, principal, turn, answers)
        }

        impl ProviderApi for $provider {
            fn adapter(&self) -> Adapter {
                ADAPTER
            }

            fn parse(&self, body: &[u8]) -> Result<Turn, ProviderError> {
                $parse(body)
            }

            fn stream(&self) -> Box<dyn super::StreamAssembler> {
                Box::new(StreamAssembler::new())
            }

            $($writes)*
        }

        impl super::StreamAssembler for StreamAssembler {
            fn push(&mut self, event: &[u8]) -> Result<(), ProviderError> {
                StreamAssembler::push(self, event)
            }

            fn finish(self: Box<Self>) -> Result<Turn, ProviderError> {
                StreamAssembler::finish(*self)
            }
        }
    };
}

pub(super) use impl_provider_api;
