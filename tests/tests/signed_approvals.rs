//! Approvals signed by the approvers' own passkeys: approvers are enrolled identities (a
//! WebAuthn registration with user verification), each decision is an assertion over the
//! approval statement's digest, four eyes counts enrolled approvers, and the receipt carries
//! each assertion so anyone checks it offline with two published files. The ceremonies run
//! against a software authenticator, with the JSON a browser would exchange.

use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as URL_SAFE;
use serde_json::json;
use time::OffsetDateTime;
use tool_contract::control::{
    ApprovalError, Approved, Approver, ControlStore, EnrollError, MemoryStore, PendingApproval,
    SignedDecisionRefusal,
};
use tool_contract::dispatch::{Dispatcher, DispatcherBuilder, SignedDecision};
use tool_contract::results::{
    ApproverKeys, BasisKind, Decision, KeySet, ReceiptError, ReceiptSigner, RelyingParty,
};
use tool_contract::{CallContext, ErrorCode, Status};
use tool_contract_tests::backends::{Backend, Memory, Postgres, sqlite_file};
use tool_contract_tests::passkey::{
    ORIGIN, RP_ID, SoftAuthenticator, enrol, enrol_approver, enrol_on, signed,
};
use tool_contract_tests::postgres::Schema;
use tool_contract_tests::tracker::{
    Remote, SendMessage, alice, builder, clock, code, message, pending_approval, receipt_of, run,
};

const HOUR: Duration = Duration::from_secs(3600);

fn outside(message: &SendMessage) -> bool {
    !message.to.ends_with("@acme.example")
}

fn relying_party() -> RelyingParty {
    RelyingParty::new(RP_ID, "Acme desk", [ORIGIN]).expect("the tests' relying party")
}

fn signer() -> ReceiptSigner {
    ReceiptSigner::new("desk-1", [0x5e; 32], clock() - Duration::from_secs(86_400))
}

/// A desk whose writes outside the company need two approvers, each signing with a passkey.
fn four_eyes_signed(remote: &Arc<Remote>, store: Arc<dyn ControlStore>) -> DispatcherBuilder {
    builder(remote)
        .store(store)
        .relying_party(relying_party())
        .approvers_when(2, outside)
        .signed_approvals_when(outside)
        .approval_receipts(signer())
}

fn desk(remote: &Arc<Remote>, store: Arc<dyn ControlStore>) -> Dispatcher {
    four_eyes_signed(remote, store)
        .build()
        .expect("the desk builds")
}

/// Ana's approval of `pending`, signed: the statement and the assertion the page would post.
async fn ana_approves(
    dispatcher: &Dispatcher,
    ana: &mut SoftAuthenticator,
    pending: &PendingApproval,
) -> (tool_contract::results::ApprovalStatement, Vec<u8>) {
    signed(dispatcher, ana, pending, "sup-ana", Decision::Approve, None).await
}

async fn decide(
    dispatcher: &Dispatcher,
    authenticator: &mut SoftAuthenticator,
    pending: &PendingApproval,
    approver_id: &str,
    decision: Decision,
) -> Result<SignedDecision, ApprovalError> {
    let (statement, assertion) = signed(
        dispatcher,
        authenticator,
        pending,
        approver_id,
        decision,
        None,
    )
    .await;
    dispatcher.decide_signed(&statement, None, &assertion).await
}

fn refusal(result: Result<SignedDecision, ApprovalError>) -> SignedDecisionRefusal {
    match result {
        Err(ApprovalError::Refused(refusal)) => refusal,
        other => panic!("expected a refusal, got {other:?}"),
    }
}

fn outside_call() -> CallContext {
    message("m1", "bob@globex.example")
}

fn service_keys() -> KeySet {
    KeySet::new([signer().published_key()]).expect("the published key")
}

async fn approver_keys(dispatcher: &Dispatcher) -> ApproverKeys {
    let published = dispatcher
        .published_approvers()
        .await
        .expect("the directory reads")
        .expect("a relying party");
    ApproverKeys::from_json(published.to_json().as_bytes()).expect("the published file reads")
}

/// Two enrolled supervisors approve a four-eyes write, each on a replica of its own over one
/// store; the write runs once, and its receipt verifies offline with the two published files.
async fn two_supervisors_approve_across_two_replicas(store: &impl Backend) {
    let remote = Remote::new();
    let (first, second) = (
        desk(&remote, store.open().await),
        desk(&remote, store.open().await),
    );
    let mut ana = enrol(&first, "sup-ana", &["acme"]).await;
    let mut ben = enrol(&second, "sup-ben", &["acme"]).await;
    let call = outside_call();
    let pending = pending_approval(&first, &call).await;
    assert!(pending.signatures_required);

    let one = decide(&first, &mut ana, &pending, "sup-ana", Decision::Approve).await;
    let Ok(SignedDecision::Approved(Approved::Awaiting(waiting))) = one else {
        panic!("one signed approval of two granted it: {one:?}");
    };
    assert_eq!(waiting.approvals_still_needed(), 1);
    assert_eq!(
        code(&run(&second, &call).await),
        Some(ErrorCode::ApprovalRequired)
    );

    let two = decide(&second, &mut ben, &pending, "sup-ben", Decision::Approve).await;
    let Ok(SignedDecision::Approved(Approved::Granted(grant))) = two else {
        panic!("two signed approvals did not grant it: {two:?}");
    };
    assert_eq!(
        grant.approvers().collect::<Vec<_>>(),
        ["sup-ana", "sup-ben"]
    );

    let ran = run(&first, &call).await;
    assert_eq!(ran.result.model.status(), Status::Succeeded, "{ran:?}");
    assert_eq!(
        run(&second, &call).await.result.model.status(),
        Status::Succeeded
    );
    assert_eq!(remote.all_requests(), 1, "the write ran once");

    let text = receipt_of(&ran).to_json();
    let receipt = service_keys()
        .verify_with_approvers(text.as_bytes(), &approver_keys(&second).await)
        .expect("the receipt verifies with the published files alone");
    assert_eq!(receipt.approvals_required, Some(2));
    assert_eq!(receipt.signatures_required, Some(true));
    assert!(
        receipt
            .approvals
            .iter()
            .all(|approval| approval.basis == Some(BasisKind::Passkey))
    );
}

