//! The audit log replicas share: one append-only table on PostgreSQL holding one hash chain
//! per stream (a stream is one writer: one sink, one process's life), and each stream's head
//! sealed with the audit key in a table of its own, updated in the transaction that appends.

use hmac::Mac;
use rand::rngs::SysRng;
use tokio::sync::{Mutex, oneshot};
use tokio_postgres::Transaction;

use super::record::{Entry, Members, ReadEntry, Verifier, line_after};
use super::tally::{Counted, Tallies, ToolTally, observed_at};
use super::tree::{MerkleTree, SignedTreeHead, TreeHeadsHeld, verify_tree_heads};
use super::{AuditFuture, AuditLogError, AuditSink, BrokenLink, ChainHead};
use crate::control::store::PooledConnection;
use crate::control::{PostgresStore, StoreError};
use crate::results::digest::{digests_equal, lower_hex};
use crate::results::{KeySet, ModelResult, ProtectedAudit, ReceiptSigner, SecretKey};

/// What the seal of a stream's head covers before the head: no other digest starts so.
const HEAD_DOMAIN: &[u8] = b"tool-contract/audit-stream-head-v1\n";

/// One stream's head: the stream and where its chain stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamHead {
    /// The stream (one writer).
    pub stream: String,
    /// Its last record's number and digest.
    pub head: ChainHead,
}

/// An [`AuditSink`] on PostgreSQL: the records of this sink form one stream of their own.
///
/// Appends are group-committed: the records handed in while another transaction commits
/// are written together in the next one, with the stream's sealed head after them (each
/// record with its `seq`, `prev_sha256` and keyed `record_sha256`, as in
/// [`JsonLinesAuditLog`](super::JsonLinesAuditLog)), and each caller is answered once that
/// transaction committed. Fifty callers at once cost a few transactions, not fifty.
///
/// The same statement counts the calls per minute and tool (a table of its own, summed by
/// [`AuditHistory::tally`](super::AuditHistory::tally)), so the console's overview of a day
/// reads its counts, not its records. The counts are an index, not evidence: they are not
/// chained, and an auditor checks them against [`tally_calls`](super::tally_calls) of the
/// records read back. A stream that appended before schema version 10 is counted from its
/// next record on, and tallied only over minutes after its last uncounted record.
///
/// The table refuses `UPDATE` and `DELETE` (a trigger); whoever gets past that
/// is caught by [`verify`](Self::verify): an edited, deleted, reordered or forged record
/// breaks its chain, a record dropped off a stream's end no longer reaches the sealed head,
/// and a stream removed with its head shows against heads exported before.
pub struct PostgresAuditLog {
    store: PostgresStore,
    key: SecretKey,
    stream: String,
    /// The records handed in and not yet taken by a writer, each with where to answer.
    waiting: std::sync::Mutex<Vec<Waiting>>,
    /// The writer's turn, and where the stream stands: whoever holds it writes every record
    /// waiting, in one transaction.
    writing: Mutex<Stands>,
    /// The signer of the stream's tree heads and how often it signs, if it does.
    tree_heads: Option<(ReceiptSigner, u64)>,
}

/// One record handed in, and where to say it is committed.
type Waiting = (Handed, oneshot::Sender<Result<(), AuditLogError>>);

/// One record handed in: its members, and what it adds to the stream's counts.
#[derive(Debug)]
struct Handed {
    members: Members,
    counted: Option<Counted>,
}

/// Where the stream stands, as its writer left it.
struct Stands {
    /// `None` after a failed append: the head is read back before the next one.
    head: Option<ChainHead>,
    /// The stream's Merkle tree so far (`None`: read back before the next append).
    tree: Option<MerkleTree>,
}

impl std::fmt::Debug for PostgresAuditLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresAuditLog")
            .field("stream", &self.stream)
            .finish_non_exhaustive()
    }
}

impl PostgresAuditLog {
    /// A new stream in `store`'s database, chained and sealed with `key`.
    #[must_use]
    pub fn new(store: &PostgresStore, key: SecretKey) -> Self {
        let stream = format!("stream-{:016x}", rand::Rng::next_u64(&mut sys_rng()));
        PostgresAuditLog {
            store: store.clone(),
            key,
            stream,
            waiting: std::sync::Mutex::new(Vec::new()),
            writing: Mutex::new(Stands {
                head: Some(ChainHead::default()),
                tree: Some(MerkleTree::new()),
            }),
            tree_heads: None,
        }
    }

