//! The steps of a write's common path, each one statement and so one round trip:
//!
//! - [`claim_if_absent`](crate::control::ControlStore::claim_if_absent) on an empty key:
//!   an insert that does nothing if the key is taken;
//! - the look of a write that needs approval, with the approval stage when it writes
//!   nothing (the grant or the pending approval for this very request): the record and the
//!   approval row, read together;
//! - the claim that redeems the grant that stage read: a function that checks the grant's row
//!   is still, column for column and seal for seal, the row the stage read, inserts the
//!   record, and writes the redeemed row with the seal computed here;
//! - an [`advance`](crate::control::ControlStore::advance) whose record is as the step
//!   expects: an update whose conditions are the fence.
//!
//! Anything else writes nothing and runs as the general step. They take no advisory lock,
//! which costs a quarter of their throughput, and need none:
//!
//! - the key's primary index admits one row, and an insert of a key another transaction is
//!   inserting waits for it to end; a general claim that read the key empty and then finds
//!   its insert beaten reads the row that won and decides again;
//! - the update takes the row's lock, which a general step holds from its
//!   `SELECT … FOR UPDATE` to its end; PostgreSQL then checks the update's conditions again on
//!   the row as committed (READ COMMITTED), so it moves only a record still in the step's
//!   state under its lease;
//! - the redeeming claim takes the grant's row lock (`SELECT … FOR UPDATE`) before anything
//!   else, as every general step that reads an approval row does, so it and they take turns
//!   on the row; PostgreSQL checks its conditions on the row as committed, and a row another
//!   step changed (spent, given back, replaced by a new pending approval) no longer matches:
//!   the claim writes nothing and the general claim decides. It inserts the record only
//!   while it holds that lock, and the redeemed row only after the insert took the key. It
//!   takes the grant's row before the key, as the general claim does; the one step that
//!   takes the key first and then a grant's row (a release that gives a grant back) finds
//!   that grant redeemed, which the claim's conditions never match, so the two never wait
//!   on each other;
//! - a read of one statement sees one committed state of both rows: the approval stage it
//!   answers is the one the general step would have answered at that moment, and what it
//!   answers (a grant) is checked again by the claim that redeems it;
//! - a general step that read the key empty and writes only approval rows (the approval
//!   stage) orders before an insert that lands after its read, as if it had run first: it
//!   read nothing the insert wrote, and the insert reads nothing it writes.

use tokio_postgres::types::ToSql;

use super::prepared::Common;
use super::{PostgresStore, approval_row_of, record_at, record_of, record_values, store};
use crate::control::store::decide::{ClaimDecision, decide_claim, decide_redeem};
use crate::control::store::rows::approval_look;
use crate::control::store::stored::{approval_row, sealed_entry, to_sql_u64};
use crate::control::{
    Advance, ApprovalAsk, ApprovalEntry, ApprovalGrant, ApprovalLook, Claim, Claimed, IfAbsent,
    Record, StoreError,
};

/// What `tool_contract_claim_redeeming` answers when it claimed the key and redeemed the
/// grant ('changed' and 'taken' when it wrote nothing).
const CLAIMED: &str = "claimed";

/// Where the record's columns begin in the approval stage's look (after the approval
/// row's seven).
const LOOK_RECORD: usize = 7;

impl PostgresStore {
    /// The claim of an empty key in one statement, else the record there in a second;
    /// `None` when the record that was there is gone again (the general steps then decide).
    pub(super) async fn claim_in_one_statement(
        &self,
        claim: &Claim,
    ) -> Result<Option<IfAbsent>, StoreError> {
        let ClaimDecision::Write(fresh) = decide_claim(None, claim) else {
            return Ok(None);
        };
        let generation = to_sql_u64(fresh.lease.generation);
        let lease_until = to_sql_u64(fresh.lease_until_ms);
        let expires_at = to_sql_u64(fresh.expires_at_ms);
        let state = fresh.state.as_str();
        let params = record_values(&fresh, &state, &generation, &lease_until, &expires_at);
        let mut connection = self.connection().await?;
        let inserted = connection
            .query_common(&self.sql, Common::ClaimIfAbsent, &params)
            .await?;
        if inserted.is_some() {
            return Ok(Some(IfAbsent::Claimed(Claimed::Fresh)));
        }
        let row = connection
            .query_common(&self.sql, Common::Record, &[&claim.key])
            .await?;
        row.as_ref()
            .map(|row| record_of(row).map(IfAbsent::Present))
            .transpose()
    }