#[tokio::test]
async fn two_supervisors_approve_across_two_replicas_in_memory() {
    two_supervisors_approve_across_two_replicas(&Memory(MemoryStore::new())).await;
}

#[tokio::test]
async fn two_supervisors_approve_across_two_replicas_on_one_sqlite_file() {
    two_supervisors_approve_across_two_replicas(&sqlite_file()).await;
}

#[tokio::test]
async fn two_supervisors_approve_across_two_replicas_on_postgres() {
    if let Some(schema) = Schema::new("two_supervisors_approve_across_two_replicas_on_postgres") {
        two_supervisors_approve_across_two_replicas(&Postgres(schema)).await;
    }
}

/// One approver with no passkey, two replicas over one store, each beginning an enrollment
/// (two tabs of one invitation), both finished at once: one credential is enrolled, the other
/// ceremony is spent; and an enrollment finished already cannot be finished again.
async fn one_enrollment_enrols_one_credential_once(store: &impl Backend) {
    let remote = Remote::new();
    let (first, second) = (
        desk(&remote, store.open().await),
        desk(&remote, store.open().await),
    );
    first
        .put_approver(Approver::new("sup-ana", "Ana", ["acme"], ["*"]))
        .await
        .unwrap();
    let (one, two) = (
        first.begin_enrollment("sup-ana").await.unwrap(),
        second.begin_enrollment("sup-ana").await.unwrap(),
    );
    let (mut laptop, mut phone) = (SoftAuthenticator::new(), SoftAuthenticator::new());
    let (laptop_answer, phone_answer) = (
        laptop.register(&one.options).await,
        phone.register(&two.options).await,
    );
    let (finished_one, finished_two) = tokio::join!(
        first.finish_enrollment(&one, &laptop_answer),
        second.finish_enrollment(&two, &phone_answer),
    );
    let finished = [&finished_one, &finished_two];
    assert_eq!(
        finished.iter().filter(|finished| finished.is_ok()).count(),
        1,
        "{finished:?}"
    );
    assert!(
        finished
            .iter()
            .any(|finished| matches!(finished, Err(EnrollError::NotUnderWay))),
        "{finished:?}"
    );
    let ana = second.approver("sup-ana").await.unwrap().unwrap();
    assert_eq!(ana.credentials.len(), 1, "one invitation, one passkey");
    // The ceremony that won, finished again, with the same answer or another.
    let (won, answer) = match finished_one {
        Ok(_) => (&one, &laptop_answer),
        Err(_) => (&two, &phone_answer),
    };
    assert!(matches!(
        first.finish_enrollment(won, answer).await,
        Err(EnrollError::NotUnderWay)
    ));
    assert_eq!(
        first
            .approver("sup-ana")
            .await
            .unwrap()
            .unwrap()
            .credentials
            .len(),
        1
    );
}

#[tokio::test]
async fn one_enrollment_enrols_one_credential_once_in_memory() {
    one_enrollment_enrols_one_credential_once(&Memory(MemoryStore::new())).await;
}

#[tokio::test]
async fn one_enrollment_enrols_one_credential_once_on_one_sqlite_file() {
    one_enrollment_enrols_one_credential_once(&sqlite_file()).await;
}

#[tokio::test]
async fn one_enrollment_enrols_one_credential_once_on_postgres() {
    if let Some(schema) = Schema::new("one_enrollment_enrols_one_credential_once_on_postgres") {
        one_enrollment_enrols_one_credential_once(&Postgres(schema)).await;
    }
}

/// What `approver`, enrolled beside `sup-ana` on [`one_supervisor`]'s desk, is refused when
/// they sign an approval of its pending write.
async fn refusal_of(approver: Approver) -> SignedDecisionRefusal {
    let (_, dispatcher, _, pending) = one_supervisor().await;
    let approver_id = approver.approver_id.clone();
    let mut authenticator = enrol_approver(&dispatcher, approver).await;
    let decided = decide(
        &dispatcher,
        &mut authenticator,
        &pending,
        &approver_id,
        Decision::Approve,
    )
    .await;
    refusal(decided)
}

/// A desk in memory with `sup-ana` enrolled for `acme`, and an outside write pending.
async fn one_supervisor() -> (Arc<Remote>, Dispatcher, SoftAuthenticator, PendingApproval) {
    let remote = Remote::new();
    let dispatcher = desk(&remote, Arc::new(MemoryStore::new()));
    let ana = enrol(&dispatcher, "sup-ana", &["acme"]).await;
    let pending = pending_approval(&dispatcher, &outside_call()).await;
    (remote, dispatcher, ana, pending)
}

