//! A model made of recorded turns, for a rig agent: rig's own OpenAI Responses wire over a
//! transport that answers each request with the next recorded response body and keeps every
//! request body rig sent, which is exactly what the model would have been told.
//!
//! In rig-core 0.44 a completion model is a wire (what to send, how to read the reply) bound
//! to a transport (how it travels); every `HttpClientExt` is a transport. This one is that
//! trait over a list of recorded turns, so the agent's loop, rig's encoding of the tools and
//! of each tool result, and rig's decoding of each reply are all rig's own.

use std::collections::VecDeque;
use std::future::{self, Future};
use std::sync::{Arc, Mutex, PoisonError};

use bytes::Bytes;
use rig_core::http_client::{
    self, HttpClientExt, LazyBody, MultipartForm, Request, Response, StatusCode, StreamingResponse,
};
use rig_core::providers::openai::OpenAIConfig;
use rig_core::wasm_compat::WasmCompatSend;
use serde_json::Value;

/// The OpenAI Responses model rig drives, `model` by name, answering from `turns`.
pub fn responses_model(
    turns: &RecordedTurns,
    model: &str,
) -> rig_core::driver::Model<rig_core::providers::openai::responses_api::wire::Responses> {
    OpenAIConfig::new("recorded-turns-need-no-key")
        .connect(turns.clone())
        .responses(model)
}

/// Recorded OpenAI Responses bodies, answered in order, and the requests that asked for them.
/// Clones share both.
#[derive(Clone, Debug, Default)]
pub struct RecordedTurns {
    shared: Arc<Mutex<Recording>>,
}

#[derive(Debug, Default)]
struct Recording {
    turns: VecDeque<Bytes>,
    requests: Vec<Value>,
}

impl RecordedTurns {
    /// The turns of a JSON array of response bodies.
    ///
    /// # Errors
    ///
    /// When `json` is not an array of JSON values.
    pub fn from_json(json: &str) -> Result<Self, serde_json::Error> {
        let turns: Vec<Value> = serde_json::from_str(json)?;
        let turns = turns
            .iter()
            .map(|turn| serde_json::to_vec(turn).map(Bytes::from))
            .collect::<Result<_, _>>()?;
        Ok(RecordedTurns {
            shared: Arc::new(Mutex::new(Recording {
                turns,
                requests: Vec::new(),
            })),
        })
    }

    /// Every request body rig sent, in order: what the model was told at each turn.
    pub fn requests(&self) -> Vec<Value> {
        self.recording().requests.clone()
    }

    /// How many recorded turns are not answered yet.
    pub fn remaining(&self) -> usize {
        self.recording().turns.len()
    }

    fn recording(&self) -> std::sync::MutexGuard<'_, Recording> {
        self.shared.lock().unwrap_or_else(PoisonError::into_inner)
    }

    // The error is rig-http's own, which `HttpClientExt` answers with.
    #[allow(clippy::result_large_err)]
    fn answer(&self, body: Bytes) -> http_client::Result<Bytes> {
        let mut recording = self.recording();
        let request = serde_json::from_slice(&body).map_err(http_client::Error::instance)?;
        recording.requests.push(request);
        recording.turns.pop_front().ok_or_else(|| {
            http_client::Error::non_success_with_details(
                StatusCode::GONE,
                http::HeaderMap::new(),
                "no recorded turn is left".to_owned(),
            )
        })
    }
}

impl HttpClientExt for RecordedTurns {
    #[allow(clippy::result_large_err)] // rig-http's error, as above
    fn send<T, U>(
        &self,
        request: Request<T>,
    ) -> impl Future<Output = http_client::Result<Response<LazyBody<U>>>> + WasmCompatSend + 'static
    where
        T: Into<Bytes> + WasmCompatSend,
        U: From<Bytes> + WasmCompatSend + 'static,
    {
        let answer = self.answer(request.into_body().into()).and_then(|body| {
            let lazy: LazyBody<U> = Box::pin(future::ready(Ok(U::from(body))));
            Response::builder()
                .status(StatusCode::OK)
                .header(http::header::CONTENT_TYPE, "application/json")
                .body(lazy)
                .map_err(http_client::Error::from)
        });
        future::ready(answer)
    }

    fn send_multipart<U>(
        &self,
        _request: Request<MultipartForm>,
    ) -> impl Future<Output = http_client::Result<Response<LazyBody<U>>>> + WasmCompatSend + 'static
    where
        U: From<Bytes> + WasmCompatSend + 'static,
    {
        future::ready(Err(not_recorded()))
    }

    fn send_streaming<T>(
        &self,
        _request: Request<T>,
    ) -> impl Future<Output = http_client::Result<StreamingResponse>> + WasmCompatSend
    where
        T: Into<Bytes> + WasmCompatSend,
    {
        future::ready(Err(not_recorded()))
    }
}

/// Only whole (unary) turns were recorded.
fn not_recorded() -> http_client::Error {
    http_client::Error::non_success_with_details(
        StatusCode::NOT_IMPLEMENTED,
        http::HeaderMap::new(),
        "only whole turns were recorded".to_owned(),
    )
}
