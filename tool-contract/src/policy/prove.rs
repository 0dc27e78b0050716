//! Claims about a policy set, proved for every call the contracts allow, or refuted with one
//! call, by Cedar's symbolic compiler and an SMT solver (feature `cedar-prove`).

use std::collections::HashMap;
use std::fmt;
use std::path::PathBuf;

use cedar_policy::{
    EntityId, EntityTypeName, EntityUid, Policy, PolicyId, PolicySet, RequestEnv, ValidationMode,
    Validator,
};
use cedar_policy_symcc::solver::LocalSolver;
use cedar_policy_symcc::{CedarSymCompiler, CompiledPolicySet, Env};
use serde_json::Value;

use super::approval::{ApprovalRule, MOST_APPROVERS, Split};
use super::{Policies, PolicyError, applying, schema};
use crate::contract::Registry;
use crate::vocabulary::Approval;

/// How long the solver may take over one claim, in milliseconds (cvc5's `--tlimit`).
const SOLVER_TIME_LIMIT_MS: u32 = 60_000;

/// The id the claim's own condition has among the policies, in errors.
const CONDITION_ID: &str = "claim";

/// Proves claims about [`Policies`] for every call the contracts' schema allows, or refutes
/// them with a call (feature `cedar-prove`).
///
/// The policies are validated as a dispatcher's build validates them; each claim is then put
/// to [Cedar's symbolic compiler](https://github.com/cedar-policy/cedar/tree/main/cedar-policy-symcc),
/// which encodes the policies' meaning over every principal and every input of the tool's
/// type as an SMT query, and to the [cvc5](https://cvc5.github.io) solver (1.2.1 or later),
/// run as a program that reads SMT-LIB on its standard input: `cvc5` on the `PATH` unless
/// [`Prover::solver`] names another.
///
/// What a verdict covers:
/// - a proof holds for every call of the schema's types, so for every call that reaches the
///   policies: the Rust [`Authorizer`](crate::dispatch::Authorizer) and the contract's own
///   input checks can only refuse more, Rust approval rules only ask more, and where Cedar
///   would skip a policy that errors, a dispatcher refuses the call or asks every rule;
/// - a counterexample is a call of the schema's types, which the contract's own checks
///   (`max_len`, ranges) may still refuse: read it before acting on it.
pub struct Prover {
    namespace: String,
    schema: cedar_policy::Schema,
    split: Split,
    tools: HashMap<&'static str, Option<Approval>>,
    solver_program: PathBuf,
    compiler: Option<CedarSymCompiler<LocalSolver>>,
}

impl Prover {
    /// A prover of `policies` over `registry`'s contracts.
    ///
    /// # Errors
    ///
    /// Every problem a dispatcher's build would find in the policies
    /// ([`Policies`]), all at once.
    pub fn new(policies: &Policies, registry: &Registry) -> Result<Prover, Vec<PolicyError>> {
        let (schema, split) = policies.validate(registry)?;
        let tools = registry
            .tools()
            .map(|spec| (spec.name(), spec.approval()))
            .collect();
        Ok(Prover {
            namespace: schema.namespace().to_owned(),
            schema: schema.schema,
            split,
            tools,
            solver_program: PathBuf::from("cvc5"),
            compiler: None,
        })
    }

    /// This prover, with the solver run as `program` (a path, or a name on the `PATH`); it is
    /// given `--lang smt --tlimit=60000`.
    #[must_use]
    pub fn solver(mut self, program: impl Into<PathBuf>) -> Self {
        self.solver_program = program.into();
        self.compiler = None;
        self
    }