#[tokio::test]
async fn the_same_approver_signing_twice_counts_once() {
    let (remote, dispatcher, mut ana, pending) = one_supervisor().await;
    let mut second_key = SoftAuthenticator::new();
    enrol_on(&dispatcher, "sup-ana", &mut second_key)
        .await
        .expect("a second passkey of hers");
    for authenticator in [&mut ana, &mut second_key] {
        let decided = decide(
            &dispatcher,
            authenticator,
            &pending,
            "sup-ana",
            Decision::Approve,
        )
        .await
        .expect("her approval is recorded");
        let SignedDecision::Approved(approved) = decided else {
            panic!("an approval recorded as {decided:?}");
        };
        assert_eq!(approved.still_needed(), 1, "one person, however many keys");
    }
    assert_eq!(
        code(&run(&dispatcher, &outside_call()).await),
        Some(ErrorCode::ApprovalRequired)
    );
    assert_eq!(remote.all_requests(), 0);
}

#[tokio::test]
async fn an_assertion_for_another_approval_is_refused() {
    let (_, dispatcher, mut ana, pending) = one_supervisor().await;
    let other = pending_approval(&dispatcher, &message("m2", "eve@initech.example")).await;
    let (statement, assertion) = ana_approves(&dispatcher, &mut ana, &pending).await;
    // The statement of the other approval, with this one's assertion.
    let other_statement = dispatcher
        .approval_statement(&other.approval_id, "sup-ana", Decision::Approve, None, HOUR)
        .await
        .unwrap();
    let replayed = dispatcher
        .decide_signed(&other_statement, None, &assertion)
        .await;
    let refused = refusal(replayed);
    assert!(
        matches!(&refused, SignedDecisionRefusal::Assertion(why) if why.contains("challenge")),
        "{refused:?}"
    );
    // The first statement's own assertion still counts.
    dispatcher
        .decide_signed(&statement, None, &assertion)
        .await
        .expect("the assertion counts for its own statement");
}

#[tokio::test]
async fn an_assertion_for_another_decision_is_refused() {
    let (_, dispatcher, mut ana, pending) = one_supervisor().await;
    let (approve, assertion) = ana_approves(&dispatcher, &mut ana, &pending).await;
    // A rejection claimed with an approval's signature.
    let reject = tool_contract::results::ApprovalStatement {
        decision: Decision::RejectNotPermitted,
        ..approve
    };
    let swapped = dispatcher.decide_signed(&reject, None, &assertion).await;
    assert!(matches!(
        refusal(swapped),
        SignedDecisionRefusal::Assertion(_)
    ));
    let still = dispatcher.pending_approvals().await.unwrap();
    assert!(
        still.iter().any(|it| it.approval_id == pending.approval_id),
        "nothing recorded"
    );
}

#[tokio::test]
async fn an_assertion_for_another_edit_is_refused() {
    let (_, dispatcher, mut ana, pending) = one_supervisor().await;
    let edited = json!({ "to": "bob@globex.example", "text": "hello, corrected" });
    let other_edit = json!({ "to": "mallory@globex.example", "text": "hello" });
    let (statement, assertion) = signed(
        &dispatcher,
        &mut ana,
        &pending,
        "sup-ana",
        Decision::Approve,
        Some(&edited),
    )
    .await;
    // The signed statement, sent with other edits than it names.
    let moved = dispatcher
        .decide_signed(&statement, Some(&other_edit), &assertion)
        .await;
    assert_eq!(
        refusal(moved),
        SignedDecisionRefusal::OtherStatement("edited_arguments_sha256")
    );
    // And the other edits' own statement, with the first edit's signature.
    let other_statement = dispatcher
        .approval_statement(
            &pending.approval_id,
            "sup-ana",
            Decision::Approve,
            Some(&other_edit),
            HOUR,
        )
        .await
        .unwrap();
    let swapped = dispatcher
        .decide_signed(&other_statement, Some(&other_edit), &assertion)
        .await;
    assert!(matches!(
        refusal(swapped),
        SignedDecisionRefusal::Assertion(_)
    ));
    dispatcher
        .decide_signed(&statement, Some(&edited), &assertion)
        .await
        .expect("the edit it signed counts");
}

#[tokio::test]
async fn a_signature_counter_that_goes_back_is_refused_and_recorded() {
    let (_, dispatcher, mut ana, pending) = one_supervisor().await;
    let cloned = ana.snapshot();
    decide(
        &dispatcher,
        &mut ana,
        &pending,
        "sup-ana",
        Decision::Approve,
    )
    .await
    .expect("the first signature counts");
    // The same passkey, copied before it signed: its counter is behind.
    let mut clone = SoftAuthenticator::new();
    clone.restore(cloned);
    let again = decide(
        &dispatcher,
        &mut clone,
        &pending,
        "sup-ana",
        Decision::Approve,
    )
    .await;
    let SignedDecisionRefusal::CounterRegressed { stored, presented } = refusal(again) else {
        panic!("not a counter refusal");
    };
    assert!(presented <= stored, "{presented} after {stored}");
    let ana = dispatcher.approver("sup-ana").await.unwrap().unwrap();
    let regressions = &ana.credentials[0].counter_regressions;
    assert_eq!(
        regressions.len(),
        1,
        "the directory keeps the regression for auditors"
    );
    assert_eq!(regressions[0].presented, presented);
}

#[tokio::test]
async fn an_approver_not_enrolled_for_the_tenant_is_refused() {
    let olga = Approver::new("sup-olga", "Olga", ["globex"], ["*"]);
    assert_eq!(refusal_of(olga).await, SignedDecisionRefusal::OtherTenant);
}

#[tokio::test]
async fn an_approver_for_other_tools_is_refused() {
    let ian = Approver::new("sup-ian", "Ian", ["acme"], ["create_issue"]);
    assert_eq!(refusal_of(ian).await, SignedDecisionRefusal::OtherTool);
}

