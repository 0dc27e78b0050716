//! Nothing panics on any input: arbitrary bytes, and valid documents cut and corrupted.

use proptest::prelude::*;
use tool_contract::ToolContract;
use tool_contract_tests::schools::{DiscoverAdvisors, staff_answer};
use tool_contract_tests::{GetOrder, valid_output, validate_bytes};

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn arbitrary_bytes_get_violations_not_panics(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        let _ = validate_bytes(&bytes);
        let _ = GetOrder::parse_arguments(&bytes);
    }

    #[test]
    fn corrupted_documents_get_violations_not_panics(
        cut in 0usize..400,
        at in 0usize..400,
        byte in prop::sample::select(b"{}[]\",:\\-0123456789eE.tfnu \x00\xff".to_vec()),
    ) {
        let text = valid_output().to_string().into_bytes();
        let mut corrupted = text[..cut.min(text.len())].to_vec();
        let at = at.min(corrupted.len());
        corrupted.insert(at, byte);
        corrupted.extend_from_slice(&text[cut.min(text.len())..]);
        if let Ok(view) = validate_bytes(&corrupted) {
            // Whatever is accepted must still be exactly the contract.
            prop_assert_eq!(view.order_ref, "ORDER-7");
        }
    }

    #[test]
    fn corrupted_grounded_documents_get_violations_not_panics(
        cut in 0usize..400,
        at in 0usize..400,
        byte in prop::sample::select(b"{}[]\",:\\-0123456789eE.tfnu@ \x00\xff".to_vec()),
    ) {
        let schools = vec!["Lund University".to_owned(), "Uppsala University".to_owned()];
        let text = staff_answer(&schools).to_string().into_bytes();
        let mut corrupted = text[..cut.min(text.len())].to_vec();
        let at = at.min(corrupted.len());
        corrupted.insert(at, byte);
        corrupted.extend_from_slice(&text[cut.min(text.len())..]);
        let call = DiscoverAdvisors { schools };
        if let Ok(validated) = call.validate_output_audited(&corrupted, &tool_contract::vocabulary::ForbiddenKeys::DEFAULT) {
            // Whatever is accepted still carries its sources.
            prop_assert!(validated.output.advisors.iter().all(|advisor| !advisor.sources.is_empty()));
        }
    }

    #[test]
    fn the_reader_accepts_exactly_the_json_serde_json_accepts(text in "[\\[\\]{}\",:0-9a-z\\\\.eE+ -]{0,40}") {
        // Wrapped in a free-form field, the only rules left are JSON's grammar and I-JSON.
        let document = valid_output().to_string().replace("{\"channel\":\"web\"}", &text);
        let parsed = serde_json::from_str::<serde_json::Value>(&document);
        // serde_json stops at `1e400` as out of range, a value error we report as
        // inexact_number, before it would see what follows; grammar says nothing there.
        prop_assume!(!parsed.as_ref().is_err_and(|e| e.to_string().contains("out of range")));
        let serde_accepts = parsed.is_ok();
        let violations = validate_bytes(document.as_bytes()).err();
        let ours_syntax_ok = violations
            .as_ref()
            .is_none_or(|v| v.iter().all(|v| v.kind().code() != "syntax"));
        prop_assert_eq!(ours_syntax_ok, serde_accepts, "{}", document);
    }
}
