//! What the fuzz targets share: a rich contract (every field kind the DSL has, nested lists,
//! a free-form value, bounds and detectors), and the checks each target makes of it.

pub mod providers;
pub mod sealed;

use time::OffsetDateTime;
use tool_contract::json::canonical;
use tool_contract::vocabulary::ForbiddenKeys;
use tool_contract::{ToolContract, ToolOutput};

/// Look an order up, with arguments of every kind the DSL reads.
#[derive(Debug, PartialEq, serde::Deserialize, serde::Serialize, ToolContract)]
#[tool_contract(output = Rich, effect = read_only, source_label = "fuzz",
                producer_revision = "fuzz-1", max_bytes = 16384, max_depth = 12)]
pub struct LookUp {
    /// The order.
    #[tool_contract(pattern = "^ORDER-[0-9]{1,8}$", max_len = 14)]
    pub order_ref: String,
    /// Free text.
    #[tool_contract(min_len = 1, max_len = 64)]
    pub text: String,
    /// A switch.
    pub flag: bool,
    /// A small integer.
    #[tool_contract(minimum = -100, maximum = 100)]
    pub small: i8,
    /// A large one.
    pub count: u64,
    /// A signed one.
    pub offset: i64,
    /// A ratio.
    #[tool_contract(minimum = -1000.5, maximum = 1000.5)]
    pub ratio: f64,
    /// Maybe a label.
    #[tool_contract(max_len = 16)]
    pub label: Option<String>,
    /// Tags.
    #[tool_contract(max_items = 6, max_len = 12)]
    pub tags: Vec<String>,
    /// A grid.
    #[tool_contract(max_items = 4)]
    pub grid: Vec<Vec<i32>>,
    /// When, as text.
    #[tool_contract(format = rfc3339_utc)]
    pub since: String,
    /// When, typed.
    #[serde(with = "time::serde::rfc3339")]
    #[tool_contract(format = rfc3339)]
    pub until: OffsetDateTime,
    /// A page.
    #[tool_contract(format = https_url, max_len = 120)]
    pub link: String,
    /// Anything.
    #[tool_contract(free_form(max_depth = 8, max_bytes = 4096))]
    pub extra: serde_json::Value,
}

/// A state: a unit-only enum.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, ToolOutput)]
#[serde(rename_all = "snake_case")]
pub enum State {
    /// Open.
    Open,
    /// Closed.
    Closed,
    /// On hold.
    OnHold,
}

/// One line of an order.
#[derive(Debug, PartialEq, serde::Serialize, ToolOutput)]
pub struct Line {
    /// The item.
    #[tool_output(max_len = 24)]
    pub sku: String,
    /// How many.
    #[tool_output(minimum = 0, maximum = 1000)]
    pub quantity: u16,
    /// Notes on it.
    #[tool_output(max_items = 3, max_len = 20)]
    pub notes: Vec<Option<String>>,
}

/// What the tool returns: every output field kind.
#[derive(Debug, PartialEq, serde::Serialize, ToolOutput)]
#[tool_output(max_bytes = 16384, max_depth = 12)]
pub struct Rich {
    /// Must equal the call's `order_ref`.
    #[tool_output(bound = order_ref)]
    pub order_ref: String,
    /// A name.
    #[tool_output(min_len = 1, max_len = 40)]
    pub name: String,
    /// A code.
    #[tool_output(pattern = "^[A-Z]{2}-[0-9]{1,6}$", max_len = 9)]
    pub code: String,
    /// A switch.
    pub flag: bool,
    /// A bounded integer.
    #[tool_output(minimum = -1000, maximum = 1000)]
    pub small: i16,
    /// A large one.
    pub big: u64,
    /// A signed one.
    pub signed: i64,
    /// A ratio.
    #[tool_output(minimum = -1000000, maximum = 1000000)]
    pub ratio: f64,
    /// Maybe a comment.
    #[tool_output(max_len = 30)]
    pub comment: Option<String>,
    /// Tags.
    #[tool_output(max_items = 8, max_len = 16)]
    pub tags: Vec<String>,
    /// Nested lines.
    #[tool_output(max_items = 4)]
    pub lines: Vec<Vec<Line>>,
    /// The state.
    pub state: State,
    /// When, as text.
    #[tool_output(format = rfc3339_utc)]
    pub at_text: String,
    /// When, typed.
    #[serde(with = "time::serde::rfc3339")]
    pub at: OffsetDateTime,
    /// Maybe when.
    #[serde(with = "time::serde::rfc3339::option")]
    #[tool_output(format = rfc3339_utc)]
    pub closed_at: Option<OffsetDateTime>,
    /// A page.
    #[tool_output(format = https_url, max_len = 120)]
    pub link: String,
    /// A contact, dropped when made up.
    #[tool_output(strip_synthetic(placeholder_email), max_len = 60)]
    pub email: Option<String>,
    /// A note, refused when made up.
    #[tool_output(reject_synthetic(lorem_ipsum), max_len = 80)]
    pub note: String,
    /// Anything.
    #[tool_output(free_form(max_depth = 6, max_bytes = 2048))]
    pub extra: serde_json::Value,
}