#[tokio::test]
async fn a_credential_not_enrolled_for_the_approver_is_refused() {
    let (_, dispatcher, _, pending) = one_supervisor().await;
    // Ben's own enrolled passkey, signing a statement that names Ana.
    let mut ben = enrol(&dispatcher, "sup-ben", &["acme"]).await;
    let statement = dispatcher
        .approval_statement(
            &pending.approval_id,
            "sup-ana",
            Decision::Approve,
            None,
            HOUR,
        )
        .await
        .unwrap();
    let ben_statement = dispatcher
        .approval_statement(
            &pending.approval_id,
            "sup-ben",
            Decision::Approve,
            None,
            HOUR,
        )
        .await
        .unwrap();
    let mut options = dispatcher
        .signing_request(&ben_statement)
        .await
        .unwrap()
        .options;
    options["publicKey"]["challenge"] = json!(URL_SAFE.encode(statement.challenge()));
    let assertion = ben.sign(&options).await;
    let refused = dispatcher.decide_signed(&statement, None, &assertion).await;
    assert_eq!(refusal(refused), SignedDecisionRefusal::UnknownCredential);
    // And a passkey never enrolled at all.
    let mut stranger = SoftAuthenticator::new();
    let approver = Approver::new("sup-zed", "Zed", ["acme"], ["*"]);
    let other_desk = desk(&Remote::new(), Arc::new(MemoryStore::new()));
    other_desk.put_approver(approver).await.unwrap();
    let zed = enrol_on(&other_desk, "sup-zed", &mut stranger)
        .await
        .unwrap();
    let mut options = dispatcher
        .signing_request(&statement)
        .await
        .unwrap()
        .options;
    let stranger_credential = &zed.credentials[0].credential_id;
    options["publicKey"]["allowCredentials"] =
        json!([{ "type": "public-key", "id": stranger_credential }]);
    let assertion = stranger.sign(&options).await;
    let refused = dispatcher.decide_signed(&statement, None, &assertion).await;
    assert_eq!(refusal(refused), SignedDecisionRefusal::UnknownCredential);
}

#[tokio::test]
async fn an_approver_nobody_enrolled_is_refused() {
    let (_, dispatcher, mut ana, pending) = one_supervisor().await;
    let (statement, assertion) = ana_approves(&dispatcher, &mut ana, &pending).await;
    let nobody = tool_contract::results::ApprovalStatement {
        approver_id: "sup-nobody".into(),
        ..statement
    };
    let refused = dispatcher.decide_signed(&nobody, None, &assertion).await;
    assert_eq!(refusal(refused), SignedDecisionRefusal::UnknownApprover);
}

#[tokio::test]
async fn an_enrollment_from_another_origin_is_refused() {
    let dispatcher = desk(&Remote::new(), Arc::new(MemoryStore::new()));
    let approver = Approver::new("sup-ana", "Ana", ["acme"], ["*"]);
    dispatcher.put_approver(approver).await.unwrap();
    // A look-alike page under the RP ID relaying the ceremony: its origin is not the desk's.
    let mut phished = SoftAuthenticator::at("https://phish.desk.example", true);
    let refused = enrol_on(&dispatcher, "sup-ana", &mut phished).await;
    assert!(
        matches!(refused, Err(EnrollError::Registration(_))),
        "{refused:?}"
    );
}

#[tokio::test]
async fn an_assertion_made_for_another_origin_is_refused() {
    let (_, dispatcher, mut ana, pending) = one_supervisor().await;
    // Ana's own passkey, asked by a look-alike page under the RP ID.
    ana.answer_for("https://phish.desk.example");
    let refused = refusal(
        decide(
            &dispatcher,
            &mut ana,
            &pending,
            "sup-ana",
            Decision::Approve,
        )
        .await,
    );
    assert!(
        matches!(&refused, SignedDecisionRefusal::Assertion(why) if why.contains("origin")),
        "{refused:?}"
    );
}

/// `statement` signed on `authenticator`: the decision its client would post.
async fn sign_statement(
    dispatcher: &Dispatcher,
    authenticator: &mut SoftAuthenticator,
    statement: &tool_contract::results::ApprovalStatement,
) -> Result<SignedDecision, ApprovalError> {
    let request = dispatcher.signing_request(statement).await.unwrap();
    let assertion = authenticator.sign(&request.options).await;
    dispatcher.decide_signed(statement, None, &assertion).await
}

#[tokio::test]
async fn an_expiry_the_approvers_client_chose_past_the_statement_lifetime_is_refused() {
    let (remote, dispatcher, mut ana, pending) = one_supervisor().await;
    let statement = dispatcher
        .approval_statement(
            &pending.approval_id,
            "sup-ana",
            Decision::Approve,
            None,
            HOUR,
        )
        .await
        .unwrap();
    for far in ["9999-12-31T23:59:59Z", "2099-01-01T00:00:00Z"] {
        let mut chosen = statement.clone();
        chosen.expires_at = far.to_owned();
        // Signed by her own passkey: the signature is hers, the expiry is not hers to set.
        let refused = refusal(sign_statement(&dispatcher, &mut ana, &chosen).await);
        assert_eq!(
            refused,
            SignedDecisionRefusal::OtherStatement("expires_at"),
            "{far}"
        );
    }
    // Asked for a week, a statement runs the dispatcher's lifetime.
    let asked = dispatcher
        .approval_statement(
            &pending.approval_id,
            "sup-ana",
            Decision::Approve,
            None,
            Duration::from_secs(7 * 86_400),
        )
        .await
        .unwrap();
    let expires_at = OffsetDateTime::parse(
        &asked.expires_at,
        &time::format_description::well_known::Rfc3339,
    )
    .unwrap();
    assert_eq!(
        expires_at,
        clock() + tool_contract::dispatch::DEFAULT_STATEMENT_LIFETIME
    );
    sign_statement(&dispatcher, &mut ana, &asked)
        .await
        .expect("a statement the service made is taken");
    assert_eq!(remote.all_requests(), 0);
}

