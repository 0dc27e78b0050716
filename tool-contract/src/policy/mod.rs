//! Cedar policies as data: who may call which tool with which arguments, written as text a
//! reviewer reads, validated against the contracts when the dispatcher is built, and evaluated
//! on every call (feature `cedar`).
//!
//! [`CedarSchema::of`] writes the schema a registry's contracts make; [`Policies`] is the text
//! a [`DispatcherBuilder::policies`](crate::dispatch::DispatcherBuilder::policies) is given.
//! At `build()` every policy is validated in Cedar's strict mode against that schema, and any
//! error or warning (a field no contract has, a string compared with a number, a policy that
//! can never apply) is a [`BuildError::Policy`](crate::dispatch::BuildError::Policy) naming the
//! policy and its line and column, all of them at once. A contract change that breaks a policy
//! fails the build that makes it.
//!
//! On each call, once its arguments are read exactly and the application's own
//! [`Authorizer`](crate::dispatch::Authorizer) allowed it, and before any approval, the
//! policies decide. Given policies, a call runs only when one `permit` matches and no `forbid`
//! does (Cedar's default deny), and both the authorizer and the policies must allow it. A call
//! whose evaluation errors (a `decimal` out of range, an overflow), or whose arguments Cedar
//! cannot hold, is refused: where Cedar would skip a policy that errors, a call here fails
//! closed. A refusal reads to the model exactly as `NOT_FOUND`, nothing runs and nothing is
//! probed; its audit says why: the `forbid` policies that matched, or that no `permit` did.
//! A call that runs has its `permit`s named in its audit
//! ([`ProtectedAudit::policies`](crate::results::ProtectedAudit::policies)).
//!
//! A `permit` annotated `@approvers("N")` (or `@signed_approvals("…")`) is an approval rule
//! instead: it grants nothing, and says how many people must approve the writes it matches
//! (the guide's Policies chapter).
//!
//! With the feature `cedar-prove`, a `Prover` proves claims about the policies for every call
//! the contracts allow ("every draft above 500.00 waits for two people"), or finds a call
//! each is false of, before they deploy.
//!
//! Each tool is decided by the policies whose scope can hold its action (`action`, `action ==`
//! it, `action in` a list holding it or `call_tool`): Cedar's cost grows with the policies it
//! evaluates, so a hundred policies over ten tools cost a call what ten do.
//!
//! ```
//! use tool_contract::dispatch::{BuildError, Dispatcher};
//! use tool_contract::policy::Policies;
//! use tool_contract::{ToolContract, ToolFailure, ToolOutput};
//!
//! /// Look up an order.
//! #[derive(serde::Deserialize, ToolContract)]
//! #[tool_contract(output = Order, effect = read_only, source_label = "orders", producer_revision = "o-1")]
//! struct GetOrder { #[tool_contract(max_len = 20)] order_id: String }
//!
//! #[derive(serde::Serialize, ToolOutput)]
//! struct Order { total_cents: u32 }
//!
//! async fn get_order(_: GetOrder) -> Result<Order, ToolFailure> {
//!     Ok(Order { total_cents: 1250 })
//! }
//!
//! let policies = Policies::cedar(
//!     "orders.cedar",
//!     r#"permit(principal, action == Desk::Action::"get_order", resource)
//!        when { context.input.order_number like "A-*" };"#,
//! )
//! .namespace("Desk");
//! let errors = Dispatcher::for_development(tool_contract::registry![GetOrder])
//!     .handler(get_order)
//!     .policies(policies)
//!     .build()
//!     .unwrap_err();
//! // No contract has `order_number`: the build says where.
//! let BuildError::Policy(error) = &errors[0] else { panic!("{errors}") };
//! assert_eq!((error.policy(), error.line()), (Some("policy0"), Some(2)));
//! ```

mod approval;
mod error;
mod evaluate;
#[cfg(feature = "cedar-prove")]
mod prove;
mod request;
mod schema;

use std::collections::{BTreeSet, HashMap};
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};

use cedar_policy::{
    ActionConstraint, Entities, Entity, EntityId, EntityTypeName, EntityUid, PolicyId, PolicySet,
    Request, ValidationMode, Validator,
};
use miette::Diagnostic;
use serde_json::Value;

use crate::contract::Registry;
use crate::vocabulary::Principal;

pub(crate) use approval::ApprovalAsk;
pub use error::PolicyError;
#[cfg(feature = "cedar-prove")]
pub use prove::{Claim, Counterexample, ProofError, Prover, Verdict};
pub(crate) use request::Caller;
pub use schema::CedarSchema;