    /// The same sink, signing its stream's tree head (RFC 9162 Merkle root over the stream's
    /// records, and the chain head there) with `signer` in each transaction that takes the
    /// stream past a multiple of `every` records (records written together get one head, at
    /// the last of them; one at a time, a head every `every` records exactly): published in `tool_contract_audit_tree_heads`, a table an
    /// auditor copies away and holds the stream to with public keys alone
    /// ([`verify_published`](Self::verify_published)).
    #[must_use]
    pub fn sign_tree_heads(mut self, signer: ReceiptSigner, every: u64) -> Self {
        self.tree_heads = Some((signer, every.max(1)));
        self
    }

    /// The records of `stream`, in order: what an auditor copies away with its tree heads.
    ///
    /// # Errors
    ///
    /// [`AuditLogError::Database`] when the database fails.
    pub async fn records(
        store: &PostgresStore,
        stream: &str,
    ) -> Result<Vec<String>, AuditLogError> {
        let connection = connection(store).await?;
        let schema = store.schema();
        let rows = connection
            .query(
                &format!(
                    "SELECT record FROM {schema}.tool_contract_audit WHERE stream = $1 ORDER BY seq"
                ),
                &[&stream],
            )
            .await
            .map_err(database)?;
        Ok(rows.iter().map(|row| row.get(0)).collect())
    }

    /// The signed tree heads of `stream`, smallest first.
    ///
    /// # Errors
    ///
    /// [`AuditLogError::TreeHeadFailed`] for a row that is not one; [`AuditLogError::Database`].
    pub async fn tree_heads(
        store: &PostgresStore,
        stream: &str,
    ) -> Result<Vec<SignedTreeHead>, AuditLogError> {
        let connection = connection(store).await?;
        let schema = store.schema();
        let rows = connection
            .query(
                &format!("SELECT body FROM {schema}.tool_contract_audit_tree_heads WHERE stream = $1 ORDER BY tree_size"),
                &[&stream],
            )
            .await
            .map_err(database)?;
        rows.iter()
            .map(|row| {
                SignedTreeHead::from_json(row.get::<_, String>(0).as_bytes())
                    .map_err(AuditLogError::TreeHeadFailed)
            })
            .collect()
    }

    /// Holds `stream` as the database has it now up to `heads` (tree heads copied away
    /// before) with `keys` (the signer's published keys) alone: see
    /// [`verify_tree_heads`](super::verify_tree_heads). A stream rolled back or cut below a
    /// head held is refused, whatever its sealed head row says.
    ///
    /// # Errors
    ///
    /// [`AuditLogError::TreeHeads`]; [`AuditLogError::Database`].
    pub async fn verify_published(
        store: &PostgresStore,
        stream: &str,
        heads: &[SignedTreeHead],
        keys: &KeySet,
    ) -> Result<TreeHeadsHeld, AuditLogError> {
        let records = Self::records(store, stream).await?;
        verify_tree_heads(stream, records.iter().map(String::as_bytes), heads, keys)
            .map_err(AuditLogError::TreeHeads)
    }

    /// This sink's stream.
    #[must_use]
    pub fn stream(&self) -> &str {
        &self.stream
    }

    /// Verifies every stream in `store`'s database, in one snapshot, and returns their heads.
    /// Each stream in `known` (heads exported earlier, kept where the database's writers
    /// cannot rewrite them) must still be there and reach at least as far.
    ///
    /// What no check inside one database can see: a writer of the database who kept a copy
    /// of a stream's head row as it was at record N can delete the records after N and set
    /// the head row back to that copy. Everything left is then exactly what the log held at
    /// N, sealed with the key, and verifies: with `known` empty, such a cut tail passes. Only
    /// a head kept outside that writer's reach shows it: pass the heads exported last (this
    /// function's answer, stored elsewhere) as `known`, and the cut stream is
    /// [`AuditLogError::BehindCheckpoint`]. Signed checkpoints published outside the
    /// database are that anchor in general.
    ///
    /// # Errors
    ///
    /// [`AuditLogError::Stream`] naming the first stream that does not verify, with why:
    /// [`AuditLogError::Broken`] at the first bad record (`line` is its `seq`),
    /// [`AuditLogError::Checkpoint`] for a head missing or not sealed with `key`,
    /// [`AuditLogError::BehindCheckpoint`] for a chain that does not reach its head (or a
    /// known head); [`AuditLogError::Database`] when the database fails.
    pub async fn verify(
        store: &PostgresStore,
        key: &SecretKey,
        known: &[StreamHead],
    ) -> Result<Vec<StreamHead>, AuditLogError> {
        let mut connection = connection(store).await?;
        let tx = connection
            .build_transaction()
            .isolation_level(tokio_postgres::IsolationLevel::RepeatableRead)
            .read_only(true)
            .start()
            .await
            .map_err(database)?;
        let heads = verify_in(&tx, store.schema(), key).await;
        // Read only: ending it either way leaves nothing held on the pooled connection.
        let _ = tx.rollback().await;
        let heads = heads?;
        for expected in known {
            let found = heads
                .iter()
                .find(|head| head.stream == expected.stream)
                .map_or_else(ChainHead::default, |head| head.head.clone());
            if found.records < expected.head.records {
                return Err(in_stream(
                    &expected.stream,
                    AuditLogError::BehindCheckpoint {
                        checkpoint: expected.head.clone(),
                        found,
                    },
                ));
            }
        }
        Ok(heads)
    }

