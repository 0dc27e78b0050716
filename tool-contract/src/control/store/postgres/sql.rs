//! The store's statements, written once for its schema, and the types of the common path's
//! parameters (sent with each statement, or given when it is prepared).

use tokio_postgres::types::Type;

pub(super) const COLUMNS: &str = "key, request_sha256, tool, state, owner, lease_generation, \
                       lease_until_ms, expires_at_ms, result, call, kept";
pub(super) const APPROVAL_COLUMNS: &str =
    "state, approval_id, expires_at_ms, body, redeemed_owner, redeemed_generation, seal";

/// The statements, written once for the store's schema.
pub(super) struct Sql {
    pub(super) schema: String,
    pub(super) claim_if_absent: String,
    pub(super) claim_redeeming: String,
    pub(super) approval_look: String,
    pub(super) advance_in_place: String,
    pub(super) record: String,
    pub(super) record_for_update: String,
    pub(super) insert_record: String,
    pub(super) update_record: String,
    pub(super) delete_record: String,
    pub(super) approval: String,
    pub(super) approval_key: String,
    pub(super) put_approval: String,
    pub(super) purge_records: String,
    pub(super) purge_operations: String,
    pub(super) purge_approvals: String,
    pub(super) stale: String,
    pub(super) pending: String,
    pub(super) approver: String,
    pub(super) approvers: String,
    pub(super) put_approver: String,
    pub(super) task: String,
    pub(super) insert_task: String,
    pub(super) update_task: String,
    pub(super) purge_tasks: String,
    pub(super) purge_workers: String,
    pub(super) stale_tasks: String,
    pub(super) tasks_of: String,
    pub(super) worker_lease: String,
    pub(super) put_worker_lease: String,
    pub(super) renew_worker: String,
    pub(super) pending_among: String,
    pub(super) notify: String,
    pub(super) open_tasks_of: String,
    pub(super) pending_approvals_of: String,
}