use evaluate::Conditions;

/// The namespace a schema and its policies are in unless [`Policies::namespace`] says
/// another.
pub const DEFAULT_NAMESPACE: &str = "Tools";

/// Cedar policies, as text, for a dispatcher to validate and apply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Policies {
    file: String,
    text: String,
    namespace: String,
}

impl Policies {
    /// The policies in `text`, Cedar's policy syntax; `file` names the text in errors (a file
    /// name, say). A policy annotated `@id("…")` is known by that id, any other by its place
    /// (`policy0`, `policy1`, …).
    #[must_use]
    pub fn cedar(file: impl Into<String>, text: impl Into<String>) -> Self {
        Policies {
            file: file.into(),
            text: text.into(),
            namespace: DEFAULT_NAMESPACE.to_owned(),
        }
    }

    /// These policies, written for the schema under `namespace` (default
    /// [`DEFAULT_NAMESPACE`]).
    #[must_use]
    pub fn namespace(mut self, namespace: impl Into<String>) -> Self {
        self.namespace = namespace.into();
        self
    }

    /// Validates these policies against the schema of `registry`'s contracts, strictly.
    ///
    /// # Errors
    ///
    /// Every problem found: the schema's (see [`CedarSchema::of`]), the text's syntax, and each
    /// validation error and warning, in the order of the text.
    pub(crate) fn check(&self, registry: &Registry) -> Result<PolicyCheck, Vec<PolicyError>> {
        let (schema, split) = self.validate(registry)?;
        PolicyCheck::new(schema, split).map_err(|error| vec![error])
    }

    /// The schema and these policies, validated against it and split into access policies and
    /// approval rules; every problem found otherwise, as [`Policies::check`] says.
    fn validate(
        &self,
        registry: &Registry,
    ) -> Result<(CedarSchema, approval::Split), Vec<PolicyError>> {
        let schema = CedarSchema::of(registry, &self.namespace).map_err(|error| vec![error])?;
        let set = self.parse()?;
        let validation =
            Validator::new(schema.schema.clone()).validate(&set, ValidationMode::Strict);
        let mut errors: Vec<PolicyError> = validation
            .validation_errors()
            .map(|error| self.located(Some(error.policy_id()), error))
            .chain(
                validation
                    .validation_warnings()
                    .map(|warning| self.located(Some(warning.policy_id()), warning)),
            )
            .collect();
        if !errors.is_empty() {
            errors.sort_by_key(|error| (error.line, error.column));
            return Err(errors);
        }
        // A user's entity id is their subject alone: compared with one, a policy would match
        // the same subject in every tenant.
        let user = format!("{}::{}", self.namespace, schema::PRINCIPAL_TYPE);
        let ambiguous: Vec<PolicyError> = set
            .policies()
            .filter(|policy| {
                policy
                    .to_json()
                    .map_or(true, |json| names_an_entity_of(&json, &user))
            })
            .map(|policy| PolicyError {
                message: format!(
                    "a {user} named by its id alone is the same subject in every tenant: name \
                     the caller by its attributes (`principal.id == \"alice\" && \
                     principal.tenant == \"acme\"`)"
                ),
                ..self.at(policy.id(), None)
            })
            .collect();
        if !ambiguous.is_empty() {
            return Err(ambiguous);
        }
        let split = approval::split(&set, registry).map_err(|refused| {
            refused
                .into_iter()
                .map(|(id, why)| PolicyError {
                    message: why,
                    ..self.at(&id, None)
                })
                .collect::<Vec<_>>()
        })?;
        Ok((schema, split))
    }

