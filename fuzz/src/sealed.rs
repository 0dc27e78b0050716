//! A sealed result and an audit chain made once, for the targets that change their bytes: the
//! verifier must accept a changed copy only when it means what the original meant.

use std::sync::OnceLock;

use tool_contract::control::{AuditSink, ChainHead, MemoryAuditLog};
use tool_contract::json::canonical;
use tool_contract::providers::{Api, Correlation, ToolCall};
use tool_contract::{
    AuditKeys, Binder, CallContext, CallResult, Principal, RawProvenance, RawResult, Registry,
    SecretKey, ToolContract,
};

use crate::LookUp;

/// A valid output of [`LookUp`] for the call below.
pub const OUTPUT: &str = r#"{"order_ref":"ORDER-7","name":"Ada","code":"AB-12","flag":true,"small":-3,"big":9007199254740991,"signed":-42,"ratio":0.25,"comment":null,"tags":["a","b"],"lines":[[{"sku":"S-1","quantity":2,"notes":["x",null]}]],"state":"on_hold","at_text":"2026-01-02T03:04:05Z","at":"2026-01-02T03:04:05+02:00","closed_at":null,"link":"https://example.org/o/7","email":"ada@hillside.edu","note":"fine","extra":{"k":[1,2.5,"z"]}}"#;

/// What the targets share.
pub struct Fixture {
    /// The registry of [`LookUp`].
    pub registry: Registry,
    /// The keys results are sealed with.
    pub keys: AuditKeys,
    /// Who called.
    pub principal: Principal,
    /// The call.
    pub context: CallContext,
    /// Its sealed result.
    pub result: CallResult,
    /// The model half's canonical JSON.
    pub model_json: Vec<u8>,
    /// The audit half's JSON.
    pub audit_json: Vec<u8>,
    /// The audit key of the chain.
    pub audit_key: SecretKey,
    /// The chain's lines (each a record, without its newline).
    pub log_lines: Vec<String>,
    /// The chain's head.
    pub log_head: ChainHead,
}

/// The fixture, made on first use.
pub fn fixture() -> &'static Fixture {
    static FIXTURE: OnceLock<Fixture> = OnceLock::new();
    FIXTURE.get_or_init(make)
}

fn make() -> Fixture {
    let registry = tool_contract::registry![LookUp]
        .into_builder()
        .all_adapters()
        .build();
    let keys = AuditKeys::new(SecretKey::new([5; 32]).unwrap());
    let principal = Principal::new("acme", "ada");
    let input = crate::call();
    let call = ToolCall {
        api: Api::OpenAiResponses,
        adapter_revision: "openai-responses/2026-08".to_owned(),
        response_id: Some("resp_1".to_owned()),
        call_id: "call_1".to_owned(),
        correlation: Correlation::Id,
        name: LookUp::NAME.to_owned(),
        arguments: serde_json::to_vec(&input).unwrap(),
    };
    let context = CallContext::new(call, "op-1").with_idempotency_key("k-1");
    let binder = Binder::new(&registry, keys.clone());
    let raw = RawResult::new(OUTPUT, RawProvenance::new("fuzz-1", "2026-01-02T03:04:05Z"));
    let result = binder.project_output(&principal, &context, &input, raw);
    binder
        .verify(&principal, &context, &result)
        .expect("the fixture's result verifies");
    let model_json = result.model.to_canonical_json();
    let audit_json = serde_json::to_vec(&result.audit).unwrap();
    let audit_key = SecretKey::new([9; 32]).unwrap();
    let log = MemoryAuditLog::new(audit_key.clone());
    for _ in 0..3 {
        // The memory log appends before it returns its future: one poll finishes it.
        let mut appending = log.append(&result.model, &result.audit);
        let mut context = std::task::Context::from_waker(std::task::Waker::noop());
        match appending.as_mut().poll(&mut context) {
            std::task::Poll::Ready(appended) => appended.unwrap(),
            std::task::Poll::Pending => panic!("the memory log appends at once"),
        }
    }
    Fixture {
        registry,
        keys,
        principal,
        context,
        model_json,
        audit_json,
        audit_key,
        log_lines: log.lines(),
        log_head: log.head(),
        result,
    }
}

/// The canonical form of JSON text, or nothing.
pub fn canonical_form(bytes: &[u8]) -> Option<Vec<u8>> {
    canonical::canonicalize(bytes).ok()
}