#[tokio::test]
async fn an_expiry_in_another_spelling_of_the_same_time_is_refused() {
    let (_, dispatcher, mut ana, pending) = one_supervisor().await;
    let statement = dispatcher
        .approval_statement(
            &pending.approval_id,
            "sup-ana",
            Decision::Approve,
            None,
            HOUR,
        )
        .await
        .unwrap();
    let canonical = statement.expires_at.clone();
    assert!(
        canonical.ends_with('Z') && !canonical.contains('.'),
        "{canonical}"
    );
    let whole = canonical.trim_end_matches('Z');
    // The same instant: the receipt would spell it canonically, and its signature would not
    // verify against the statement signed.
    for spelling in [
        format!("{whole}+00:00"),
        format!("{whole}.000Z"),
        format!("{whole}z"),
        format!("{whole}-00:00"),
    ] {
        let mut respelled = statement.clone();
        respelled.expires_at = spelling.clone();
        let refused = refusal(sign_statement(&dispatcher, &mut ana, &respelled).await);
        assert_eq!(
            refused,
            SignedDecisionRefusal::OtherStatement("expires_at"),
            "{spelling}"
        );
    }
    sign_statement(&dispatcher, &mut ana, &statement)
        .await
        .expect("the canonical spelling is taken");
}

#[tokio::test]
async fn an_assertion_made_cross_origin_is_refused() {
    let (remote, dispatcher, mut ana, pending) = one_supervisor().await;
    let statement = dispatcher
        .approval_statement(
            &pending.approval_id,
            "sup-ana",
            Decision::Approve,
            None,
            HOUR,
        )
        .await
        .unwrap();
    let request = dispatcher.signing_request(&statement).await.unwrap();
    // Her own passkey, at the right origin, asked by a frame embedded in another site's page.
    let framed = ana.sign_cross_origin(&request.options).await;
    let refused = refusal(dispatcher.decide_signed(&statement, None, &framed).await);
    assert!(
        matches!(&refused, SignedDecisionRefusal::Assertion(why) if why.contains("cross-origin")),
        "{refused:?}"
    );
    // The same statement signed by the page itself is taken.
    let own = ana.sign(&request.options).await;
    dispatcher
        .decide_signed(&statement, None, &own)
        .await
        .expect("signed at the console itself");
    assert_eq!(remote.all_requests(), 0);
}

#[tokio::test]
async fn enrollment_without_user_verification_is_refused() {
    let dispatcher = desk(&Remote::new(), Arc::new(MemoryStore::new()));
    let approver = Approver::new("sup-ana", "Ana", ["acme"], ["*"]);
    dispatcher.put_approver(approver).await.unwrap();
    // A page that lowered the requirement, and an authenticator that verifies nobody.
    let mut presence_only = SoftAuthenticator::without_user_verification();
    let enrollment = dispatcher.begin_enrollment("sup-ana").await.unwrap();
    assert_eq!(
        enrollment.options["publicKey"]["authenticatorSelection"]["userVerification"],
        "required"
    );
    let mut lowered = enrollment.options.clone();
    lowered["publicKey"]["authenticatorSelection"]["userVerification"] = json!("discouraged");
    let answer = presence_only.register(&lowered).await;
    let refused = dispatcher.finish_enrollment(&enrollment, &answer).await;
    assert!(
        matches!(&refused, Err(EnrollError::Registration(why)) if why.contains("user verified")),
        "{refused:?}"
    );
    let ana = dispatcher.approver("sup-ana").await.unwrap().unwrap();
    assert!(ana.credentials.is_empty());
}

#[tokio::test]
async fn an_assertion_without_user_verification_is_refused() {
    let (_, dispatcher, mut ana, pending) = one_supervisor().await;
    let statement = dispatcher
        .approval_statement(
            &pending.approval_id,
            "sup-ana",
            Decision::Approve,
            None,
            HOUR,
        )
        .await
        .unwrap();
    let mut options = dispatcher
        .signing_request(&statement)
        .await
        .unwrap()
        .options;
    assert_eq!(options["publicKey"]["userVerification"], "required");
    // A page that lowered the requirement: the authenticator signs with presence only.
    options["publicKey"]["userVerification"] = json!("discouraged");
    ana.verify_users(false);
    let assertion = ana.sign(&options).await;
    let refused = refusal(dispatcher.decide_signed(&statement, None, &assertion).await);
    assert!(
        matches!(&refused, SignedDecisionRefusal::Assertion(why) if why.contains("user verified")),
        "{refused:?}"
    );
}

#[tokio::test]
async fn a_revoked_credential_signs_nothing() {
    let (_, dispatcher, mut ana, pending) = one_supervisor().await;
    // Signed while the credential stood, sent after it was revoked.
    let (statement, assertion) = ana_approves(&dispatcher, &mut ana, &pending).await;
    let credential_id = dispatcher
        .approver("sup-ana")
        .await
        .unwrap()
        .unwrap()
        .credentials[0]
        .credential_id
        .clone();
    dispatcher
        .revoke_credential("sup-ana", &credential_id)
        .await
        .unwrap();
    let refused = dispatcher.decide_signed(&statement, None, &assertion).await;
    assert_eq!(refusal(refused), SignedDecisionRefusal::RevokedCredential);
    // And no signing request offers it any more.
    let asked = dispatcher.signing_request(&statement).await;
    assert!(matches!(
        asked,
        Err(ApprovalError::Refused(
            SignedDecisionRefusal::UnknownCredential
        ))
    ));
}