    /// Hands the record `handed` in, and waits until it is committed: the caller that
    /// gets the writer's turn first writes every record waiting, its own and those handed in
    /// meanwhile, in one transaction (group commit), and answers each.
    ///
    /// A caller dropped while it writes drops the transaction with it (rolled back): the
    /// others it took are answered [`AuditLogError::WriterStopped`], nothing of theirs
    /// written.
    async fn append_one(&self, handed: Handed) -> Result<(), AuditLogError> {
        let (answer, answered) = oneshot::channel();
        self.waiting().push((handed, answer));
        {
            let mut stands = self.writing.lock().await;
            let batch = std::mem::take(&mut *self.waiting());
            if !batch.is_empty() {
                self.write_batch(&mut stands, batch).await;
            }
        }
        answered.await.unwrap_or(Err(AuditLogError::WriterStopped))
    }

    fn waiting(&self) -> std::sync::MutexGuard<'_, Vec<Waiting>> {
        self.waiting
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Writes `batch` in one transaction, and answers each record's caller.
    async fn write_batch(&self, stands: &mut Stands, batch: Vec<Waiting>) {
        let (handed, answers): (Vec<Handed>, Vec<_>) = batch.into_iter().unzip();
        let written = self
            .write_in_one(stands.head.take(), stands.tree.take(), &handed)
            .await;
        let answered = match written {
            Ok((head, tree)) => {
                stands.head = Some(head);
                stands.tree = Some(tree);
                Ok(())
            }
            Err(error) => Err(error),
        };
        for answer in answers {
            let _ = answer.send(answered.as_ref().map_err(AuditLogError::again).copied());
        }
    }

    /// One transaction: the records `handed` after `current` (read from the database when
    /// `None`), with their counts, the head after them and, when one is due, the signed tree
    /// head; the head and the tree (read back when `None`) after them.
    async fn write_in_one(
        &self,
        current: Option<ChainHead>,
        tree: Option<MerkleTree>,
        handed: &[Handed],
    ) -> Result<(ChainHead, MerkleTree), AuditLogError> {
        let mut connection = connection(&self.store).await?;
        let tx = connection.transaction().await.map_err(database)?;
        match self.append_in(&tx, current, tree, handed).await {
            Ok(after) => {
                tx.commit().await.map_err(database)?;
                Ok(after)
            }
            Err(error) => {
                // Its locks go at once; the head is read back before the next append.
                let _ = tx.rollback().await;
                Err(error)
            }
        }
    }

