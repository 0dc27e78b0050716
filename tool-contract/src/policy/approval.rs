//! Approval rules: `permit` policies annotated `@approvers("N")` (and `@signed_approvals`)
//! that say how many people must approve the calls they match, rather than who may call.

use std::collections::HashMap;

use cedar_policy::{Effect, Policy, PolicyId, PolicySet};

use crate::contract::Registry;
use crate::vocabulary::Approval;

/// The annotation that makes a policy an approval rule, and its count.
pub(super) const APPROVERS: &str = "approvers";
/// The annotation that makes the approvals a rule asks for count only when signed.
pub(super) const SIGNED: &str = "signed_approvals";

/// The most approvers one rule may ask for.
pub(super) const MOST_APPROVERS: u32 = 16;

/// What one approval rule asks of the calls it matches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct ApprovalRule {
    /// How many different people approve (0: nobody, unless another matching rule asks).
    pub(super) approvers: u32,
    /// Whether only approvals signed with a passkey count.
    pub(super) signed: bool,
}

/// What the approval rules that matched a call ask, together.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ApprovalAsk {
    /// The most approvers any matching rule asks for; when none matched, the contract's one.
    pub(crate) approvers: u32,
    /// Whether any matching rule asks for signed approvals.
    pub(crate) signed: bool,
    /// The ids of the matching rules that asked for a person or a signature.
    pub(crate) by: Vec<String>,
}

/// A policy set split in two: who may call (the policies without an approval annotation),
/// and the approval rules, each with what it asks.
pub(super) struct Split {
    pub(super) access: PolicySet,
    pub(super) rules: PolicySet,
    pub(super) asks: HashMap<PolicyId, ApprovalRule>,
}

/// Splits `set`, refusing an approval rule that is a `forbid`, names the principal (a rule
/// decides on the call's arguments, as `approval_when` does; who may ask is the access
/// policies' business), names a tool whose contract needs no approval, or whose count is not
/// a number up to 16. Each refusal: the policy's id and why.
pub(super) fn split(
    set: &PolicySet,
    registry: &Registry,
) -> Result<Split, Vec<(PolicyId, String)>> {
    let mut split = Split {
        access: PolicySet::new(),
        rules: PolicySet::new(),
        asks: HashMap::new(),
    };
    let mut refused = Vec::new();
    for policy in set.policies() {
        let counted = policy.annotation(APPROVERS);
        let signed = policy.annotation(SIGNED).is_some();
        if counted.is_none() && !signed {
            let _ = split.access.add(policy.clone());
            continue;
        }
        match rule(policy, counted, signed, registry) {
            Ok(ask) => {
                split.asks.insert(policy.id().clone(), ask);
                let _ = split.rules.add(policy.clone());
            }
            Err(why) => refused.push((policy.id().clone(), why)),
        }
    }
    if refused.is_empty() {
        Ok(split)
    } else {
        Err(refused)
    }
}

fn rule(
    policy: &Policy,
    counted: Option<&str>,
    signed: bool,
    registry: &Registry,
) -> Result<ApprovalRule, String> {
    if policy.effect() == Effect::Forbid {
        return Err("an approval rule is a `permit` of the calls it asks about".to_owned());
    }
    let approvers = match counted {
        None => 1,
        Some(count) => count
            .parse::<u32>()
            .ok()
            .filter(|count| *count <= MOST_APPROVERS)
            .ok_or_else(|| {
                format!("@{APPROVERS}({count:?}) is not a number of people from 0 to 16")
            })?,
    };
    if names_the_principal(policy) {
        return Err(
            "an approval rule decides on the call's arguments, never on who asks: \
             its principal is `principal`, unconstrained and unnamed"
                .to_owned(),
        );
    }
    for tool in named_tools(policy) {
        let needs_approval = registry
            .get(&tool)
            .and_then(|spec| spec.approval())
            .is_some_and(Approval::is_required);
        if !needs_approval {
            return Err(format!(
                "{tool:?} needs no approval by its contract (approval = not_required): a rule \
                 decides when a person is asked, within `by_caller` or `by_another`, and never \
                 adds one"
            ));
        }
    }
    Ok(ApprovalRule { approvers, signed })
}

/// Whether the policy constrains or reads the principal.
fn names_the_principal(policy: &Policy) -> bool {
    let Ok(json) = policy.to_json() else {
        return true;
    };
    json["principal"]["op"] != "All"
        || json["conditions"]
            .to_string()
            .contains(r#"{"Var":"principal"}"#)
}

/// The tools the policy's action scope names (none for `action`, or `call_tool`).
fn named_tools(policy: &Policy) -> Vec<String> {
    use cedar_policy::ActionConstraint;

    let ids = match policy.action_constraint() {
        ActionConstraint::Any => Vec::new(),
        ActionConstraint::Eq(uid) => vec![uid],
        ActionConstraint::In(uids) => uids,
    };
    ids.iter()
        .map(|uid| uid.id().unescaped().to_owned())
        .filter(|id| id != super::schema::CALL_TOOL)
        .collect()
}

/// What the rules `matched` ask together, or the contract's one person when none matched.
pub(super) fn ask_of<'a>(
    matched: impl IntoIterator<Item = (&'a PolicyId, &'a ApprovalRule)>,
) -> ApprovalAsk {
    let mut asked: Option<ApprovalAsk> = None;
    for (id, rule) in matched {
        let ask = asked.get_or_insert(ApprovalAsk {
            approvers: 0,
            signed: false,
            by: Vec::new(),
        });
        ask.approvers = ask.approvers.max(rule.approvers);
        ask.signed |= rule.signed;
        if rule.approvers > 0 || rule.signed {
            ask.by.push(id.to_string());
        }
    }
    let mut ask = asked.unwrap_or(ApprovalAsk {
        approvers: 1,
        signed: false,
        by: Vec::new(),
    });
    ask.by.sort();
    ask.by.dedup();
    ask
}
