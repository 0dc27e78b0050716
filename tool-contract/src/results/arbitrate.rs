//! Arbitration: one value for a fact out of candidates from several sources, or a conflict
//! for a person when the evidence does not decide.

use std::cmp::Ordering;

use serde::Serialize;

use super::catalog::ErrorCode;
use super::error::ModelError;
use crate::contract::grounding::GroundingSource;
use crate::contract::spec::ToolSpec;
use crate::contract::traits::ToolContract;
use crate::vocabulary::tier::SourceTier;

/// A candidate value for a fact, with the source it was read from and the tier it is
/// trusted at.
///
/// The tier is the lower of what the source claims and what the tool's contract declares
/// (`source_tier`), so a payload never raises its own tier: the data cannot choose how far
/// it is trusted, the contract does.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Fact<T> {
    value: T,
    tool: &'static str,
    tier: SourceTier,
    source: GroundingSource,
}

impl<T> Fact<T> {
    /// `value`, read by the tool of `spec` from `source`.
    #[must_use]
    pub fn new(spec: &ToolSpec, value: T, source: GroundingSource) -> Self {
        let declared = spec.source_tier().unwrap_or(SourceTier::Community);
        Fact {
            value,
            tool: spec.name(),
            tier: source.tier().min(declared),
            source,
        }
    }

    /// `value`, read by the tool `C` from `source`.
    #[must_use]
    pub fn of<C: ToolContract>(value: T, source: GroundingSource) -> Self {
        Fact::new(C::spec(), value, source)
    }

    /// The candidate value.
    #[must_use]
    pub fn value(&self) -> &T {
        &self.value
    }

    /// The tool that read it.
    #[must_use]
    pub fn tool(&self) -> &'static str {
        self.tool
    }

    /// The tier it is trusted at: at most its contract's.
    #[must_use]
    pub fn tier(&self) -> SourceTier {
        self.tier
    }

    /// Its evidence.
    #[must_use]
    pub fn source(&self) -> &GroundingSource {
        &self.source
    }

    fn confidence(&self) -> f64 {
        // `+ 0.0` folds -0 into 0: the two are one confidence.
        self.source.confidence() + 0.0
    }
}

/// The outcome of [`arbitrate`].
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum Arbitration<T> {
    /// One value wins, and why.
    Resolved(Resolution<T>),
    /// The best candidates tie and disagree: a person decides.
    Conflict(Conflict<T>),
    /// There was nothing to arbitrate.
    NoCandidates,
}

/// The winning candidate, the reason it won, and the others.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Resolution<T> {
    /// The candidate that won: its value, tool, tier and source.
    pub winner: Fact<T>,
    /// Why it won.
    pub reason: Reason,
    /// Every other candidate, best first.
    pub others: Vec<Fact<T>>,
}

/// Why a candidate won.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Reason {
    /// Every candidate gives the same value; the winner is the best of them.
    Uncontested {
        /// How many candidates agree.
        candidates: usize,
    },
    /// The best candidate with another value is of a lower tier.
    HigherTier {
        /// That candidate's tier.
        runner_up: SourceTier,
    },
    /// The best candidate with another value is of the same tier, with less confidence.
    HigherConfidence {
        /// That candidate's confidence.
        runner_up: f64,
    },
}

/// Candidates tied in tier and confidence that give different values, side by side for a
/// person (`STATUS_CONFLICT`, recovery `human_review`).
///
/// ```
/// use tool_contract::evidence::{arbitrate, Arbitration, Fact, GroundingSource, SourceTier};
/// use tool_contract::ErrorCode;
/// use tool_contract::results::Recovery;
/// # use tool_contract::{ToolContract, ToolOutput};
/// # /// Read a staff page.
/// # #[derive(serde::Deserialize, ToolContract)]
/// # #[tool_contract(output = Page, effect = read_only, source_label = "staff pages",
/// #                 producer_revision = "p-1", source_tier = official)]
/// # struct ReadStaffPage { #[tool_contract(max_len = 80)] name: String }
/// # #[derive(serde::Serialize, ToolOutput)]
/// # #[tool_output(grounded)]
/// # struct Page { sources: Vec<GroundingSource> }
///
/// let page = |id: &str| GroundingSource::new(id, "Staff page", SourceTier::Official, None, "Room", 0.8);
/// let facts = vec![
///     Fact::of::<ReadStaffPage>("Room 101", page("2025")?),
///     Fact::of::<ReadStaffPage>("Room 202", page("2026")?),
/// ];
/// let Arbitration::Conflict(conflict) = arbitrate(facts) else { panic!() };
/// assert_eq!(conflict.tied.len(), 2);
/// assert_eq!(conflict.model_error().code(), ErrorCode::StatusConflict);
/// assert_eq!(conflict.model_error().recovery(), Recovery::HumanReview);
/// # Ok::<(), tool_contract::Violations>(())
/// ```
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Conflict<T> {
    /// The tied candidates, in a fixed order (by value, then source).
    pub tied: Vec<Fact<T>>,
    /// The candidates below them, best first.
    pub others: Vec<Fact<T>>,
}

