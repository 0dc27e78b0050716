//! What `#[derive(ToolContract)]` declares, and how the declaration becomes a [`ToolSpec`]:
//! its schemas, and a digest for every revision the contract does not name.

use sha2::{Digest, Sha256};

use super::bound::BoundCheck;
use super::schema;
use super::shape::{ObjectShape, Shape};
use super::spec::{CanonicalRevisions, Revisions, ToolSpec, contract_sha256_of};
use super::traits::ContractField;
use super::traits::{ToolContract, ToolOutput};
use crate::json::canonical;
use crate::json::encoding::infallible;
use crate::vocabulary::effect::{Approval, Effect, Operation, Reconcile};
use crate::vocabulary::limits::Limits;
use crate::vocabulary::tier::SourceTier;

/// A contract as the derive declares it; [`build_spec`] turns it into a [`ToolSpec`].
#[derive(Debug)]
pub struct ContractDecl {
    /// The tool's name.
    pub name: &'static str,
    /// The doc comment.
    pub description: &'static str,
    /// The effect.
    pub effect: Effect,
    /// Approval, for writes.
    pub approval: Option<Approval>,
    /// Reconciliation, for non-idempotent writes.
    pub reconcile: Option<Reconcile>,
    /// What makes two calls the same operation, for writes.
    pub operation: Option<Operation>,
    /// `within`: how long, in seconds, an operation named by fields or a key stays one;
    /// `None`: for good.
    pub operation_window_secs: Option<u64>,
    /// `additive`: the write only adds to what it changes.
    pub additive: bool,
    /// The source label.
    pub source_label: &'static str,
    /// The tier of the tool's sources, if declared.
    pub source_tier: Option<SourceTier>,
    /// The producer revision.
    pub producer_revision: &'static str,
    /// Declared revisions; the missing ones are digests.
    pub input_revision: Option<&'static str>,
    /// See `input_revision`.
    pub output_revision: Option<&'static str>,
    /// See `input_revision`.
    pub effect_revision: Option<&'static str>,
    /// See `input_revision`.
    pub handler_revision: Option<&'static str>,
    /// See `input_revision`.
    pub policy_revision: Option<&'static str>,
    /// The arguments.
    pub arguments: &'static ObjectShape,
    /// Limits on the arguments.
    pub argument_limits: Limits,
    /// The output's shape.
    pub output: fn() -> Shape,
    /// Limits on the output.
    pub output_limits: Limits,
}

/// `sha256:` and the first 16 hex digits of the SHA-256 of `value`'s JSON encoding.
fn short_digest(value: &serde_json::Value) -> String {
    // RFC 8785, so the revision depends on the schema's meaning, not on how serde_json
    // happens to order or spell it.
    let bytes = infallible(
        canonical::to_vec(value),
        "schemas are built from finite numbers only",
    );
    let digest = Sha256::digest(&bytes);
    let hex: String = digest[..8].iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256:{hex}")
}

/// Builds a tool's spec: schemas, and a digest for every revision not declared.
#[must_use]
pub fn build_spec(decl: &'static ContractDecl) -> ToolSpec {
    let input_schema = schema::input_schema(decl.arguments);
    let output_schema = schema::output_schema((decl.output)());
    let mut effect_declaration = serde_json::json!({
        "effect": decl.effect,
        "approval": decl.approval,
        "reconcile": decl.reconcile,
    });
    // Only when declared, so that the revisions of contracts without one stay as they were.
    if let Some(tier) = decl.source_tier {
        effect_declaration["source_tier"] = serde_json::json!(tier);
    }
    // Only when it is not the rule every write had before writes declared one, for the same
    // reason: a write that keeps that rule keeps its revision, another rule is a new one.
    if let Some(operation) = decl
        .operation
        .filter(|rule| *rule != Operation::SameArguments)
    {
        effect_declaration["operation"] = serde_json::json!(operation);
    }
    if let Some(seconds) = decl.operation_window_secs {
        effect_declaration["within_secs"] = serde_json::json!(seconds);
    }
    if decl.additive {
        effect_declaration["additive"] = serde_json::json!(true);
    }
    let revision = |declared: Option<&str>, of: &serde_json::Value| {
        declared.map_or_else(|| short_digest(of), str::to_owned)
    };
    let revisions = Revisions {
        input: revision(decl.input_revision, &input_schema),
        output: revision(decl.output_revision, &output_schema),
        effect: revision(decl.effect_revision, &effect_declaration),
        producer: decl.producer_revision.to_owned(),
        handler: decl.handler_revision.map(str::to_owned),
        policy: decl.policy_revision.map(str::to_owned),
    };
    let canonical_revisions = CanonicalRevisions::of(&revisions);
    ToolSpec {
        name: decl.name,
        description: decl.description,
        effect: decl.effect,
        approval: decl.approval,
        reconcile: decl.reconcile,
        operation: decl.operation,
        operation_window_secs: decl.operation_window_secs,
        additive: decl.additive,
        source_label: decl.source_label,
        source_tier: decl.source_tier,
        contract_sha256: contract_sha256_of(decl.name, &canonical_revisions),
        canonical_revisions,
        revisions,
        arguments: decl.arguments,
        argument_limits: decl.argument_limits,
        output: (decl.output)(),
        output_limits: decl.output_limits,
        input_schema,
        output_schema,
    }
}

/// The output shape of contract `C`.
#[must_use]
pub fn output_shape<C: ToolContract>() -> Shape {
    <C::Output as ContractField>::__shape()
}

/// The output limits of contract `C`.
#[must_use]
pub const fn output_limits<C: ToolContract>() -> Limits {
    <C::Output as ToolOutput>::LIMITS
}

/// Evaluates the check of every `bound` in contract `C`'s output against its input: a compile
/// error at the first wrong `bound`. Through `C` alone, so that an output type that is not a
/// `ToolOutput` is reported once, at `type Output`.
pub const fn check_output_bounds<C: ToolContract>() {
    <<C::Output as ContractField>::__Check<C> as BoundCheck>::CHECK
}

/// Whether contract `C`'s output holds a source tier anywhere (so it must declare its own).
#[must_use]
pub const fn output_claims_tier<C: ToolContract>() -> bool {
    <C::Output as ContractField>::__CLAIMS_TIER
}