    /// Writes the records `handed` after `current` (read from the database when `None`) and
    /// what they add to the stream's counts, the head after them and, when one is due, the
    /// signed tree head; returns that head and the tree (read back when `None`) with the
    /// records.
    async fn append_in(
        &self,
        tx: &Transaction<'_>,
        current: Option<ChainHead>,
        tree: Option<MerkleTree>,
        handed: &[Handed],
    ) -> Result<(ChainHead, MerkleTree), AuditLogError> {
        let current = match current {
            Some(current) => current,
            None => self.read_head(tx).await?,
        };
        let mut tree = match tree {
            Some(tree) => tree,
            None => self.read_tree(tx).await?,
        };
        let size_before = tree.size();
        let mut next = current.clone();
        let mut seqs = Vec::with_capacity(handed.len());
        let mut lines = Vec::with_capacity(handed.len());
        for record in handed {
            let (line, after) = line_after(&self.key, &next, &record.members);
            let line = String::from_utf8(line).map_err(|_| AuditLogError::Broken {
                line: after.records,
                link: BrokenLink::Malformed,
            })?;
            tree.push(line.as_bytes());
            seqs.push(signed(after.records));
            lines.push(line);
            next = after;
        }
        let counts = Counts::of(handed);
        let schema = self.store.schema();
        // The counts in the statement that appends the records: no round trip of their own.
        tx.execute(
            &format!(
                "WITH counted AS ( \
                     INSERT INTO {schema}.tool_contract_audit_counts AS c \
                         (minute, stream, tool, calls, granted, rejected, reconciled) \
                     SELECT minute, $1, tool, calls, granted, rejected, reconciled \
                     FROM unnest($4::bigint[], $5::text[], $6::bigint[], $7::bigint[], \
                                 $8::bigint[], $9::bigint[]) \
                         AS n (minute, tool, calls, granted, rejected, reconciled) \
                     ON CONFLICT (minute, stream, tool) DO UPDATE SET \
                         calls = c.calls + EXCLUDED.calls, \
                         granted = c.granted + EXCLUDED.granted, \
                         rejected = c.rejected + EXCLUDED.rejected, \
                         reconciled = c.reconciled + EXCLUDED.reconciled \
                 ) \
                 INSERT INTO {schema}.tool_contract_audit (stream, seq, record) \
                 SELECT $1, seq, record FROM unnest($2::bigint[], $3::text[]) AS r (seq, record)"
            ),
            &[
                &self.stream,
                &seqs,
                &lines,
                &counts.minutes,
                &counts.tools,
                &counts.calls,
                &counts.granted,
                &counts.rejected,
                &counts.reconciled,
            ],
        )
        .await
        .map_err(database)?;
        let seal = head_seal(&self.key, &self.stream, &next);
        // The head moves only from where this writer left it.
        let moved = tx
            .execute(
                &format!(
                    "INSERT INTO {schema}.tool_contract_audit_heads (stream, records, head_sha256, seal) \
                     VALUES ($1, $2, $3, $4) ON CONFLICT (stream) DO UPDATE SET \
                     records = EXCLUDED.records, head_sha256 = EXCLUDED.head_sha256, seal = EXCLUDED.seal \
                     WHERE tool_contract_audit_heads.records = $5"
                ),
                &[&self.stream, &signed(next.records), &next.head_sha256, &seal, &signed(current.records)],
            )
            .await
            .map_err(database)?;
        if moved != 1 {
            return Err(in_stream(&self.stream, AuditLogError::Checkpoint));
        }
        if let Some((signer, every)) = &self.tree_heads
            && tree.size() / every > size_before / every
        {
            let now = time::OffsetDateTime::now_utc();
            let signed_head = SignedTreeHead::sign(signer, &self.stream, &tree, &next, now)
                .map_err(AuditLogError::TreeHeadFailed)?;
            tx.execute(
                &format!(
                    "INSERT INTO {schema}.tool_contract_audit_tree_heads (stream, tree_size, body) \
                     VALUES ($1, $2, $3)"
                ),
                &[&self.stream, &signed(next.records), &signed_head.to_json()],
            )
            .await
            .map_err(database)?;
        }
        Ok((next, tree))
    }

    /// The stream's Merkle tree as the database holds its records.
    async fn read_tree(&self, tx: &Transaction<'_>) -> Result<MerkleTree, AuditLogError> {
        let schema = self.store.schema();
        let rows = tx
            .query(
                &format!(
                    "SELECT record FROM {schema}.tool_contract_audit WHERE stream = $1 ORDER BY seq"
                ),
                &[&self.stream],
            )
            .await
            .map_err(database)?;
        Ok(MerkleTree::of_lines(
            rows.iter().map(|row| row.get::<_, &str>(0).as_bytes()),
        ))
    }

    /// The stream's head as the database holds it, its seal checked.
    async fn read_head(&self, tx: &Transaction<'_>) -> Result<ChainHead, AuditLogError> {
        let schema = self.store.schema();
        let row = tx
            .query_opt(
                &format!("SELECT records, head_sha256, seal FROM {schema}.tool_contract_audit_heads WHERE stream = $1"),
                &[&self.stream],
            )
            .await
            .map_err(database)?;
        let Some(row) = row else {
            return Ok(ChainHead::default());
        };
        sealed_head(&self.key, &self.stream, row.get(0), row.get(1), row.get(2))
            .ok_or_else(|| in_stream(&self.stream, AuditLogError::Checkpoint))
    }
}