    /// The policy set, each policy under its `@id` or its place.
    fn parse(&self) -> Result<PolicySet, Vec<PolicyError>> {
        let parsed: PolicySet =
            self.text
                .parse()
                .map_err(|errors: cedar_policy::ParseErrors| {
                    errors
                        .iter()
                        .map(|error| self.located(None, error))
                        .collect::<Vec<_>>()
                })?;
        if let Some(template) = parsed.templates().next() {
            return Err(vec![PolicyError {
                message: "a template (a policy with slots) needs links, which a dispatcher does \
                          not make: write the policy for its principal and resource"
                    .to_owned(),
                ..self.at(template.id(), template.annotation("id"))
            }]);
        }
        let mut set = PolicySet::new();
        let mut errors = Vec::new();
        let mut policies: Vec<_> = parsed.policies().collect();
        // Cedar numbers policies by their place in the text: `policy0`, `policy1`, …
        policies.sort_by_key(|policy| {
            policy
                .id()
                .to_string()
                .trim_start_matches("policy")
                .parse::<usize>()
                .unwrap_or(0)
        });
        for policy in policies {
            let named = match policy.annotation("id") {
                Some(id) => policy.new_id(PolicyId::new(id)),
                None => policy.clone(),
            };
            if let Err(error) = set.add(named) {
                errors.push(PolicyError {
                    message: error.to_string(),
                    ..self.at(policy.id(), policy.annotation("id"))
                });
            }
        }
        if errors.is_empty() {
            Ok(set)
        } else {
            Err(errors)
        }
    }

    /// An error of `diagnostic`, at its first label.
    fn located(&self, policy: Option<&PolicyId>, diagnostic: &dyn Diagnostic) -> PolicyError {
        let offset = diagnostic
            .labels()
            .and_then(|mut labels| labels.next())
            .map(|label| label.offset());
        let mut message = diagnostic.to_string();
        if let Some(help) = diagnostic.help() {
            message.push_str(" (");
            message.push_str(&help.to_string());
            message.push(')');
        }
        let (line, column) = offset.map_or((None, None), |offset| {
            let (line, column) = self.position(offset);
            (Some(line), Some(column))
        });
        PolicyError {
            file: self.file.clone(),
            policy: policy.map(ToString::to_string),
            line,
            column,
            message,
        }
    }

    /// Where policy `id` starts, when Cedar kept its place.
    fn at(&self, id: &PolicyId, annotated: Option<&str>) -> PolicyError {
        PolicyError {
            file: self.file.clone(),
            policy: Some(annotated.map_or_else(|| id.to_string(), str::to_owned)),
            line: None,
            column: None,
            message: String::new(),
        }
    }

    /// The line and column (1-based, in characters) of byte `offset` of the text.
    fn position(&self, offset: usize) -> (usize, usize) {
        // Cedar's offsets are bytes at a character's start; one that is not is taken back to
        // the character it falls in, never sliced through.
        let mut end = offset.min(self.text.len());
        while !self.text.is_char_boundary(end) {
            end -= 1;
        }
        let before = &self.text[..end];
        let line = before.matches('\n').count() + 1;
        let column = before
            .rsplit('\n')
            .next()
            .map_or(0, |last| last.chars().count())
            + 1;
        (line, column)
    }
}

/// Policies validated against a registry's schema, ready to decide calls.
pub(crate) struct PolicyCheck {
    principal_type: EntityTypeName,
    resource: EntityUid,
    /// Per tool: its action, its input's type, and the action entities a request holds.
    tools: HashMap<&'static str, ToolPolicy>,
    /// How many policies there are, for `Debug`.
    policies: usize,
    /// What each approval rule asks, by its id.
    asks: HashMap<PolicyId, approval::ApprovalRule>,
}

struct ToolPolicy {
    action: EntityUid,
    input: schema::CedarType,
    actions: Vec<Entity>,
    /// The policies whose scope can hold this tool's action: Cedar's cost grows with the
    /// policies it evaluates, and one whose scope names other actions is false here anyway.
    access: Conditions,
    /// The entities of the callers that called it lately: by principal, then by scopes.
    entities: Mutex<HashMap<Principal, Vec<KeptEntities>>>,
    /// The approval rules whose scope can hold the tool's action.
    rules: Conditions,
    /// The entities its approval rules are decided with: its actions alone.
    rule_entities: Entities,
}

/// A caller's entities, kept: the scopes they were made with, the principal's uid, and them.
type KeptEntities = (Option<BTreeSet<String>>, (EntityUid, Arc<Entities>));

/// How many principals' entities each tool keeps, past which it starts again.
const KEPT_PRINCIPALS: usize = 256;

/// How many sets of scopes it keeps for one principal (their tokens rarely differ).
const KEPT_SCOPE_SETS: usize = 4;

/// What the policies decided of one call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum PolicyDecision {
    /// A `permit` matched and no `forbid`: the ids of the `permit`s that matched.
    Allow(Vec<String>),
    /// Refused, and why, for the audit: the `forbid`s that matched, or that none permitted,
    /// or that the call could not be evaluated.
    Deny(String),
}