    /// The advance of a record still as `step` expects it, in one statement; `None` when it
    /// is not (gone, moved on, another lease, or an event with no move from `step.from`),
    /// for the general step to answer.
    pub(super) async fn advance_in_one_statement(
        &self,
        step: &Advance,
    ) -> Result<Option<Record>, StoreError> {
        let Ok(next) = step.from.next(step.event) else {
            return Ok(None);
        };
        let mut connection = self.connection().await?;
        let row = connection
            .query_common(
                &self.sql,
                Common::AdvanceInPlace,
                &[
                    &step.key,
                    &next.as_str(),
                    &step.result,
                    &to_sql_u64(step.now_ms.saturating_add(step.retention_ms)),
                    &step.from.as_str(),
                    &step.lease.owner,
                    &to_sql_u64(step.lease.generation),
                    &step.from.is_in_flight(),
                    &next.is_terminal(),
                ],
            )
            .await?;
        row.as_ref().map(record_of).transpose()
    }

    /// The claim of an empty key that redeems `grant`, in one statement (the function
    /// `tool_contract_claim_redeeming`), while the grant's row is still the row the approval
    /// stage read and opened: `None` when it is not, or the key is taken, and nothing was
    /// written (the general claim then decides).
    pub(super) async fn claim_redeeming_in_one_statement(
        &self,
        claim: &Claim,
        grant: &ApprovalGrant,
    ) -> Result<Option<Claimed>, StoreError> {
        if claim.redeem.as_deref() != Some(grant.approval_id.as_str()) {
            return Ok(None);
        }
        let ClaimDecision::Write(fresh) = decide_claim(None, claim) else {
            return Ok(None);
        };
        let granted = ApprovalEntry::Granted {
            grant: grant.clone(),
            redeemed_by: None,
        };
        let Some(redeemed) = decide_redeem(Some(&granted), &grant.approval_id, &claim.lease) else {
            return Ok(None);
        };
        // Both seals are the application's own, computed here: the statement compares the
        // stored one with the first and writes the second, and never holds the key.
        let granted_seal = claim.seal.seal(&claim.key, &granted)?;
        let redeemed_seal = claim.seal.seal(&claim.key, &redeemed)?;
        let was = approval_row(&granted)?;
        let now = approval_row(&redeemed)?;
        let Some(by) = &now.redeemed_by else {
            return Err(StoreError::Corrupt(
                "a redeemed grant names no lease".into(),
            ));
        };
        let generation = to_sql_u64(fresh.lease.generation);
        let lease_until = to_sql_u64(fresh.lease_until_ms);
        let expires_at = to_sql_u64(fresh.expires_at_ms);
        let state = fresh.state.as_str();
        let (was_expires_at, now_expires_at) =
            (to_sql_u64(was.expires_at_ms), to_sql_u64(now.expires_at_ms));
        let by_generation = to_sql_u64(by.generation);
        let mut params =
            record_values(&fresh, &state, &generation, &lease_until, &expires_at).to_vec();
        params.extend([
            &grant.approval_id as &(dyn ToSql + Sync),
            &was.state,
            &was_expires_at,
            &was.body,
            &granted_seal,
            &now.state,
            &now_expires_at,
            &now.body,
            &by.owner,
            &by_generation,
            &redeemed_seal,
        ]);
        let mut connection = self.connection().await?;
        let row = connection
            .query_common_one(&self.sql, Common::ClaimRedeeming, &params)
            .await?;
        let answer: String = row.try_get(0).map_err(store)?;
        Ok((answer == CLAIMED).then_some(Claimed::Fresh))
    }

    /// The look of a write that needs approval, in one statement: the record and the
    /// approval row at the ask's key, read together, and the approval stage's answer when
    /// that stage writes nothing (the grant or the pending approval for this very request,
    /// a rejection); a stage that writes (a new pending approval) is left to the general
    /// step, under the key's lock.
    pub(super) async fn look_in_one_statement(
        &self,
        ask: &ApprovalAsk,
    ) -> Result<ApprovalLook, StoreError> {
        let mut connection = self.connection().await?;
        let row = connection
            .query_common_one(&self.sql, Common::ApprovalLook, &[&ask.ledger_key])
            .await?;
        let entry = match row.try_get::<_, Option<String>>(0).map_err(store)? {
            None => None,
            Some(_) => {
                let (entry, seal) = sealed_entry(approval_row_of(&row)?)?;
                ask.seal.open(&ask.ledger_key, &entry, seal.as_deref())?;
                Some(entry)
            }
        };
        let record = match row
            .try_get::<_, Option<String>>(LOOK_RECORD)
            .map_err(store)?
        {
            None => None,
            Some(_) => Some(record_at(&row, LOOK_RECORD)?),
        };
        Ok(approval_look(record, entry.as_ref(), ask))
    }
}