impl Sql {
    pub(super) fn new(schema: &str) -> Self {
        let ledger = format!("{schema}.tool_contract_ledger");
        let approvals = format!("{schema}.tool_contract_approvals");
        let approvers = format!("{schema}.tool_contract_approvers");
        let tasks = format!("{schema}.tool_contract_tasks");
        let workers = format!("{schema}.tool_contract_workers");
        let put_worker_lease = format!(
            "INSERT INTO {workers} (worker, lease_until_ms, seal) VALUES ($1, $2, $3) \
             ON CONFLICT (worker) DO UPDATE SET lease_until_ms = EXCLUDED.lease_until_ms, \
             seal = EXCLUDED.seal"
        );
        let returned = qualified("l", COLUMNS);
        // Neither statement takes the key's advisory lock (see the module's notes).
        let claim_if_absent = format!(
            "INSERT INTO {ledger} ({COLUMNS}) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) \
             ON CONFLICT (key) DO NOTHING RETURNING 1"
        );
        // `decide_advance` in one statement, for a record still in `$5` (and, in flight,
        // under the lease `$6`, `$7`): the new state, the result if one is given, the new
        // expiry, and no call once finished (`$9`). Nothing else of the row changes.
        let advance_in_place = format!(
            "UPDATE {ledger} AS l SET state = $2, result = COALESCE($3, l.result), \
             expires_at_ms = $4, call = CASE WHEN $9 THEN NULL ELSE l.call END \
             WHERE l.key = $1 AND l.state = $5 \
             AND (NOT $8 OR (l.owner = $6 AND l.lease_generation = $7)) \
             RETURNING {returned}"
        );
        let approval_returned = qualified("a", APPROVAL_COLUMNS);
        // The approval row and the record at `$1`, each all nulls when there is none.
        let approval_look = format!(
            "SELECT {approval_returned}, {returned} FROM (SELECT $1::text AS key) AS asked \
             LEFT JOIN {approvals} AS a ON a.key = asked.key \
             LEFT JOIN {ledger} AS l ON l.key = asked.key"
        );
        let claim_redeeming = format!(
            "SELECT {schema}.tool_contract_claim_redeeming($1, $2, $3, $4, $5, $6, $7, $8, $9, \
             $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22)"
        );
        Sql {
            schema: schema.to_owned(),
            claim_if_absent,
            claim_redeeming,
            approval_look,
            advance_in_place,
            record: format!("SELECT {COLUMNS} FROM {ledger} WHERE key = $1"),
            record_for_update: format!("SELECT {COLUMNS} FROM {ledger} WHERE key = $1 FOR UPDATE"),
            insert_record: format!(
                "INSERT INTO {ledger} ({COLUMNS}) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) ON CONFLICT (key) DO NOTHING"
            ),
            // The fence is checked in the statement that writes.
            update_record: format!(
                "UPDATE {ledger} SET request_sha256 = $2, tool = $3, state = $4, owner = $5, \
                 lease_generation = $6, lease_until_ms = $7, expires_at_ms = $8, result = $9, \
                 call = $10, kept = $11 WHERE key = $1 AND state = $12 AND owner = $13 \
                 AND lease_generation = $14"
            ),
            delete_record: format!(
                "DELETE FROM {ledger} WHERE key = $1 AND state = $2 AND owner = $3 \
                 AND lease_generation = $4"
            ),
            approval: format!(
                "SELECT {APPROVAL_COLUMNS} FROM {approvals} WHERE key = $1 FOR UPDATE"
            ),
            approval_key: format!("SELECT key FROM {approvals} WHERE approval_id = $1"),
            // `$1` is whose request it is; `$2` to `$9` the key and [`APPROVAL_COLUMNS`].
            put_approval: format!(
                "INSERT INTO {approvals} (principal_ref, key, {APPROVAL_COLUMNS}) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) ON CONFLICT (key) DO UPDATE SET \
                 principal_ref = EXCLUDED.principal_ref, \
                 state = EXCLUDED.state, approval_id = EXCLUDED.approval_id, \
                 expires_at_ms = EXCLUDED.expires_at_ms, body = EXCLUDED.body, \
                 redeemed_owner = EXCLUDED.redeemed_owner, \
                 redeemed_generation = EXCLUDED.redeemed_generation, seal = EXCLUDED.seal"
            ),
            purge_records: format!(
                "DELETE FROM {ledger} WHERE expires_at_ms <= $1 AND state IN ($2, $3, $4, $5) \
                 AND NOT kept"
            ),
            purge_operations: format!(
                "DELETE FROM {ledger} WHERE expires_at_ms <= $1 AND state IN ($2, $3, $4, $5)"
            ),
            purge_approvals: format!("DELETE FROM {approvals} WHERE expires_at_ms <= $1"),
            stale: format!(
                "SELECT {COLUMNS} FROM {ledger} WHERE (state IN ($1, $2) AND lease_until_ms <= $3) \
                 OR state = $4 ORDER BY key"
            ),
            pending: format!(
                "SELECT {APPROVAL_COLUMNS}, key FROM {approvals} WHERE state = $1 \
                 AND expires_at_ms > $2 ORDER BY expires_at_ms, approval_id"
            ),
            approver: format!("SELECT body, seal FROM {approvers} WHERE approver_id = $1"),
            approvers: format!("SELECT approver_id, body, seal FROM {approvers}"),
            task: format!("SELECT body, seal FROM {tasks} WHERE task_id = $1"),
            insert_task: format!(
                "INSERT INTO {tasks} \
                 (task_id, owner, status, lease_until_ms, expires_at_ms, body, seal, worker) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (task_id) DO NOTHING"
            ),
            update_task: format!(
                "UPDATE {tasks} SET owner = $2, status = $3, lease_until_ms = $4, \
                 expires_at_ms = $5, body = $6, seal = $7, worker = $8 WHERE task_id = $1"
            ),
            // The columns narrow the search; the sealed rows decide.
            stale_tasks: format!(
                "SELECT t.task_id, t.body, t.seal, w.lease_until_ms, w.seal FROM {tasks} AS t \
                 LEFT JOIN {workers} AS w ON w.worker = t.worker \
                 WHERE t.status IN ('working', 'input_required') AND t.lease_until_ms <= $1 \
                 AND (w.lease_until_ms IS NULL OR w.lease_until_ms <= $1)"
            ),
            tasks_of: format!(
                "SELECT task_id, body, seal FROM {tasks} \
                 WHERE owner = $1 AND task_id COLLATE \"C\" > $2 \
                 AND (expires_at_ms IS NULL OR expires_at_ms > $3) \
                 ORDER BY task_id COLLATE \"C\" LIMIT $4"
            ),
            purge_tasks: format!("DELETE FROM {tasks} WHERE expires_at_ms <= $1"),
            purge_workers: format!("DELETE FROM {workers} WHERE lease_until_ms <= $1"),
            worker_lease: format!("SELECT lease_until_ms, seal FROM {workers} WHERE worker = $1"),
            // The lease written, and the open tasks among `$4` that name the worker, as their
            // columns say, read in the same statement.
            renew_worker: format!(
                "WITH renewed AS ({put_worker_lease}) \
                 SELECT task_id, status FROM {tasks} WHERE task_id = ANY($4::text[]) \
                 AND worker = $1 AND status IN ('working', 'input_required') \
                 AND (expires_at_ms IS NULL OR expires_at_ms > $5)"
            ),
            put_worker_lease,
            pending_among: format!(
                "SELECT approval_id FROM {approvals} WHERE approval_id = ANY($1::text[]) \
                 AND state = $2 AND expires_at_ms > $3"
            ),
            notify: "SELECT pg_notify($1, $2)".to_owned(),
            pending_approvals_of: format!(
                "SELECT count(*) FROM {approvals} WHERE principal_ref = $1 \
                 AND state = 'pending' AND expires_at_ms > $2 AND key <> $3"
            ),
            open_tasks_of: format!(
                "SELECT count(*) FROM {tasks} WHERE owner = $1 \
                 AND status IN ('working', 'input_required') \
                 AND (expires_at_ms IS NULL OR expires_at_ms > $2)"
            ),
            put_approver: format!(
                "INSERT INTO {approvers} (approver_id, body, seal) VALUES ($1, $2, $3) \
                 ON CONFLICT (approver_id) DO UPDATE SET body = EXCLUDED.body, seal = EXCLUDED.seal"
            ),
        }
    }
}

