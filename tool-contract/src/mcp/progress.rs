//! A call's progress reports sent to its client as `notifications/progress`, in order and
//! before the call's answer, when the request asked for them with a `progressToken`.

use std::future::Future;

use rmcp::Peer;
use rmcp::model::{ProgressNotificationParam, ProgressToken};
use rmcp::service::{RequestContext, RoleServer};
use tokio::sync::mpsc;

use crate::dispatch::{Progress, ProgressSink};

/// Where a request's progress goes: the sink a handler reports to, and what sends it on.
pub(super) struct Listening {
    token: ProgressToken,
    reports: mpsc::UnboundedReceiver<Progress>,
}

/// The sink of `request_context`'s progress, if the request asked for it.
pub(super) fn listen(
    request_context: &RequestContext<RoleServer>,
) -> Option<(ProgressSink, Listening)> {
    let token = request_context.meta.get_progress_token()?;
    let (sender, reports) = mpsc::unbounded_channel();
    let sink = ProgressSink::new(move |progress| {
        // The receiver is gone once the answer went: a late report has no one to reach.
        let _ = sender.send(progress);
    });
    Some((sink, Listening { token, reports }))
}

/// Runs `work`, sending each report made meanwhile to `peer`, and every one left once it
/// ends, before its output is returned.
pub(super) async fn while_sending<F: Future>(
    listening: Option<Listening>,
    peer: &Peer<RoleServer>,
    work: F,
) -> F::Output {
    let Some(Listening { token, mut reports }) = listening else {
        return work.await;
    };
    let send = |progress: Progress| {
        let mut param = ProgressNotificationParam::new(token.clone(), progress.done);
        param.total = progress.total;
        param.message = progress.message;
        peer.notify_progress(param)
    };
    let mut work = std::pin::pin!(work);
    loop {
        tokio::select! {
            output = &mut work => {
                while let Ok(progress) = reports.try_recv() {
                    let _ = send(progress).await;
                }
                return output;
            }
            Some(progress) = reports.recv() => {
                // A client that went away misses a report; the work goes on.
                let _ = send(progress).await;
            }
        }
    }
}
