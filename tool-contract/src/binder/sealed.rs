//! What sealing computed, kept beside the inputs it computed it from, so that verifying the
//! same result for the same call need not compute it again.

use crate::contract::spec::ToolSpec;
use crate::results::digest::KeysId;
use crate::results::model::ModelResult;
use crate::vocabulary::call::{CallContext, Principal};

/// The digests a binder computed when it sealed a result, beside every input it computed them
/// from. [`Binder::verify`](super::Binder::verify) takes them in place of recomputing only
/// where each input it is given equals the one here (the same keys, principal, call and
/// contract, and an equal model half), so it answers exactly as recomputing would: a result
/// changed since, or verified for another call, is recomputed, and refused as before. Nothing
/// here is read from outside the process: a result read back from a store has none.
#[derive(Debug)]
pub(crate) struct SealedDigests {
    pub(super) keys: KeysId,
    pub(super) principal: Principal,
    pub(super) context: CallContext,
    pub(super) spec: Option<&'static ToolSpec>,
    pub(super) model: ModelResult,
    /// The model half's canonical JSON, which `result_sha256` covers.
    pub(super) model_json: Vec<u8>,
    pub(super) request_sha256: String,
    pub(super) result_sha256: String,
    pub(super) call_binding_sha256: String,
}

impl SealedDigests {
    /// The most bytes of arguments and canonical model half a result keeps copies of: a
    /// call's usual size many times over. Past it, the copies would cost more memory (the
    /// arguments and the model half's text held once more, for as long as the result lives)
    /// than recomputing costs time, so a larger result keeps nothing and is verified by
    /// recomputing.
    pub(super) const MAX_BYTES: usize = 16 * 1024;

    /// Whether a result of a call with `arguments`, whose model half is `model_json`, keeps
    /// what sealing computed.
    pub(super) fn worth_keeping(arguments: &[u8], model_json: &[u8]) -> bool {
        arguments.len().saturating_add(model_json.len()) <= Self::MAX_BYTES
    }

    /// Whether these digests are the ones `keys` would compute for `model` as the answer to
    /// `context` made for `principal`, of the tool `spec`.
    pub(super) fn hold_for(
        &self,
        keys: KeysId,
        principal: &Principal,
        context: &CallContext,
        spec: Option<&ToolSpec>,
        model: &ModelResult,
    ) -> bool {
        // Specs are statics: the same address is the same contract.
        let same_spec = match (self.spec, spec) {
            (Some(sealed), Some(given)) => std::ptr::eq(sealed, given),
            (None, None) => true,
            _ => false,
        };
        self.keys == keys
            && same_spec
            && self.principal == *principal
            && self.context == *context
            && self.model == *model
    }
}