    /// Proves `claim`, or refutes it with a call. The solver is started on the first claim and
    /// kept for the next.
    ///
    /// # Errors
    ///
    /// [`ProofError::Claim`] when the claim does not fit the contracts or its condition does
    /// not validate; [`ProofError::Solver`] when the solver cannot be run, fails, or cannot
    /// decide within its time.
    pub async fn prove(&mut self, claim: &Claim) -> Result<Verdict, ProofError> {
        let Some(approval) = self.tools.get(claim.tool.as_str()) else {
            return Err(ProofError::Claim(format!(
                "no contract is named {:?}",
                claim.tool
            )));
        };
        let env = self.request_env(&claim.tool)?;
        let permitted = self.compile(&env, &self.permitted(claim)?)?;
        let counterexample = match claim.kind {
            ClaimKind::NeverPermitted if claim.signed => {
                return Err(ProofError::Claim(
                    "signed approvals are a claim of needs_approvers: a call never permitted \
                     is never approved"
                        .to_owned(),
                ));
            }
            ClaimKind::NeverPermitted => {
                self.compiler()?
                    .check_always_denies_with_counterexample_opt(&permitted)
                    .await
            }
            ClaimKind::NeedsApprovers { approvers } => {
                if !(2..=MOST_APPROVERS).contains(&approvers) {
                    return Err(ProofError::Claim(format!(
                        "{approvers} approvers: a claim counts from 2 (one person is what the \
                         contract asks when no rule matches) to {MOST_APPROVERS}"
                    )));
                }
                if !approval.is_some_and(Approval::is_required) {
                    return Err(ProofError::Claim(format!(
                        "{:?} needs no approval by its contract: its calls never wait for a \
                         person, whatever the policies say",
                        claim.tool
                    )));
                }
                let enough = self.rules_asking(&claim.tool, |rule| rule.approvers >= approvers)?;
                let enough = self.compile(&env, &enough)?;
                let mut found = self
                    .compiler()?
                    .check_implies_with_counterexample_opt(&permitted, &enough)
                    .await;
                if claim.signed && matches!(found, Ok(None)) {
                    let signing = self.rules_asking(&claim.tool, |rule| rule.signed)?;
                    let signing = self.compile(&env, &signing)?;
                    found = self
                        .compiler()?
                        .check_implies_with_counterexample_opt(&permitted, &signing)
                        .await;
                }
                found
            }
        };
        match counterexample {
            Ok(None) => Ok(Verdict::Proved),
            Ok(Some(env)) => Ok(Verdict::Refuted(Counterexample::of(&env))),
            Err(error) => {
                // A solver that failed may be in any state: the next claim starts another.
                self.compiler = None;
                Err(ProofError::Solver(with_causes(&error)))
            }
        }
    }

    /// The request environment of a call of `tool`: a user calling it on the server.
    fn request_env(&self, tool: &str) -> Result<RequestEnv, ProofError> {
        let name = |kind: &str| -> Result<EntityTypeName, ProofError> {
            format!("{}::{kind}", self.namespace)
                .parse()
                .map_err(|error| ProofError::Claim(format!("{kind}: {error}")))
        };
        Ok(RequestEnv::new(
            name(schema::PRINCIPAL_TYPE)?,
            EntityUid::from_type_name_and_id(name("Action")?, EntityId::new(tool)),
            name(schema::RESOURCE_TYPE)?,
        ))
    }

    /// The tool's access policies, and a `forbid` of every call outside the claim's condition:
    /// it permits exactly the calls of the claim that the policies permit.
    fn permitted(&self, claim: &Claim) -> Result<PolicySet, ProofError> {
        let mut set = self.applying(&self.split.access, &claim.tool)?;
        if let Some(condition) = &claim.condition {
            let text = format!(
                "forbid (principal, action == {}::Action::{:?}, resource) unless {{ {condition} }};",
                self.namespace, claim.tool
            );
            let outside = Policy::parse(Some(PolicyId::new(CONDITION_ID)), text).map_err(|_| {
                ProofError::Claim(format!(
                    "the condition {condition:?} is not one Cedar expression"
                ))
            })?;
            let mut alone = PolicySet::new();
            for into in [&mut alone, &mut set] {
                into.add(outside.clone())
                    .map_err(|error| ProofError::Claim(error.to_string()))?;
            }
            let validation =
                Validator::new(self.schema.clone()).validate(&alone, ValidationMode::Strict);
            let problems: Vec<String> = validation
                .validation_errors()
                .map(ToString::to_string)
                .chain(validation.validation_warnings().map(ToString::to_string))
                .collect();
            if !problems.is_empty() {
                return Err(ProofError::Claim(format!(
                    "the condition {condition:?}: {}",
                    problems.join("; ")
                )));
            }
        }
        Ok(set)
    }