#[tokio::test]
async fn the_principal_who_asked_never_approves_their_own_call() {
    let own = Approver::new("sup-alice", "Alice", ["acme"], ["*"]).with_subject(alice().subject);
    assert_eq!(refusal_of(own).await, SignedDecisionRefusal::OwnCall);
}

#[tokio::test]
async fn a_rule_of_signed_approvals_refuses_the_services_word() {
    let (remote, dispatcher, _, pending) = one_supervisor().await;
    for approver in ["carol", "dave"] {
        let given = dispatcher
            .approve(
                &pending.approval_id,
                &pending.preview_sha256,
                approver,
                clock() + HOUR,
            )
            .await;
        assert!(
            matches!(given, Err(ApprovalError::SignatureRequired)),
            "{given:?}"
        );
    }
    assert_eq!(
        code(&run(&dispatcher, &outside_call()).await),
        Some(ErrorCode::ApprovalRequired)
    );
    assert_eq!(remote.all_requests(), 0);
}

#[tokio::test]
async fn a_signed_rejection_refuses_the_write_for_its_reason() {
    let (remote, dispatcher, mut ana, pending) = one_supervisor().await;
    let decided = decide(
        &dispatcher,
        &mut ana,
        &pending,
        "sup-ana",
        Decision::RejectWrongDetails,
    )
    .await
    .expect("the rejection is recorded");
    assert_eq!(decided, SignedDecision::Rejected);
    let refused = run(&dispatcher, &outside_call()).await;
    assert_eq!(code(&refused), Some(ErrorCode::RejectedWrongDetails));
    assert_eq!(remote.all_requests(), 0);
}

/// A four-eyes write approved by two passkeys, run: its receipt's text, and the two
/// published files.
async fn a_signed_receipt() -> (String, KeySet, ApproverKeys) {
    let remote = Remote::new();
    let dispatcher = desk(&remote, Arc::new(MemoryStore::new()));
    let mut ana = enrol(&dispatcher, "sup-ana", &["acme"]).await;
    let mut ben = enrol(&dispatcher, "sup-ben", &["acme"]).await;
    let pending = pending_approval(&dispatcher, &outside_call()).await;
    for (authenticator, id) in [(&mut ana, "sup-ana"), (&mut ben, "sup-ben")] {
        decide(&dispatcher, authenticator, &pending, id, Decision::Approve)
            .await
            .expect("approved");
    }
    let ran = run(&dispatcher, &outside_call()).await;
    let text = receipt_of(&ran).to_json();
    (text, service_keys(), approver_keys(&dispatcher).await)
}

#[tokio::test]
async fn a_signed_receipt_verifies_offline_and_no_byte_of_it_can_change() {
    let (text, keys, approvers) = a_signed_receipt().await;
    keys.verify_with_approvers(text.as_bytes(), &approvers)
        .expect("the receipt verifies");
    let mut changed = text.clone().into_bytes();
    for at in 0..changed.len() {
        let original = changed[at];
        // A different printable byte: the text stays text, and no change goes unseen.
        changed[at] = if original == b'a' { b'b' } else { b'a' };
        let verdict = keys.verify_with_approvers(&changed, &approvers);
        assert!(
            verdict.is_err(),
            "changing byte {at} ({:?}) went unseen",
            original as char
        );
        changed[at] = original;
    }
}

#[tokio::test]
async fn a_receipt_with_signed_approvals_needs_the_approver_keys() {
    let (text, keys, approvers) = a_signed_receipt().await;
    assert_eq!(
        keys.verify(text.as_bytes()),
        Err(ReceiptError::ApproverKeysNeeded)
    );
    // With another approver's keys in place of Ana's, her signature does not verify.
    let mut swapped = approvers.clone();
    let ben_key = swapped.approvers[1].credentials[0].public_key.clone();
    swapped.approvers[0].credentials[0].public_key = ben_key;
    let verdict = keys.verify_with_approvers(text.as_bytes(), &swapped);
    assert!(
        matches!(&verdict, Err(ReceiptError::BadAssertion { approver, .. }) if approver == "sup-ana"),
        "{verdict:?}"
    );
    // A file that is not an approver key set is refused, not read as an empty one.
    for garbage in [&b""[..], b"{}", b"{\"relying_party\":{},\"approvers\":[]}"] {
        assert!(matches!(
            ApproverKeys::from_json(garbage),
            Err(ReceiptError::KeySet(_))
        ));
    }
    // Without Ben published, his approval names nobody the auditor knows.
    let mut without_ben = approvers;
    without_ben
        .approvers
        .retain(|approver| approver.approver_id != "sup-ben");
    let verdict = keys.verify_with_approvers(text.as_bytes(), &without_ben);
    assert!(
        matches!(verdict, Err(ReceiptError::UnknownApprover { .. })),
        "{verdict:?}"
    );
}

#[tokio::test]
async fn a_credential_revoked_before_the_approval_does_not_verify_it() {
    let (text, keys, mut approvers) = a_signed_receipt().await;
    let long_ago = OffsetDateTime::UNIX_EPOCH
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap();
    approvers.approvers[0].credentials[0].valid_until = Some(long_ago);
    let verdict = keys.verify_with_approvers(text.as_bytes(), &approvers);
    assert!(
        matches!(verdict, Err(ReceiptError::UnknownApprover { .. })),
        "{verdict:?}"
    );
}

