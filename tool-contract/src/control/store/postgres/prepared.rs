//! The pool's connections: each a client that runs the common path's statements prepared,
//! so PostgreSQL parses and plans each once per connection instead of once per write (an
//! unnamed statement is parsed and planned every time it is sent).
//!
//! A connection prepares the six when it first runs one of them (together, in one round
//! trip); the connection that migrated the schema prepares them right after the migration,
//! as it opened before their tables existed. With
//! [`PostgresOptions::prepare_statements`](super::PostgresOptions::prepare_statements) off,
//! they are sent unnamed, as the general steps' statements always are.

use std::borrow::Cow;
use std::ops::{Deref, DerefMut};
use std::sync::Arc;

use bb8_postgres::PostgresConnectionManager;
use futures_util::future::try_join_all;
use tokio_postgres::types::{ToSql, Type};
use tokio_postgres::{Client, NoTls, Row, Statement};

use super::sql::{ADVANCE_TYPES, GRANT_TYPES, RECORD_TYPES, Sql};
use crate::control::StoreError;

/// One of the common path's statements.
#[derive(Debug, Clone, Copy)]
pub(super) enum Common {
    /// The record at `$1`.
    Record,
    /// The insert of a record at an empty key, answering a row when it inserted.
    ClaimIfAbsent,
    /// The fenced advance of a record as the step expects it.
    AdvanceInPlace,
    /// The approval row and the record at `$1`, read together.
    ApprovalLook,
    /// The call of the function that claims a key and redeems its grant.
    ClaimRedeeming,
    /// The task `$1`: every poll of a task.
    Task,
}

impl Common {
    /// All six, in the order of their discriminants.
    const ALL: [Common; 6] = [
        Common::Record,
        Common::ClaimIfAbsent,
        Common::AdvanceInPlace,
        Common::ApprovalLook,
        Common::ClaimRedeeming,
        Common::Task,
    ];

    fn text(self, sql: &Sql) -> &str {
        match self {
            Common::Record => &sql.record,
            Common::ClaimIfAbsent => &sql.claim_if_absent,
            Common::AdvanceInPlace => &sql.advance_in_place,
            Common::ApprovalLook => &sql.approval_look,
            Common::ClaimRedeeming => &sql.claim_redeeming,
            Common::Task => &sql.task,
        }
    }

    fn types(self) -> Cow<'static, [Type]> {
        match self {
            Common::Record | Common::ApprovalLook | Common::Task => Cow::Borrowed(&[Type::TEXT]),
            Common::ClaimIfAbsent => Cow::Borrowed(&RECORD_TYPES),
            Common::AdvanceInPlace => Cow::Borrowed(&ADVANCE_TYPES),
            Common::ClaimRedeeming => Cow::Owned([&RECORD_TYPES[..], &GRANT_TYPES[..]].concat()),
        }
    }
}

/// A pooled connection: the client, and the common path's statements once prepared on it
/// (valid on this connection only).
pub(crate) struct Connection {
    client: Client,
    prepare: bool,
    prepared: Option<Arc<[Statement; 6]>>,
}

impl Connection {
    /// Prepares the common path's statements now, if this connection prepares them and has
    /// not yet.
    pub(super) async fn prepare(&mut self, sql: &Sql) -> Result<(), StoreError> {
        self.statements(sql).await.map(drop)
    }

    /// The prepared statements, prepared now if need be; `None` if this connection sends
    /// them unnamed.
    async fn statements(&mut self, sql: &Sql) -> Result<Option<Arc<[Statement; 6]>>, StoreError> {
        if !self.prepare || self.prepared.is_some() {
            return Ok(self.prepared.clone());
        }
        let client = &self.client;
        // Polled together, the six are written before any answer is awaited.
        let statements = try_join_all(Common::ALL.map(|common| async move {
            client
                .prepare_typed(common.text(sql), &common.types())
                .await
        }))
        .await
        .map_err(StoreError::store)?;
        let prepared: Arc<[Statement; 6]> = <[Statement; 6]>::try_from(statements)
            .map_err(|_| StoreError::Corrupt("six statements prepared as another count".into()))?
            .into();
        self.prepared = Some(prepared.clone());
        Ok(Some(prepared))
    }

    /// Runs `common` with `params` (in the order of its types): the one row it answers, if
    /// any.
    pub(super) async fn query_common(
        &mut self,
        sql: &Sql,
        common: Common,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Option<Row>, StoreError> {
        let rows = match self.statements(sql).await? {
            Some(prepared) => self.client.query(&prepared[common as usize], params).await,
            None => {
                let typed: Vec<(&(dyn ToSql + Sync), Type)> = params
                    .iter()
                    .copied()
                    .zip(common.types().iter().cloned())
                    .collect();
                self.client.query_typed(common.text(sql), &typed).await
            }
        }
        .map_err(StoreError::store)?;
        let mut rows = rows.into_iter();
        match (rows.next(), rows.next()) {
            (row, None) => Ok(row),
            (_, Some(_)) => Err(StoreError::Corrupt(format!(
                "{common:?} answered more than one row"
            ))),
        }
    }

    /// As [`query_common`](Self::query_common), for a statement that always answers a row.
    pub(super) async fn query_common_one(
        &mut self,
        sql: &Sql,
        common: Common,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Row, StoreError> {
        self.query_common(sql, common, params)
            .await?
            .ok_or_else(|| StoreError::Corrupt(format!("{common:?} answered no row")))
    }
}

impl Deref for Connection {
    type Target = Client;

    fn deref(&self) -> &Client {
        &self.client
    }
}

impl DerefMut for Connection {
    fn deref_mut(&mut self) -> &mut Client {
        &mut self.client
    }
}

/// `bb8_postgres`'s manager, its connections carrying their prepared statements.
#[derive(Debug)]
pub(crate) struct Manager {
    connections: PostgresConnectionManager<NoTls>,
    prepare: bool,
}

impl Manager {
    /// Connections of `connections` that prepare the common path's statements if `prepare`.
    pub(super) fn new(connections: PostgresConnectionManager<NoTls>, prepare: bool) -> Self {
        Manager {
            connections,
            prepare,
        }
    }
}

impl bb8::ManageConnection for Manager {
    type Connection = Connection;
    type Error = tokio_postgres::Error;

    async fn connect(&self) -> Result<Connection, Self::Error> {
        Ok(Connection {
            client: self.connections.connect().await?,
            prepare: self.prepare,
            prepared: None,
        })
    }

    async fn is_valid(&self, connection: &mut Connection) -> Result<(), Self::Error> {
        self.connections.is_valid(&mut connection.client).await
    }

    fn has_broken(&self, connection: &mut Connection) -> bool {
        self.connections.has_broken(&mut connection.client)
    }
}