/// The call every output is read for.
pub fn call() -> LookUp {
    LookUp {
        order_ref: "ORDER-7".to_owned(),
        text: "x".to_owned(),
        flag: false,
        small: 0,
        count: 0,
        offset: 0,
        ratio: 0.0,
        label: None,
        tags: Vec::new(),
        grid: Vec::new(),
        since: "2026-01-01T00:00:00Z".to_owned(),
        until: OffsetDateTime::UNIX_EPOCH,
        link: "https://example.org/".to_owned(),
        extra: serde_json::Value::Null,
    }
}

/// What must hold of bytes the output validator accepted: its typed value writes canonical
/// JSON equal to the canonical form of the bytes (unless a detector stripped a value) and to
/// a second path (serde's encoding, canonicalized); that JSON is accepted again, to the same
/// value.
pub fn check_accepted_output(bytes: &[u8], call: &LookUp) {
    let forbidden = &ForbiddenKeys::DEFAULT;
    let Ok(validated) = call.validate_output_audited(bytes, forbidden) else {
        return;
    };
    let written = validated.output.to_canonical_json();
    let by_serde = canonical::to_vec(&serde_json::to_value(&validated.output).unwrap()).unwrap();
    assert_eq!(written, by_serde, "two encodings of one output differ");
    if validated.stripped.is_empty() {
        // Typed dates are written as `time` writes RFC 3339 (`+00:00` as `Z`): they are
        // compared as values below, and everything else as the bytes said it.
        let of_input = canonical::canonicalize(bytes).expect("accepted bytes canonicalize");
        assert_eq!(
            without_dates(&written),
            without_dates(&of_input),
            "the accepted value is not what the bytes said"
        );
    }
    let again = call
        .validate_output_audited(&written, forbidden)
        .expect("an accepted output's own canonical form is accepted again");
    assert!(again.stripped.is_empty(), "stripped twice");
    assert_eq!(
        again.output.to_canonical_json(),
        written,
        "not a fixed point"
    );
    // The typed fields read back equal; the free-form value as JSON (serde_json tells `2.0`
    // from `2`, which canonical JSON writes alike), checked above.
    let typed = |output: Rich| Rich {
        extra: serde_json::Value::Null,
        ..output
    };
    assert_eq!(typed(again.output), typed(validated.output));
}

/// Canonical JSON of an output without its typed dates.
fn without_dates(canonical_json: &[u8]) -> String {
    let mut value: serde_json::Value = serde_json::from_slice(canonical_json).unwrap();
    let object = value.as_object_mut().unwrap();
    object.remove("at");
    object.remove("closed_at");
    String::from_utf8(canonical::to_vec(&value).unwrap()).unwrap()
}

/// What must hold of arguments `parse_arguments` accepted: serde's encoding of the value is
/// accepted again, to the same value, and canonicalizes like the bytes.
pub fn check_accepted_arguments(bytes: &[u8]) {
    let Ok(arguments) = LookUp::parse_arguments(bytes) else {
        return;
    };
    let encoded = serde_json::to_vec(&arguments).unwrap();
    let again = LookUp::parse_arguments(&encoded).expect("re-encoded arguments are accepted");
    assert_eq!(again, arguments);
    // Offsets of `until` may be written differently; everything else reads back as sent.
    let as_sent = canonical::canonicalize(bytes).expect("accepted bytes canonicalize");
    let mut sent: serde_json::Value = serde_json::from_slice(&as_sent).unwrap();
    let mut read: serde_json::Value = serde_json::from_slice(&encoded).unwrap();
    sent.as_object_mut().unwrap().remove("until");
    read.as_object_mut().unwrap().remove("until");
    assert_eq!(
        canonical::to_vec(&sent).unwrap(),
        canonical::to_vec(&read).unwrap()
    );
}