#[tokio::test]
async fn an_approval_given_through_the_api_is_marked_as_the_services_word() {
    let remote = Remote::new();
    let dispatcher = builder(&remote)
        .approval_receipts(signer())
        .build()
        .unwrap();
    let call = outside_call();
    let pending = pending_approval(&dispatcher, &call).await;
    dispatcher
        .approve(
            &pending.approval_id,
            &pending.preview_sha256,
            "back-office",
            clock() + HOUR,
        )
        .await
        .unwrap();
    let ran = run(&dispatcher, &call).await;
    let text = receipt_of(&ran).to_json();
    let receipt = service_keys().verify(text.as_bytes()).expect("it verifies");
    assert_eq!(receipt.approvals[0].basis, Some(BasisKind::Service));
    assert_eq!(receipt.approvals[0].assertion, None);
    assert_eq!(receipt.signatures_required, Some(false));
}

#[tokio::test]
async fn the_published_approver_keys_hold_public_keys_only() {
    let remote = Remote::new();
    let dispatcher = desk(&remote, Arc::new(MemoryStore::new()));
    let _ana = enrol(&dispatcher, "sup-ana", &["acme"]).await;
    let published = approver_keys(&dispatcher).await;
    let jwk = &published.approvers[0].credentials[0].public_key;
    assert_eq!(jwk["kty"], "EC");
    assert_eq!(jwk["crv"], "P-256");
    assert!(jwk.get("d").is_none(), "no private member: {jwk}");
    assert_eq!(published.relying_party.id, RP_ID);
}

#[tokio::test]
async fn an_approver_row_edited_in_the_database_is_refused() {
    let file = sqlite_file();
    let remote = Remote::new();
    let dispatcher = desk(&remote, file.open().await);
    let mut olga = enrol(&dispatcher, "sup-olga", &["globex"]).await;
    let pending = pending_approval(&dispatcher, &outside_call()).await;
    let (statement, assertion) = signed(
        &dispatcher,
        &mut olga,
        &pending,
        "sup-olga",
        Decision::Approve,
        None,
    )
    .await;
    // Someone with the database, not the keys, widens Olga's scope to every tenant.
    let connection = rusqlite::Connection::open(&file.0).unwrap();
    let changed = connection
        .execute(
            "UPDATE tool_contract_approvers SET body = replace(body, '\"globex\"', '\"*\"')",
            [],
        )
        .unwrap();
    assert_eq!(changed, 1);
    let read = dispatcher.approvers().await;
    assert!(
        matches!(read, Err(tool_contract::control::StoreError::Unsealed(_))),
        "{read:?}"
    );
    let decided = dispatcher.decide_signed(&statement, None, &assertion).await;
    assert!(
        matches!(
            decided,
            Err(ApprovalError::Store(
                tool_contract::control::StoreError::Unsealed(_)
            ))
        ),
        "{decided:?}"
    );
    assert_eq!(remote.all_requests(), 0);
}

#[tokio::test]
async fn malformed_answers_are_refused_with_a_reason_and_record_nothing() {
    let (remote, dispatcher, mut ana, pending) = one_supervisor().await;
    let (statement, assertion) = ana_approves(&dispatcher, &mut ana, &pending).await;
    let cut = &assertion[..assertion.len() / 2];
    let twice = {
        let text = String::from_utf8(assertion.clone()).unwrap();
        text.replacen("{", r#"{"type":"public-key","#, 1)
            .into_bytes()
    };
    let deep = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000)).into_bytes();
    for bad in [
        &b""[..],
        b"not json",
        b"{}",
        b"\xff\xfe",
        cut,
        &twice,
        &deep,
    ] {
        let refused = dispatcher.decide_signed(&statement, None, bad).await;
        assert!(
            matches!(
                refused,
                Err(ApprovalError::Refused(SignedDecisionRefusal::Assertion(_)))
            ),
            "{refused:?}"
        );
    }
    let still = dispatcher.pending_approvals().await.unwrap();
    assert!(still[0].approvals.is_empty(), "nothing was recorded");
    // An enrollment answered with garbage is refused too, and enrols nothing.
    let enrollment = dispatcher.begin_enrollment("sup-ana").await.unwrap();
    for bad in [&b"not json"[..], b"{}", &deep] {
        let refused = dispatcher.finish_enrollment(&enrollment, bad).await;
        assert!(
            matches!(refused, Err(EnrollError::Registration(_))),
            "{refused:?}"
        );
    }
    let ana = dispatcher.approver("sup-ana").await.unwrap().unwrap();
    assert_eq!(ana.credentials.len(), 1);
    // The genuine assertion still counts after all that.
    dispatcher
        .decide_signed(&statement, None, &assertion)
        .await
        .expect("the genuine assertion counts");
    assert_eq!(remote.all_requests(), 0);
}

