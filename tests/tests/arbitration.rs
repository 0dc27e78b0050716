//! Issue 5, point 3: one value for a fact out of candidates from sources of several tiers.

use proptest::prelude::*;
use serde_json::json;
use tool_contract::evidence::{Arbitration, Fact, GroundingSource, Reason, SourceTier, arbitrate};
use tool_contract::results::Recovery;
use tool_contract::{ErrorCode, ToolContract, ToolOutput, ToolSpec};

/// Read the institution's own page.
#[derive(serde::Deserialize, ToolContract)]
#[tool_contract(output = Evidence, effect = read_only, source_label = "official pages",
                producer_revision = "official-1", source_tier = official)]
struct ReadOfficial {
    #[tool_contract(max_len = 100)]
    subject: String,
}

/// Look the subject up in the register.
#[derive(serde::Deserialize, ToolContract)]
#[tool_contract(output = Evidence, effect = read_only, source_label = "register",
                producer_revision = "register-1", source_tier = authoritative_database)]
struct ReadRegister {
    #[tool_contract(max_len = 100)]
    subject: String,
}

/// Search the web.
#[derive(serde::Deserialize, ToolContract)]
#[tool_contract(output = Evidence, effect = read_only, source_label = "web search",
                producer_revision = "search-1", source_tier = web_search)]
struct SearchWeb {
    #[tool_contract(max_len = 100)]
    subject: String,
}

/// Read a forum thread.
#[derive(serde::Deserialize, ToolContract)]
#[tool_contract(output = Evidence, effect = read_only, source_label = "forum",
                producer_revision = "forum-1", source_tier = community)]
struct ReadForum {
    #[tool_contract(max_len = 100)]
    subject: String,
}

/// One value for the fact, with its evidence.
#[derive(Debug, serde::Serialize, ToolOutput)]
#[tool_output(grounded)]
struct Evidence {
    #[tool_output(max_len = 100)]
    value: String,
    #[tool_output(max_items = 3)]
    sources: Vec<GroundingSource>,
}

/// The four contracts, the most trusted first (as `SourceTier::ALL`).
fn specs() -> [&'static ToolSpec; 4] {
    [
        ReadOfficial::spec(),
        ReadRegister::spec(),
        SearchWeb::spec(),
        ReadForum::spec(),
    ]
}

fn source(id: &str, tier: SourceTier, confidence: f64) -> GroundingSource {
    GroundingSource::new(
        id,
        format!("source {id}"),
        tier,
        None,
        "the text",
        confidence,
    )
    .unwrap()
}