impl AuditSink for PostgresAuditLog {
    fn append<'a>(&'a self, model: &'a ModelResult, audit: &'a ProtectedAudit) -> AuditFuture<'a> {
        Box::pin(self.append_one(Handed {
            members: Members::of(Entry::Call(model, audit)),
            counted: Counted::of(model, audit),
        }))
    }
}

/// A batch's counts, one element per minute and tool, as the statement that appends the
/// batch takes them (one array per column).
#[derive(Debug, Default)]
struct Counts {
    minutes: Vec<i64>,
    tools: Vec<String>,
    calls: Vec<i64>,
    granted: Vec<i64>,
    rejected: Vec<i64>,
    reconciled: Vec<i64>,
}

impl Counts {
    /// What the records `handed` add, summed per minute and tool: one row of the counts
    /// table is written at most once by one statement.
    fn of(handed: &[Handed]) -> Self {
        let mut summed: std::collections::BTreeMap<(i64, &str), ToolTally> =
            std::collections::BTreeMap::new();
        for counted in handed.iter().filter_map(|record| record.counted.as_ref()) {
            summed
                .entry((counted.minute, counted.tool.as_str()))
                .or_default()
                .add(&counted.tally);
        }
        let mut counts = Counts::default();
        for ((minute, tool), tally) in summed {
            counts.minutes.push(minute);
            counts.tools.push(tool.to_owned());
            counts.calls.push(signed(tally.calls));
            counts.granted.push(signed(tally.granted));
            counts.rejected.push(signed(tally.rejected));
            counts.reconciled.push(signed(tally.reconciled));
        }
        counts
    }
}

async fn verify_in(
    tx: &Transaction<'_>,
    schema: &str,
    key: &SecretKey,
) -> Result<Vec<StreamHead>, AuditLogError> {
    let head_rows = tx
        .query(
            &format!("SELECT stream, records, head_sha256, seal FROM {schema}.tool_contract_audit_heads ORDER BY stream"),
            &[],
        )
        .await
        .map_err(database)?;
    let streams = tx
        .query(
            &format!("SELECT DISTINCT stream FROM {schema}.tool_contract_audit ORDER BY stream"),
            &[],
        )
        .await
        .map_err(database)?;
    for row in &streams {
        let stream: String = row.get(0);
        if !head_rows
            .iter()
            .any(|head| head.get::<_, String>(0) == stream)
        {
            // Records without a sealed head: the head was removed.
            return Err(in_stream(&stream, AuditLogError::Checkpoint));
        }
    }
    let mut heads = Vec::with_capacity(head_rows.len());
    for row in &head_rows {
        let stream: String = row.get(0);
        let sealed = sealed_head(key, &stream, row.get(1), row.get(2), row.get(3))
            .ok_or_else(|| in_stream(&stream, AuditLogError::Checkpoint))?;
        let records = tx
            .query(
                &format!("SELECT seq, record FROM {schema}.tool_contract_audit WHERE stream = $1 ORDER BY seq"),
                &[&stream],
            )
            .await
            .map_err(database)?;
        let mut verifier = Verifier::new(key, Some(ChainHead::default()));
        for record in &records {
            let seq: i64 = record.get(0);
            let line: String = record.get(1);
            let broken = |link| AuditLogError::Broken {
                line: u64::try_from(seq).unwrap_or(0),
                link,
            };
            verifier
                .next(line.as_bytes())
                .map_err(|error| match error {
                    // Named by the row's number, not its place among the rows left.
                    AuditLogError::Broken { link, .. } => in_stream(&stream, broken(link)),
                    other => in_stream(&stream, other),
                })?;
            // The row's number is the record's own: a row moved to another place shows.
            if signed(verifier.head().records) != seq {
                return Err(in_stream(&stream, broken(BrokenLink::Sequence)));
            }
        }
        let found = verifier.head().clone();
        if found != sealed {
            return Err(in_stream(
                &stream,
                AuditLogError::BehindCheckpoint {
                    checkpoint: sealed,
                    found,
                },
            ));
        }
        heads.push(StreamHead {
            stream,
            head: found,
        });
    }
    Ok(heads)
}