    /// The tool's approval rules that `asks` holds for, as plain `permit`s: they permit
    /// exactly the calls those rules ask about.
    fn rules_asking(
        &self,
        tool: &str,
        asks: impl Fn(&ApprovalRule) -> bool,
    ) -> Result<PolicySet, ProofError> {
        let mut set = PolicySet::new();
        for rule in self.applying(&self.split.rules, tool)?.policies() {
            if self.split.asks.get(rule.id()).is_some_and(&asks) {
                set.add(rule.clone())
                    .map_err(|error| ProofError::Claim(error.to_string()))?;
            }
        }
        Ok(set)
    }

    /// The policies of `set` whose scope can hold `tool`'s action.
    fn applying(&self, set: &PolicySet, tool: &str) -> Result<PolicySet, ProofError> {
        let action = |id: &str| {
            format!("{}::Action", self.namespace)
                .parse()
                .map(|action: EntityTypeName| {
                    EntityUid::from_type_name_and_id(action, EntityId::new(id))
                })
                .map_err(|error| ProofError::Claim(format!("Action: {error}")))
        };
        applying(set, &action(tool)?, &action(schema::CALL_TOOL)?)
            .map_err(|error| ProofError::Claim(error.message))
    }

    fn compile(&self, env: &RequestEnv, set: &PolicySet) -> Result<CompiledPolicySet, ProofError> {
        CompiledPolicySet::compile(set, env, &self.schema).map_err(|error| {
            ProofError::Claim(format!(
                "the claim's policies do not compile for {}: {error}",
                env.action()
            ))
        })
    }

    /// The symbolic compiler over a running solver, started when there is none.
    fn compiler(&mut self) -> Result<&mut CedarSymCompiler<LocalSolver>, ProofError> {
        if self.compiler.is_none() {
            let solver = LocalSolver::from_command(
                tokio::process::Command::new(&self.solver_program)
                    .args(["--lang", "smt"])
                    .arg(format!("--tlimit={SOLVER_TIME_LIMIT_MS}"))
                    .kill_on_drop(true),
            )
            .map_err(|error| {
                ProofError::Solver(format!(
                    "{} could not be run: {}",
                    self.solver_program.display(),
                    with_causes(&error)
                ))
            })?;
            let compiler = CedarSymCompiler::new(solver)
                .map_err(|error| ProofError::Solver(error.to_string()))?;
            self.compiler = Some(compiler);
        }
        Ok(self.compiler.as_mut().expect("started above"))
    }
}

impl fmt::Debug for Prover {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Prover")
            .field("namespace", &self.namespace)
            .field("solver", &self.solver_program)
            .field("running", &self.compiler.is_some())
            .finish_non_exhaustive()
    }
}

/// `error` and each error under it, as one line.
fn with_causes(error: &dyn std::error::Error) -> String {
    let mut line = error.to_string();
    let mut cause = error.source();
    while let Some(error) = cause {
        line.push_str(": ");
        line.push_str(&error.to_string());
        cause = error.source();
    }
    line
}

/// A claim about the policies' decisions on one tool's calls.
///
/// ```
/// use tool_contract::policy::Claim;
///
/// // No refund draft above 50,000 cents runs without two approvers.
/// let claim = Claim::needs_approvers("create_refund_draft", 2)
///     .when("context.input.amount_cents > 50000");
/// assert_eq!(claim.tool(), "create_refund_draft");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Claim {
    tool: String,
    kind: ClaimKind,
    signed: bool,
    condition: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ClaimKind {
    NeverPermitted,
    NeedsApprovers { approvers: u32 },
}

