//! SEP-1699's polling over Streamable HTTP: a call of a 2025-11-25 session still running when
//! the server's hold ends has its event stream closed, after an event naming how long the
//! client should wait (`retry`); the client comes back with `GET` and `Last-Event-ID`, and
//! the rest of the call, its answer included, reaches it from the session's cache. No
//! connection is held open for a call that waits long (for a person, for the console).
//! Sessions of earlier revisions, whose clients would not come back, keep their streams.

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use futures_util::Stream;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::streamable_http_server::session::local::{
    LocalSessionManager, LocalSessionManagerError,
};
use rmcp::transport::streamable_http_server::session::{ServerSseMessage, SessionId};
use tokio::sync::mpsc;

/// How long a client is told to wait before it comes back for a closed stream.
const RETRY: Duration = Duration::from_millis(500);

/// The event stream of `message`, a request of session `id`, closed once `hold` passes
/// without its answer (never, without a hold).
pub(super) async fn request_stream(
    sessions: &LocalSessionManager,
    id: &SessionId,
    message: ClientJsonRpcMessage,
    hold: Option<Duration>,
) -> Result<Answering, LocalSessionManagerError> {
    // What `LocalSessionManager::create_stream` does, keeping the stream's HTTP request id,
    // which names the stream to close.
    let handle = sessions
        .sessions
        .read()
        .await
        .get(id)
        .cloned()
        .ok_or_else(|| LocalSessionManagerError::SessionNotFound(id.clone()))?;
    let receiver = handle.establish_request_wise_channel().await?;
    let stream = receiver.http_request_id;
    handle.push_message(message, stream).await?;
    let answered = Arc::new(AtomicBool::new(false));
    if let (Some(hold), Some(stream)) = (hold, stream) {
        let answered = answered.clone();
        tokio::spawn(async move {
            tokio::time::sleep(hold).await;
            if !answered.load(Ordering::Acquire) {
                // A session gone, or a stream ended meanwhile, has nothing left to close.
                let _ = handle.close_sse_stream(stream, Some(RETRY)).await;
            }
        });
    }
    Ok(Answering {
        messages: receiver.inner,
        answered,
    })
}

/// A request's event stream, noting when its answer passes.
pub(super) struct Answering {
    messages: mpsc::Receiver<ServerSseMessage>,
    answered: Arc<AtomicBool>,
}

impl Stream for Answering {
    type Item = ServerSseMessage;

    fn poll_next(mut self: Pin<&mut Self>, context: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let polled = self.messages.poll_recv(context);
        if let Poll::Ready(Some(event)) = &polled
            && matches!(
                event.message.as_deref(),
                Some(ServerJsonRpcMessage::Response(_) | ServerJsonRpcMessage::Error(_))
            )
        {
            self.answered.store(true, Ordering::Release);
        }
        polled
    }
}
