//! Every replica's decisions and task moves, heard: one listening connection per store, on
//! which arrive the `NOTIFY`s each change's transaction sent on commit.

use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use futures_util::future::{Either, select};
use tokio_postgres::{AsyncMessage, Config, NoTls};

use crate::control::{Changed, Changes};

/// How long the listener waits before it connects again after losing its connection.
const RECONNECT_AFTER: Duration = Duration::from_secs(1);

/// The channel a store's changes are sent on: its schema's name (a lowercase identifier, so
/// `LISTEN` takes it unquoted), so stores in other schemas never hear each other.
pub(super) fn channel(schema: &str) -> &str {
    schema
}

/// The listener of one store, shared by its clones, started by the first waiter (inside a
/// runtime; again by a later one if that runtime ended) and stopped when the last clone
/// drops.
pub(super) struct Listening {
    changes: Arc<Changes>,
    config: Config,
    schema: String,
    task: Mutex<Option<tokio::task::JoinHandle<()>>>,
}

impl Listening {
    pub(super) fn new(config: Config, schema: &str) -> Self {
        Listening {
            changes: Changes::new(),
            config,
            schema: schema.to_owned(),
            task: Mutex::new(None),
        }
    }

    /// The store's waiters, its listener started if it is not yet running.
    pub(super) fn changes(&self) -> Arc<Changes> {
        let mut task = self
            .task
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        // Not yet started, or ended with the runtime it ran on: started on this one.
        if task
            .as_ref()
            .is_none_or(tokio::task::JoinHandle::is_finished)
            && let Ok(runtime) = tokio::runtime::Handle::try_current()
        {
            let listen = listen(
                self.config.clone(),
                self.schema.clone(),
                Arc::downgrade(&self.changes),
            );
            *task = Some(runtime.spawn(listen));
        }
        Arc::clone(&self.changes)
    }
}

impl Drop for Listening {
    fn drop(&mut self) {
        if let Some(task) = self
            .task
            .get_mut()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take()
        {
            task.abort();
        }
    }
}

/// Listens on the store's channel for as long as anyone holds its waiters, connecting again
/// whenever the connection is lost.
async fn listen(config: Config, schema: String, changes: Weak<Changes>) {
    loop {
        if let Err(error) = listen_once(&config, &schema, &changes).await {
            tracing::warn!(stage = "store", %error, "the store's listener lost its connection");
        }
        if changes.strong_count() == 0 {
            return;
        }
        tokio::time::sleep(RECONNECT_AFTER).await;
    }
}

/// One connection's listening: every notification on the channel tells the waiters of the
/// change it names; once `LISTEN` holds, every waiter is woken, since what changed while
/// nobody listened was told to no one.
async fn listen_once(
    config: &Config,
    schema: &str,
    changes: &Weak<Changes>,
) -> Result<(), tokio_postgres::Error> {
    let (client, mut connection) = config.connect(NoTls).await?;
    let heard = async {
        loop {
            let message = std::future::poll_fn(|context| connection.poll_message(context)).await;
            match message {
                Some(Ok(AsyncMessage::Notification(notification))) => {
                    let Some(changes) = changes.upgrade() else {
                        return Ok(());
                    };
                    if let Some(changed) = Changed::from_payload(notification.payload()) {
                        changes.changed(&changed);
                    }
                }
                Some(Ok(_)) => {}
                Some(Err(error)) => return Err(error),
                None => return Ok(()),
            }
        }
    };
    let listening = async {
        client
            .batch_execute(&format!("LISTEN {}", channel(schema)))
            .await?;
        if let Some(changes) = changes.upgrade() {
            changes.changed_everything();
        }
        // The client stays open for as long as the connection is heard.
        std::future::pending::<Result<(), tokio_postgres::Error>>().await
    };
    match select(std::pin::pin!(heard), std::pin::pin!(listening)).await {
        Either::Left((heard, _)) => heard,
        Either::Right((listened, _)) => listened,
    }
}