impl PolicyCheck {
    fn new(schema: CedarSchema, split: approval::Split) -> Result<Self, PolicyError> {
        let namespace = schema.namespace().to_owned();
        let name = |kind: &str| -> Result<EntityTypeName, PolicyError> {
            format!("{namespace}::{kind}")
                .parse()
                .map_err(|error| PolicyError::schema(format!("{kind}: {error}")))
        };
        let principal_type = name(schema::PRINCIPAL_TYPE)?;
        let resource = EntityUid::from_type_name_and_id(
            name(schema::RESOURCE_TYPE)?,
            EntityId::new(schema::RESOURCE_ID),
        );
        let action_type = name("Action")?;
        let every_action = schema
            .schema
            .action_entities()
            .map_err(|error| PolicyError::schema(format!("the actions: {error}")))?;
        let call_tool =
            EntityUid::from_type_name_and_id(action_type.clone(), EntityId::new(schema::CALL_TOOL));
        let mut tools = HashMap::new();
        for tool in schema.tools {
            let action =
                EntityUid::from_type_name_and_id(action_type.clone(), EntityId::new(tool.name));
            let actions: Vec<Entity> = [&action, &call_tool]
                .into_iter()
                .filter_map(|uid| every_action.get(uid).cloned())
                .collect();
            let access = Conditions::of(&applying(&split.access, &action, &call_tool)?);
            let rules = Conditions::of(&applying(&split.rules, &action, &call_tool)?);
            let rule_entities = Entities::from_entities(actions.iter().cloned(), None)
                .map_err(|error| PolicyError::schema(format!("the actions: {error}")))?;
            tools.insert(
                tool.name,
                ToolPolicy {
                    action,
                    input: tool.input,
                    actions,
                    access,
                    entities: Mutex::new(HashMap::new()),
                    rules,
                    rule_entities,
                },
            );
        }
        Ok(PolicyCheck {
            principal_type,
            resource,
            tools,
            policies: split.access.policies().count() + split.asks.len(),
            asks: split.asks,
        })
    }

    /// What the approval rules ask of a write of `tool` with validated `arguments`: `None`
    /// when no rule applies to the tool. A rule that fails on the arguments asks, as a Rust
    /// rule that panics does.
    pub(crate) fn approval(&self, tool: &str, arguments: &Value) -> Option<ApprovalAsk> {
        let entry = self.tools.get(tool)?;
        if entry.rules.is_empty() {
            return None;
        }
        let every_rule = || {
            approval::ask_of(
                entry
                    .rules
                    .ids()
                    .filter_map(|id| Some((id, self.asks.get(id)?))),
            )
        };
        let Ok(context) = request::context(&entry.input, arguments) else {
            return Some(every_rule());
        };
        // A rule never names the principal (`approval::split` refuses one that does), so any
        // principal decides the same: the one with no name.
        let nobody =
            EntityUid::from_type_name_and_id(self.principal_type.clone(), EntityId::new(""));
        let Ok(request) = Request::new(
            nobody,
            entry.action.clone(),
            self.resource.clone(),
            context,
            None,
        ) else {
            return Some(every_rule());
        };
        let outcome = entry.rules.evaluate(&request, &entry.rule_entities);
        let matched: Vec<_> = outcome
            .permits
            .into_iter()
            .chain(outcome.failed.into_iter().map(|(id, _)| id))
            .filter_map(|id| Some((id, self.asks.get(id)?)))
            .collect();
        Some(approval::ask_of(matched))
    }

    /// What the policies decide of `caller` calling `tool` with validated `arguments`.
    pub(crate) fn decide(
        &self,
        caller: Caller<'_>,
        tool: &str,
        arguments: &Value,
    ) -> PolicyDecision {
        let Some(entry) = self.tools.get(tool) else {
            return PolicyDecision::Deny(format!("{tool:?} is not in the policies' schema"));
        };
        if !entry.access.any_permit() {
            return PolicyDecision::Deny("no policy permits it".to_owned());
        }
        let request = (|| {
            let (principal_uid, entities) = self.entities(entry, caller)?;
            let context = request::context(&entry.input, arguments)?;
            let request = Request::new(
                principal_uid,
                entry.action.clone(),
                self.resource.clone(),
                context,
                None,
            )
            .map_err(|error| request::Unrepresentable(error.to_string()))?;
            Ok::<_, request::Unrepresentable>((request, entities))
        })();
        let (request, entities) = match request {
            Ok(built) => built,
            Err(request::Unrepresentable(why)) => {
                return PolicyDecision::Deny(format!(
                    "the call cannot be put to the policies: {why}"
                ));
            }
        };
        let outcome = entry.access.evaluate(&request, &entities);
        if !outcome.failed.is_empty() {
            let failed: Vec<String> = outcome
                .failed
                .iter()
                .map(|(id, error)| format!("while evaluating policy `{id}`: {error}"))
                .collect();
            return PolicyDecision::Deny(format!("a policy failed: {}", failed.join("; ")));
        }
        let sorted = |ids: Vec<&PolicyId>| {
            let mut ids: Vec<String> = ids.into_iter().map(ToString::to_string).collect();
            ids.sort();
            ids
        };
        if !outcome.forbids.is_empty() {
            return PolicyDecision::Deny(format!(
                "forbidden by {}",
                sorted(outcome.forbids).join(", ")
            ));
        }
        if outcome.permits.is_empty() {
            return PolicyDecision::Deny("no policy permits it".to_owned());
        }
        PolicyDecision::Allow(sorted(outcome.permits))
    }
}