/// `columns` (a list joined by `", "`), each qualified by the table alias `table`.
fn qualified(table: &str, columns: &str) -> String {
    columns
        .split(", ")
        .map(|column| format!("{table}.{column}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The types of a ledger row's eleven columns ([`COLUMNS`]), in order.
pub(super) const RECORD_TYPES: [Type; 11] = [
    Type::TEXT,
    Type::TEXT,
    Type::TEXT,
    Type::TEXT,
    Type::TEXT,
    Type::INT8,
    Type::INT8,
    Type::INT8,
    Type::TEXT,
    Type::TEXT,
    Type::BOOL,
];

/// The types of `advance_in_place`'s nine parameters.
pub(super) const ADVANCE_TYPES: [Type; 9] = [
    Type::TEXT,
    Type::TEXT,
    Type::TEXT,
    Type::INT8,
    Type::TEXT,
    Type::TEXT,
    Type::INT8,
    Type::BOOL,
    Type::BOOL,
];

/// The types of `tool_contract_claim_redeeming`'s eleven arguments after the record's eleven
/// ([`RECORD_TYPES`]): the approval id, the granted row (state, expiry, body, seal), the
/// redeemed row (state, expiry, body, owner, generation, seal).
pub(super) const GRANT_TYPES: [Type; 11] = [
    Type::TEXT,
    Type::TEXT,
    Type::INT8,
    Type::TEXT,
    Type::TEXT,
    Type::TEXT,
    Type::INT8,
    Type::TEXT,
    Type::TEXT,
    Type::INT8,
    Type::TEXT,
];