fn head_seal(key: &SecretKey, stream: &str, head: &ChainHead) -> String {
    let mut mac = key.mac();
    mac.update(HEAD_DOMAIN);
    mac.update(stream.as_bytes());
    mac.update(b"\n");
    mac.update(itoa::Buffer::new().format(head.records).as_bytes());
    mac.update(b"\n");
    mac.update(head.head_sha256.as_bytes());
    lower_hex(&mac.finalize().into_bytes())
}

/// The head a row holds, if its seal is this key's for this stream.
fn sealed_head(
    key: &SecretKey,
    stream: &str,
    records: i64,
    head_sha256: String,
    seal: String,
) -> Option<ChainHead> {
    let head = ChainHead {
        records: u64::try_from(records).ok()?,
        head_sha256,
    };
    digests_equal(&seal, &head_seal(key, stream, &head)).then_some(head)
}

fn in_stream(stream: &str, error: AuditLogError) -> AuditLogError {
    AuditLogError::Stream {
        stream: stream.to_owned(),
        error: Box::new(error),
    }
}

/// A pooled connection of `store`, its failure the log's.
async fn connection(store: &PostgresStore) -> Result<PooledConnection<'_>, AuditLogError> {
    store.connection().await.map_err(AuditLogError::Database)
}

fn signed(records: u64) -> i64 {
    i64::try_from(records).unwrap_or(i64::MAX)
}

fn database(error: tokio_postgres::Error) -> AuditLogError {
    AuditLogError::Database(StoreError::store(error))
}

fn sys_rng() -> impl rand::Rng {
    use rand::SeedableRng;
    rand::rngs::SmallRng::try_from_rng(&mut SysRng).unwrap_or_else(|_| {
        // No OS randomness: stream ids still differ per process and instant.
        let nanos = time::OffsetDateTime::now_utc().unix_timestamp_nanos();
        rand::rngs::SmallRng::seed_from_u64(nanos as u64 ^ u64::from(std::process::id()))
    })
}

impl PostgresAuditLog {
    /// `stream`'s records and tree heads, as one history.
    async fn history_of(
        store: &PostgresStore,
        stream: &str,
    ) -> Result<super::History, AuditLogError> {
        let lines = Self::records(store, stream).await?;
        Ok(super::History {
            log: stream.to_owned(),
            lines: lines.into_iter().map(String::into_bytes).collect(),
            tree_heads: Self::tree_heads(store, stream).await?,
        })
    }
}