impl PolicyCheck {
    /// The entities a call of `entry`'s tool by `caller` is decided with: the principal, the
    /// tool's action and `call_tool`. Cedar computes their hierarchy each time it is given
    /// entities, which costs more than a decision on a few policies, so each caller's are kept
    /// per tool (they hold nothing but the caller's own name and scopes).
    fn entities(
        &self,
        entry: &ToolPolicy,
        caller: Caller<'_>,
    ) -> Result<(EntityUid, Arc<Entities>), request::Unrepresentable> {
        let mut kept = entry
            .entities
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let found = kept.get(caller.principal).and_then(|by_scopes| {
            by_scopes
                .iter()
                .find(|(scopes, _)| scopes.as_ref() == caller.scopes)
        });
        if let Some((_, found)) = found {
            return Ok(found.clone());
        }
        let principal_entity = request::principal_entity(&self.principal_type, caller)?;
        let uid = principal_entity.uid();
        let entities = Entities::from_entities(
            entry.actions.iter().cloned().chain([principal_entity]),
            None,
        )
        .map_err(|error| request::Unrepresentable(error.to_string()))?;
        if kept.len() >= KEPT_PRINCIPALS {
            kept.clear();
        }
        let found = (uid, Arc::new(entities));
        let by_scopes = kept.entry(caller.principal.clone()).or_default();
        if by_scopes.len() >= KEPT_SCOPE_SETS {
            by_scopes.clear();
        }
        by_scopes.push((caller.scopes.cloned(), found.clone()));
        Ok(found)
    }
}

/// Whether a policy's JSON form names an entity of type `ty` by its id, in its scope or its
/// conditions.
fn names_an_entity_of(json: &Value, ty: &str) -> bool {
    match json {
        Value::Object(members) => {
            (members.get("type").and_then(Value::as_str) == Some(ty) && members.contains_key("id"))
                || members
                    .values()
                    .any(|member| names_an_entity_of(member, ty))
        }
        Value::Array(items) => items.iter().any(|item| names_an_entity_of(item, ty)),
        _ => false,
    }
}

/// The policies of `set` whose scope can hold `action`, which is in itself and in
/// `call_tool`, and in nothing else.
fn applying(
    set: &PolicySet,
    action: &EntityUid,
    call_tool: &EntityUid,
) -> Result<PolicySet, PolicyError> {
    let holds = |uid: &EntityUid| uid == action || uid == call_tool;
    let mut applying = PolicySet::new();
    for policy in set.policies() {
        let applies = match policy.action_constraint() {
            ActionConstraint::Any => true,
            ActionConstraint::Eq(uid) => uid == *action,
            ActionConstraint::In(uids) => uids.iter().any(holds),
        };
        if applies {
            applying
                .add(policy.clone())
                .map_err(|error| PolicyError::schema(format!("slicing the policies: {error}")))?;
        }
    }
    Ok(applying)
}

impl fmt::Debug for PolicyCheck {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PolicyCheck")
            .field("policies", &self.policies)
            .field("tools", &self.tools.len())
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::Policies;

    #[test]
    fn a_position_inside_a_character_is_that_characters() {
        let policies = Policies::cedar("p", "é\nxé");
        assert_eq!(policies.position(1), (1, 1));
        assert_eq!(policies.position(3), (2, 1));
        assert_eq!(policies.position(5), (2, 2));
        assert_eq!(policies.position(99), (2, 3));
    }
}