#[tokio::test]
async fn an_enrollment_answer_sent_twice_enrols_once() {
    let dispatcher = desk(&Remote::new(), Arc::new(MemoryStore::new()));
    for id in ["sup-ana", "sup-ben"] {
        let approver = Approver::new(id, id, ["acme"], ["*"]);
        dispatcher.put_approver(approver).await.unwrap();
    }
    let mut authenticator = SoftAuthenticator::new();
    let enrollment = dispatcher.begin_enrollment("sup-ana").await.unwrap();
    let answer = authenticator.register(&enrollment.options).await;
    dispatcher
        .finish_enrollment(&enrollment, &answer)
        .await
        .expect("the first answer enrols");
    // The ceremony is spent: finished once, it adds nothing more.
    let again = dispatcher.finish_enrollment(&enrollment, &answer).await;
    assert!(matches!(again, Err(EnrollError::NotUnderWay)), "{again:?}");
    // Nor can Ben's enrollment take Ana's credential: its challenge is another.
    let bens = dispatcher.begin_enrollment("sup-ben").await.unwrap();
    let taken = dispatcher.finish_enrollment(&bens, &answer).await;
    assert!(
        matches!(taken, Err(EnrollError::Registration(_))),
        "{taken:?}"
    );
    let ana = dispatcher.approver("sup-ana").await.unwrap().unwrap();
    let ben = dispatcher.approver("sup-ben").await.unwrap().unwrap();
    assert_eq!((ana.credentials.len(), ben.credentials.len()), (1, 0));
}

/// What someone who writes to the store can do, and what catches it: the seals bind a row's
/// content, not its place in time, so a row put back as it was reads as the store's own. What
/// such a writer does not hold (approver keys published elsewhere, the audit log) shows it.
mod put_back {
    use super::*;
    use tool_contract::control::{AuditHistory, MemoryAuditLog};
    use tool_contract_tests::backends::Sqlite;
    use tool_contract_tests::tracker::audit_key;

    fn sql(store: &Sqlite, statements: &str) {
        rusqlite::Connection::open(&store.0)
            .unwrap()
            .execute_batch(statements)
            .unwrap();
    }

    #[tokio::test]
    async fn a_revoked_passkey_put_back_is_caught_by_the_approver_keys_published_after_its_revocation()
     {
        let store = sqlite_file();
        let remote = Remote::new();
        let dispatcher = desk(&remote, store.open().await);
        let mut ana = enrol(&dispatcher, "sup-ana", &["acme"]).await;
        let mut ben = enrol(&dispatcher, "sup-ben", &["acme"]).await;
        sql(
            &store,
            "CREATE TABLE copied AS SELECT * FROM tool_contract_approvers \
             WHERE approver_id = 'sup-ana'",
        );
        let credential = dispatcher
            .approver("sup-ana")
            .await
            .unwrap()
            .unwrap()
            .credentials[0]
            .credential_id
            .clone();
        dispatcher
            .revoke_credential("sup-ana", &credential)
            .await
            .unwrap();
        // The auditor's copy, kept outside the database.
        let published = approver_keys(&dispatcher).await;
        sql(
            &store,
            "INSERT OR REPLACE INTO tool_contract_approvers SELECT * FROM copied",
        );

        // The store takes the row as its own: the revoked passkey signs, the write runs.
        let call = outside_call();
        let pending = pending_approval(&dispatcher, &call).await;
        decide(
            &dispatcher,
            &mut ana,
            &pending,
            "sup-ana",
            Decision::Approve,
        )
        .await
        .expect("the put-back row lets the revoked passkey sign");
        decide(
            &dispatcher,
            &mut ben,
            &pending,
            "sup-ben",
            Decision::Approve,
        )
        .await
        .unwrap();
        let ran = run(&dispatcher, &call).await;
        assert_eq!(ran.result.model.status(), Status::Succeeded);
        // The receipt does not verify with the keys published after the revocation.
        let receipt = receipt_of(&ran).to_json();
        let refused = service_keys().verify_with_approvers(receipt.as_bytes(), &published);
        assert!(
            matches!(&refused, Err(ReceiptError::UnknownApprover { approver, .. }) if approver == "sup-ana"),
            "{refused:?}"
        );
    }

    #[tokio::test]
    async fn a_spent_approval_put_back_runs_the_write_again_and_the_audit_log_shows_it() {
        let store = sqlite_file();
        let remote = Remote::new();
        let log = Arc::new(MemoryAuditLog::new(audit_key()));
        let dispatcher = four_eyes_signed(&remote, store.open().await)
            .audit_sink(log.clone())
            .build()
            .unwrap();
        let mut ana = enrol(&dispatcher, "sup-ana", &["acme"]).await;
        let mut ben = enrol(&dispatcher, "sup-ben", &["acme"]).await;
        let call = outside_call();
        let pending = pending_approval(&dispatcher, &call).await;
        decide(
            &dispatcher,
            &mut ana,
            &pending,
            "sup-ana",
            Decision::Approve,
        )
        .await
        .unwrap();
        decide(
            &dispatcher,
            &mut ben,
            &pending,
            "sup-ben",
            Decision::Approve,
        )
        .await
        .unwrap();
        sql(
            &store,
            "CREATE TABLE copied AS SELECT * FROM tool_contract_approvals",
        );
        assert_eq!(
            run(&dispatcher, &call).await.result.model.status(),
            Status::Succeeded
        );
        // The granted row put back, the write's record removed: the store sees a grant
        // never spent and a write never made.
        sql(
            &store,
            "INSERT OR REPLACE INTO tool_contract_approvals SELECT * FROM copied; \
             DELETE FROM tool_contract_ledger;",
        );
        assert_eq!(
            run(&dispatcher, &call).await.result.model.status(),
            Status::Succeeded
        );
        assert_eq!(remote.all_requests(), 2, "one approval, two writes");

        let history = log.read_back().await.unwrap();
        let calls = history.calls(&audit_key());
        assert!(calls.chain.is_ok());
        assert_eq!(
            calls.redeemed_more_than_once(),
            [(pending.approval_id.clone(), 2)]
        );
    }
}