impl super::AuditHistory for PostgresAuditLog {
    /// This sink's stream and its tree heads, in two queries.
    fn read_back(&self) -> super::HistoryFuture<'_> {
        Box::pin(Self::history_of(&self.store, &self.stream))
    }

    /// Every stream of the audit table (each replica writes its own), in the order of their
    /// names.
    fn read_back_all(&self) -> super::HistoriesFuture<'_> {
        Box::pin(async move {
            let streams = {
                let connection = connection(&self.store).await?;
                let schema = self.store.schema();
                let rows = connection
                    .query(
                        &format!(
                            "SELECT DISTINCT stream FROM {schema}.tool_contract_audit ORDER BY stream"
                        ),
                        &[],
                    )
                    .await
                    .map_err(database)?;
                rows.iter()
                    .map(|row| row.get::<_, String>(0))
                    .collect::<Vec<_>>()
            };
            let mut histories = Vec::with_capacity(streams.len());
            for stream in &streams {
                histories.push(Self::history_of(&self.store, stream).await?);
            }
            Ok(histories)
        })
    }

    /// The counts kept as the records were appended, summed over every stream, when each
    /// stream counted every call of `minutes`: one whose records from before schema version
    /// 10 are not counted must have its last uncounted record observed at least a minute
    /// before them (records may be appended a little out of the order they were observed
    /// in), read and checked by its keyed digest; otherwise `None`.
    fn tally<'a>(&'a self, minutes: &'a std::ops::RangeInclusive<i64>) -> super::TallyFuture<'a> {
        Box::pin(async move {
            let connection = connection(&self.store).await?;
            let schema = self.store.schema();
            let uncounted = connection
                .query(
                    &format!(
                        "SELECT a.record FROM {schema}.tool_contract_audit_heads h \
                         LEFT JOIN {schema}.tool_contract_audit a \
                             ON a.stream = h.stream AND a.seq = h.counted_from - 1 \
                         WHERE h.counted_from > 1"
                    ),
                    &[],
                )
                .await
                .map_err(database)?;
            for row in &uncounted {
                let Some(line) = row.get::<_, Option<&str>>(0) else {
                    // Cut from the stream's beginning: when it was observed is unknown.
                    return Ok(None);
                };
                let before = match Verifier::anywhere(&self.key).next(line.as_bytes()) {
                    Ok(ReadEntry::Call(call)) => observed_at(&call.0)
                        .is_some_and(|at| super::minute_of(at) < minutes.start().saturating_sub(1)),
                    Ok(ReadEntry::Event(_)) | Err(_) => false,
                };
                if !before {
                    return Ok(None);
                }
            }
            let rows = connection
                .query(
                    &format!(
                        "SELECT tool, sum(calls)::bigint, sum(granted)::bigint, \
                             sum(rejected)::bigint, sum(reconciled)::bigint \
                         FROM {schema}.tool_contract_audit_counts \
                         WHERE minute BETWEEN $1 AND $2 GROUP BY tool"
                    ),
                    &[minutes.start(), minutes.end()],
                )
                .await
                .map_err(database)?;
            let count = |row: &tokio_postgres::Row, column| {
                u64::try_from(row.get::<_, i64>(column)).unwrap_or_default()
            };
            Ok(Some(
                rows.iter()
                    .map(|row| {
                        let tally = ToolTally {
                            calls: count(row, 1),
                            granted: count(row, 2),
                            rejected: count(row, 3),
                            reconciled: count(row, 4),
                        };
                        (row.get::<_, String>(0), tally)
                    })
                    .collect::<Tallies>(),
            ))
        })
    }

    /// Every stream's page in one query: each stream's head, with its newest records before
    /// where `ends` says its page ends, read by the table's key (no record before the page
    /// is read).
    fn read_page<'a>(
        &'a self,
        ends: &'a super::PageEnds,
        records: usize,
    ) -> super::PagesFuture<'a> {
        Box::pin(async move {
            let connection = connection(&self.store).await?;
            let schema = self.store.schema();
            let (named, before): (Vec<&str>, Vec<i64>) = ends
                .iter()
                .map(|(stream, &end)| (stream.as_str(), signed(end)))
                .unzip();
            let limit = i64::try_from(records).unwrap_or(i64::MAX);
            let rows = connection
                .query(
                    &format!(
                        "SELECT h.stream, h.records, page.record, \
                             (SELECT min(o.seq) FROM {schema}.tool_contract_audit o \
                              WHERE o.stream = h.stream), \
                             (SELECT t.body FROM {schema}.tool_contract_audit_tree_heads t \
                              WHERE t.stream = h.stream ORDER BY t.tree_size DESC LIMIT 1) \
                         FROM {schema}.tool_contract_audit_heads h \
                         LEFT JOIN LATERAL ( \
                             SELECT a.seq, a.record FROM {schema}.tool_contract_audit a \
                             WHERE a.stream = h.stream AND a.seq < COALESCE( \
                                 (SELECT e.before FROM unnest($1::text[], $2::bigint[]) \
                                  AS e(stream, before) WHERE e.stream = h.stream), \
                                 9223372036854775807) \
                             ORDER BY a.seq DESC LIMIT $3 \
                         ) page ON true \
                         ORDER BY h.stream, page.seq"
                    ),
                    &[&named, &before, &limit],
                )
                .await
                .map_err(database)?;
            let mut pages: Vec<super::HistoryPage> = Vec::new();
            for row in &rows {
                let stream: String = row.get(0);
                if pages.last().is_none_or(|page| page.log != stream) {
                    let tree_head = row
                        .get::<_, Option<&str>>(4)
                        .map(|body| {
                            SignedTreeHead::from_json(body.as_bytes())
                                .map_err(AuditLogError::TreeHeadFailed)
                        })
                        .transpose()?;
                    pages.push(super::HistoryPage {
                        log: stream,
                        lines: Vec::new(),
                        records: u64::try_from(row.get::<_, i64>(1)).unwrap_or_default(),
                        oldest: row
                            .get::<_, Option<i64>>(3)
                            .and_then(|seq| u64::try_from(seq).ok()),
                        tree_head,
                    });
                }
                if let (Some(page), Some(record)) =
                    (pages.last_mut(), row.get::<_, Option<&str>>(2))
                {
                    page.lines.push(record.as_bytes().to_vec());
                }
            }
            Ok(pages)
        })
    }
}