fn fact<C: ToolContract>(value: &'static str, id: &str, confidence: f64) -> Fact<&'static str> {
    let tier = C::spec().source_tier().unwrap();
    Fact::of::<C>(value, source(id, tier, confidence))
}

#[test]
fn the_highest_tier_wins_whatever_the_confidence() {
    let facts = vec![
        fact::<SearchWeb>("ada@gmail.com", "hit", 0.99),
        fact::<ReadRegister>("a.byron@lu.se", "reg", 0.4),
    ];
    let Arbitration::Resolved(resolution) = arbitrate(facts) else {
        panic!("resolved")
    };
    assert_eq!(*resolution.winner.value(), "a.byron@lu.se");
    assert_eq!(resolution.winner.tool(), "read_register");
    assert_eq!(resolution.winner.source().id(), "reg");
    assert_eq!(
        resolution.reason,
        Reason::HigherTier {
            runner_up: SourceTier::WebSearch
        }
    );
    assert_eq!(resolution.others.len(), 1);
}

#[test]
fn within_a_tier_the_highest_confidence_wins() {
    let facts = vec![
        fact::<SearchWeb>("ada@gmail.com", "hit-1", 0.5),
        fact::<SearchWeb>("a.byron@lu.se", "hit-2", 0.8),
    ];
    let Arbitration::Resolved(resolution) = arbitrate(facts) else {
        panic!("resolved")
    };
    assert_eq!(*resolution.winner.value(), "a.byron@lu.se");
    assert_eq!(
        resolution.reason,
        Reason::HigherConfidence { runner_up: 0.5 }
    );
}

#[test]
fn an_exact_tie_in_tier_and_confidence_is_a_conflict_for_a_person() {
    let facts = vec![
        fact::<ReadOfficial>("Room 101", "page-a", 0.9),
        fact::<ReadOfficial>("Room 202", "page-b", 0.9),
        fact::<ReadForum>("Room 303", "thread", 1.0),
    ];
    let Arbitration::Conflict(conflict) = arbitrate(facts) else {
        panic!("a conflict")
    };
    let tied: Vec<(&str, &str)> = conflict
        .tied
        .iter()
        .map(|fact| (*fact.value(), fact.source().id()))
        .collect();
    assert_eq!(tied, [("Room 101", "page-a"), ("Room 202", "page-b")]);
    assert_eq!(conflict.others.len(), 1);
    let error = conflict.model_error();
    assert_eq!(error.code(), ErrorCode::StatusConflict);
    assert_eq!(error.recovery(), Recovery::HumanReview);
}

#[test]
fn a_conflict_shows_the_tied_sources_side_by_side() {
    let facts = vec![
        fact::<ReadRegister>("B", "reg-2", 0.7),
        fact::<ReadRegister>("A", "reg-1", 0.7),
    ];
    let conflict = serde_json::to_value(arbitrate(facts)).unwrap();
    assert_eq!(conflict["outcome"], "conflict");
    assert_eq!(conflict["tied"][0]["value"], "A");
    assert_eq!(conflict["tied"][0]["source"]["id"], "reg-1");
    assert_eq!(conflict["tied"][1]["value"], "B");
    assert_eq!(conflict["tied"][1]["source"]["id"], "reg-2");
    assert_eq!(conflict["tied"][1]["tier"], "authoritative_database");
}

#[test]
fn tied_candidates_that_agree_resolve_as_uncontested() {
    let facts = vec![
        fact::<ReadOfficial>("Room 101", "page-b", 0.9),
        fact::<ReadOfficial>("Room 101", "page-a", 0.9),
    ];
    let Arbitration::Resolved(resolution) = arbitrate(facts) else {
        panic!("resolved")
    };
    assert_eq!(resolution.reason, Reason::Uncontested { candidates: 2 });
    assert_eq!(resolution.winner.source().id(), "page-a");
}

#[test]
fn minus_zero_and_zero_are_one_confidence() {
    let facts = vec![
        fact::<SearchWeb>("A", "a", -0.0),
        fact::<SearchWeb>("B", "b", 0.0),
    ];
    assert!(matches!(arbitrate(facts), Arbitration::Conflict(_)));
}

#[test]
fn nothing_to_arbitrate_is_said_so() {
    let facts: Vec<Fact<&str>> = Vec::new();
    assert_eq!(arbitrate(facts), Arbitration::NoCandidates);
}

#[test]
fn a_source_claiming_more_than_its_contract_is_trusted_at_the_contracts_tier() {
    let forged = Fact::of::<ReadForum>("A", source("forged", SourceTier::Official, 1.0));
    assert_eq!(forged.tier(), SourceTier::Community);
    assert_eq!(
        forged.source().tier(),
        SourceTier::Official,
        "the claim is kept, for audit"
    );
    let honest = fact::<SearchWeb>("B", "hit", 0.1);
    let Arbitration::Resolved(resolution) = arbitrate(vec![forged, honest]) else {
        panic!("resolved")
    };
    assert_eq!(*resolution.winner.value(), "B");
}

/// A candidate: which contract, which value, what its source claims.
#[derive(Debug, Clone)]
struct Candidate {
    contract: usize,
    value: &'static str,
    claimed: usize,
    confidence: f64,
    id: &'static str,
}

fn candidate() -> impl Strategy<Value = Candidate> {
    (
        0..4_usize,
        prop::sample::select(vec!["A", "B", "C"]),
        0..4_usize,
        // Few confidences, so that ties are common; and any other.
        prop_oneof![
            prop::sample::select(vec![0.0, 0.5, 0.9, 1.0]),
            0.0..=1.0_f64
        ],
        prop::sample::select(vec!["s1", "s2", "s3"]),
    )
        .prop_map(|(contract, value, claimed, confidence, id)| Candidate {
            contract,
            value,
            claimed,
            confidence,
            id,
        })
}

fn facts(candidates: &[Candidate]) -> Vec<Fact<&'static str>> {
    candidates
        .iter()
        .map(|c| {
            let claimed = SourceTier::ALL[c.claimed];
            Fact::new(
                specs()[c.contract],
                c.value,
                source(c.id, claimed, c.confidence),
            )
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1000))]

    #[test]
    fn a_lower_tier_never_beats_a_higher_one(candidates in prop::collection::vec(candidate(), 1..12)) {
        let facts = facts(&candidates);
        let best = facts.iter().map(Fact::tier).max().unwrap();
        match arbitrate(facts.clone()) {
            Arbitration::Resolved(resolution) => {
                prop_assert_eq!(resolution.winner.tier(), best);
                for other in &resolution.others {
                    prop_assert!(other.tier() <= resolution.winner.tier());
                    if other.tier() == resolution.winner.tier() && other.value() != resolution.winner.value() {
                        prop_assert!(other.source().confidence() < resolution.winner.source().confidence());
                    }
                }
            }
            Arbitration::Conflict(conflict) => {
                prop_assert!(conflict.tied.len() >= 2);
                prop_assert!(conflict.tied.iter().all(|fact| fact.tier() == best));
                prop_assert!(conflict.tied.iter().any(|fact| fact.value() != conflict.tied[0].value()));
                prop_assert!(conflict.others.iter().all(|fact| fact.tier() <= best));
            }
            Arbitration::NoCandidates => prop_assert!(false, "there were candidates"),
        }
    }

    #[test]
    fn the_input_order_never_changes_the_answer(
        (candidates, shuffled) in prop::collection::vec(candidate(), 0..12)
            .prop_flat_map(|candidates| (Just(candidates.clone()), Just(candidates).prop_shuffle()))
    ) {
        prop_assert_eq!(arbitrate(facts(&candidates)), arbitrate(facts(&shuffled)));
    }

    #[test]
    fn a_tool_payload_can_never_raise_its_own_tier(
        contract in 0..4_usize,
        claimed in 0..4_usize,
        confidence in 0.0..=1.0_f64,
    ) {
        let declared = specs()[contract].source_tier().unwrap();
        let claimed = SourceTier::ALL[claimed];
        let payload = json!({
            "value": "A",
            "sources": [{ "id": "s", "label": "l", "tier": claimed.as_str(), "url": null,
                          "snippet": "t", "confidence": confidence }],
        });
        let bytes = payload.to_string().into_bytes();
        let subject = "x".to_owned();
        let validated = match contract {
            0 => ReadOfficial { subject }.validate_output(&bytes),
            1 => ReadRegister { subject }.validate_output(&bytes),
            2 => SearchWeb { subject }.validate_output(&bytes),
            _ => ReadForum { subject }.validate_output(&bytes),
        };
        match validated {
            Ok(evidence) => {
                prop_assert!(claimed <= declared);
                let fact = Fact::new(specs()[contract], evidence.value, evidence.sources[0].clone());
                prop_assert_eq!(fact.tier(), claimed);
            }
            Err(violations) => {
                prop_assert!(claimed > declared);
                prop_assert_eq!(violations.as_slice()[0].path(), "/sources/0/tier");
                prop_assert_eq!(violations.as_slice()[0].kind().code(), "tier_above_contract");
            }
        }
        // Built in code, past validation, the claim is still capped at the contract's tier.
        let forged = Fact::new(specs()[contract], "A", source("s", claimed, confidence));
        prop_assert_eq!(forged.tier(), claimed.min(declared));
    }
}
