//! `ModelResult` from the wire, then `Binder::verify`, on changed copies of a sealed result:
//! a copy verifies only if it means exactly what the sealed one meant (an audit may also be
//! its first-schema-version form, which still verifies), and what goes out is the bytes that
//! were hashed. A copy that keeps what sealing computed is answered exactly as the same copy
//! read back from a store, whose digests are all recomputed.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tool_contract::results::{PROTECTED_AUDIT_SCHEMA_VERSION_V1, ProtectedAudit};
use tool_contract::{Binder, CallResult, ModelResult};
use tool_contract_fuzz::sealed::{canonical_form, fixture};

fuzz_target!(|bytes: &[u8]| {
    let Some((&which, bytes)) = bytes.split_first() else {
        return;
    };
    let fixture = fixture();
    let binder = Binder::new(&fixture.registry, fixture.keys.clone());
    // The changed copy keeps what sealing computed, which `verify` reuses while every input
    // is unchanged; the same copy read back whole has none of it. Both must answer alike.
    let mut result = fixture.result.clone();
    if which % 2 == 0 {
        let Ok(model) = ModelResult::from_json(bytes) else {
            return;
        };
        result.model = model;
    } else {
        let Ok(audit) = serde_json::from_slice::<ProtectedAudit>(bytes) else {
            return;
        };
        result.audit = audit;
    }
    let read_back = CallResult::new(result.model.clone(), result.audit.clone());
    let verified = binder.verify(&fixture.principal, &fixture.context, &result);
    let recomputed = binder.verify(&fixture.principal, &fixture.context, &read_back);
    assert_eq!(
        verified
            .as_ref()
            .map(|verified| verified.model_json())
            .map_err(Clone::clone),
        recomputed
            .as_ref()
            .map(|verified| verified.model_json())
            .map_err(Clone::clone),
        "what sealing computed answered otherwise than recomputing"
    );
    let Ok(verified) = verified else {
        return;
    };
    assert_eq!(verified.model_json(), fixture.model_json.as_slice());
    if which % 2 == 0 {
        assert_eq!(
            canonical_form(bytes).as_deref(),
            Some(fixture.model_json.as_slice())
        );
    } else if result.audit.schema_version == PROTECTED_AUDIT_SCHEMA_VERSION_V1 {
        // The same audit as the first schema version writes it: only its version and its call
        // binding (recomputed by the verifier, so the v1 one) may differ.
        let mut as_sealed = result.audit.clone();
        as_sealed.schema_version = fixture.result.audit.schema_version.clone();
        as_sealed.binding.call_binding_sha256 =
            fixture.result.audit.binding.call_binding_sha256.clone();
        assert_eq!(
            as_sealed, fixture.result.audit,
            "a changed v1 audit verified"
        );
    } else {
        assert_eq!(
            result.audit, fixture.result.audit,
            "a changed audit verified"
        );
    }
});
