//! One person is one approver, however the name is spelled: the identity approvals are
//! counted by.

use caseless::Caseless;
use unicode_normalization::UnicodeNormalization;
use unicode_properties::{GeneralCategory, UnicodeGeneralCategory};

/// The identity an approver's name stands for when approvals are counted: two names with one
/// identity are one person, so they can never supply two of the approvals a rule needs.
///
/// It is the name with every format character removed (General_Category `Cf`: zero-width
/// spaces and joiners, byte-order marks, bidirectional controls, soft hyphens, tag
/// characters), under Unicode compatibility caseless matching (NFKC-style compatibility
/// decomposition and default case folding, Unicode §3.13 D146: fullwidth letters, `ﬁ`,
/// `Carol`, `CAROL` and `josé` composed or decomposed all match), with surrounding whitespace
/// trimmed and inner runs of whitespace made one space, then read as its confusables skeleton
/// (UTS #39: a Cyrillic `а` reads as a Latin `a`). A name that is empty by then names nobody.
///
/// Until approvers are enrolled identities, this is what "different people" means.
///
/// ```
/// use tool_contract::control::ApproverIdentity;
///
/// let carol = ApproverIdentity::of("carol@acme.example").unwrap();
/// for spelled in [
///     "Carol@acme.example",
///     "carol@ACME.EXAMPLE",
///     " carol@acme.example\t",
///     "car\u{200b}ol@acme.example",
///     "\u{feff}carol@acme.example",
///     "ｃａｒｏｌ@acme.example",
///     "c\u{430}rol@acme.example", // a Cyrillic а
/// ] {
///     assert_eq!(ApproverIdentity::of(spelled).as_ref(), Some(&carol), "{spelled:?}");
/// }
/// assert_ne!(ApproverIdentity::of("dave@acme.example").as_ref(), Some(&carol));
/// assert!(ApproverIdentity::of(" \u{200b} ").is_none());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ApproverIdentity(String);

impl ApproverIdentity {
    /// The identity `name` stands for, or `None` when nothing of it is left.
    #[must_use]
    pub fn of(name: &str) -> Option<Self> {
        let visible: String = name
            .chars()
            .filter(|c| c.general_category() != GeneralCategory::Format)
            .collect();
        // Unicode's compatibility caseless key (§3.13 D146), as `caseless` matches by it.
        let folded: String = visible
            .chars()
            .nfd()
            .default_case_fold()
            .nfkd()
            .default_case_fold()
            .nfkd()
            .collect();
        let spaced = folded.split_whitespace().collect::<Vec<_>>().join(" ");
        let skeleton: String = unicode_security::skeleton(&spaced).collect();
        (!skeleton.is_empty()).then_some(ApproverIdentity(skeleton))
    }

    /// The identity as compared (not meant for display: show the name as the person gave it).
    #[must_use]
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// Whether two approvers' names stand for one person (a name that is empty once normalized
/// is nobody, and is no one else either).
pub(crate) fn same_approver(a: &str, b: &str) -> bool {
    match (ApproverIdentity::of(a), ApproverIdentity::of(b)) {
        (Some(a), Some(b)) => a == b,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nfc_and_nfd_spellings_are_one_person() {
        assert!(same_approver("jos\u{e9}", "jose\u{301}"));
        assert!(same_approver("JOSÉ", "josé"));
    }

    #[test]
    fn different_people_stay_different() {
        for (a, b) in [
            ("carol", "carl"),
            ("ana@acme.example", "ben@acme.example"),
            ("josé", "jose"),
        ] {
            assert!(!same_approver(a, b), "{a} / {b}");
        }
    }

    #[test]
    fn inner_whitespace_runs_count_once() {
        assert!(same_approver("Carol  Smith", "carol smith"));
        assert!(!same_approver("carolsmith", "carol smith"));
    }
}