impl Claim {
    /// No call of `tool` is permitted by the policies.
    #[must_use]
    pub fn never_permitted(tool: impl Into<String>) -> Claim {
        Claim {
            tool: tool.into(),
            kind: ClaimKind::NeverPermitted,
            signed: false,
            condition: None,
        }
    }

    /// Every call of `tool` that the policies permit waits for at least `approvers` different
    /// people: an approval rule asking that many (or more) matches it. The tool's contract
    /// must ask for approval. One person is what the contract asks when no rule matches, so a
    /// claim of one or none is refused by [`Prover::prove`]; ask it as
    /// [`never_permitted`](Claim::never_permitted) of the calls a `@approvers("0")` rule
    /// matches instead.
    #[must_use]
    pub fn needs_approvers(tool: impl Into<String>, approvers: u32) -> Claim {
        Claim {
            tool: tool.into(),
            kind: ClaimKind::NeedsApprovers { approvers },
            signed: false,
            condition: None,
        }
    }

    /// This claim of [`needs_approvers`](Claim::needs_approvers), where only approvals signed
    /// with a passkey count: a rule annotated `@signed_approvals` matches each of the calls
    /// too. Of a claim that no call is permitted it means nothing, and
    /// [`Prover::prove`] refuses it.
    #[must_use]
    pub fn signed(mut self) -> Claim {
        self.signed = true;
        self
    }

    /// This claim, of the calls where `condition` holds: a Cedar expression over
    /// `context.input` and `principal`, as a policy's `when` holds.
    #[must_use]
    pub fn when(mut self, condition: impl Into<String>) -> Claim {
        self.condition = Some(condition.into());
        self
    }

    /// The tool the claim is about.
    #[must_use]
    pub fn tool(&self) -> &str {
        &self.tool
    }
}

/// What the solver found of a claim.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Verdict {
    /// The claim holds for every call of the schema's types.
    Proved,
    /// A call the claim is false of.
    Refuted(Counterexample),
}

/// A call a claim is false of: who calls, with which input.
#[derive(Debug, Clone, PartialEq)]
pub struct Counterexample {
    principal: Value,
    input: Value,
    text: String,
}

impl Counterexample {
    fn of(env: &Env) -> Counterexample {
        let context = env
            .request
            .context()
            .and_then(|context| context.to_json_value().ok())
            .unwrap_or(Value::Null);
        let principal = env
            .request
            .principal()
            .and_then(|uid| env.entities.get(uid))
            .and_then(|entity| entity.to_json_value().ok())
            .map_or(Value::Null, |mut entity| entity["attrs"].take());
        Counterexample {
            principal,
            input: context.get("input").cloned().unwrap_or(Value::Null),
            text: env.to_string(),
        }
    }

    /// The call's input, in Cedar's JSON form (a `decimal` as `{"__extn": …}`, an enum's value
    /// as `{"__entity": …}`).
    #[must_use]
    pub fn input(&self) -> &Value {
        &self.input
    }

    /// The caller's attributes (`id`, `tenant`, `scopes`), in Cedar's JSON form.
    #[must_use]
    pub fn principal(&self) -> &Value {
        &self.principal
    }
}

impl fmt::Display for Counterexample {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// Why a claim could not be decided.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ProofError {
    /// The claim does not fit the contracts or the policies: no such tool, a count out of
    /// range, a condition that does not validate.
    Claim(String),
    /// The solver could not be run, failed, or did not decide in time.
    Solver(String),
}

impl fmt::Display for ProofError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ProofError::Claim(why) => write!(f, "the claim: {why}"),
            ProofError::Solver(why) => write!(f, "the solver: {why}"),
        }
    }
}

impl std::error::Error for ProofError {}