impl<T> Conflict<T> {
    /// What the model reads: `STATUS_CONFLICT`, a person decides.
    #[must_use]
    pub fn model_error(&self) -> ModelError {
        ModelError::new(ErrorCode::StatusConflict)
    }
}

/// Chooses one value for a fact from `facts`, the candidates for it.
///
/// The highest tier wins; within a tier, the highest confidence. Candidates tied in both that
/// give different values are not resolved: they come back as a [`Conflict`]. The answer does
/// not depend on the order of `facts`: candidates are ranked by tier, confidence, value and
/// source, a total order.
///
/// ```
/// use tool_contract::evidence::{arbitrate, Arbitration, Fact, GroundingSource, Reason, SourceTier};
/// # use tool_contract::{ToolContract, ToolOutput};
/// # /// Read a staff page.
/// # #[derive(serde::Deserialize, ToolContract)]
/// # #[tool_contract(output = Page, effect = read_only, source_label = "staff pages",
/// #                 producer_revision = "p-1", source_tier = official)]
/// # struct ReadStaffPage { #[tool_contract(max_len = 80)] name: String }
/// # /// Search the web.
/// # #[derive(serde::Deserialize, ToolContract)]
/// # #[tool_contract(output = Page, effect = read_only, source_label = "web",
/// #                 producer_revision = "w-1", source_tier = web_search)]
/// # struct SearchWeb { #[tool_contract(max_len = 80)] query: String }
/// # #[derive(serde::Serialize, ToolOutput)]
/// # #[tool_output(grounded)]
/// # struct Page { sources: Vec<GroundingSource> }
///
/// let page = GroundingSource::new("staff", "Physics staff", SourceTier::Official, None, "a.byron@ox.ac.uk", 0.7)?;
/// let hit = GroundingSource::new("hit-3", "A forum", SourceTier::WebSearch, None, "ada@gmail.com", 0.95)?;
/// let facts = vec![
///     Fact::of::<SearchWeb>("ada@gmail.com", hit),
///     Fact::of::<ReadStaffPage>("a.byron@ox.ac.uk", page),
/// ];
/// let Arbitration::Resolved(resolution) = arbitrate(facts) else { panic!() };
/// assert_eq!(*resolution.winner.value(), "a.byron@ox.ac.uk");
/// assert_eq!(resolution.reason, Reason::HigherTier { runner_up: SourceTier::WebSearch });
/// # Ok::<(), tool_contract::Violations>(())
/// ```
pub fn arbitrate<T: Ord>(facts: impl IntoIterator<Item = Fact<T>>) -> Arbitration<T> {
    let mut ranked: Vec<Fact<T>> = facts.into_iter().collect();
    ranked.sort_by(rank);
    if ranked.is_empty() {
        return Arbitration::NoCandidates;
    }
    let best = &ranked[0];
    let tied = ranked
        .iter()
        .take_while(|fact| same_standing(fact, best))
        .count();
    if ranked[1..tied].iter().any(|fact| fact.value != best.value) {
        let others = ranked.split_off(tied);
        return Arbitration::Conflict(Conflict {
            tied: ranked,
            others,
        });
    }
    let runner_up = ranked.iter().find(|fact| fact.value != best.value);
    let reason = match runner_up {
        None => Reason::Uncontested {
            candidates: ranked.len(),
        },
        Some(runner_up) if runner_up.tier < best.tier => Reason::HigherTier {
            runner_up: runner_up.tier,
        },
        Some(runner_up) => Reason::HigherConfidence {
            runner_up: runner_up.confidence(),
        },
    };
    let mut candidates = ranked.into_iter();
    match candidates.next() {
        Some(winner) => Arbitration::Resolved(Resolution {
            winner,
            reason,
            others: candidates.collect(),
        }),
        None => Arbitration::NoCandidates,
    }
}

fn same_standing<T>(a: &Fact<T>, b: &Fact<T>) -> bool {
    a.tier == b.tier && a.confidence().total_cmp(&b.confidence()) == Ordering::Equal
}

/// Best first: tier, then confidence, both descending; then value and source, so that the
/// order is total and the input order never shows.
fn rank<T: Ord>(a: &Fact<T>, b: &Fact<T>) -> Ordering {
    b.tier
        .cmp(&a.tier)
        .then_with(|| b.confidence().total_cmp(&a.confidence()))
        .then_with(|| a.value.cmp(&b.value))
        .then_with(|| a.tool.cmp(b.tool))
        .then_with(|| a.source.id().cmp(b.source.id()))
        .then_with(|| a.source.label().cmp(b.source.label()))
        .then_with(|| a.source.tier().cmp(&b.source.tier()))
        .then_with(|| a.source.url().cmp(&b.source.url()))
        .then_with(|| a.source.snippet().cmp(b.source.snippet()))
}
