//! The attribute keys, as users write them.

pub const TOOL_CONTRACT: &str = "tool_contract";
pub const TOOL_OUTPUT: &str = "tool_output";

/// The two derives, each with its own attribute namespace.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Namespace {
    /// `#[derive(ToolContract)]`, `#[tool_contract(...)]`.
    Contract,
    /// `#[derive(ToolOutput)]`, `#[tool_output(...)]`.
    Output,
}

impl Namespace {
    /// The attribute's name, as users write it.
    pub fn attribute(self) -> &'static str {
        match self {
            Namespace::Contract => TOOL_CONTRACT,
            Namespace::Output => TOOL_OUTPUT,
        }
    }

    /// The derive's name.
    pub fn derive(self) -> &'static str {
        match self {
            Namespace::Contract => "ToolContract",
            Namespace::Output => "ToolOutput",
        }
    }
}
pub const SERDE: &str = "serde";
pub const DOC: &str = "doc";

// Container keys of `#[tool_contract(...)]`.
pub const OUTPUT: &str = "output";
pub const EFFECT: &str = "effect";
pub const SOURCE_LABEL: &str = "source_label";
pub const ADDITIVE: &str = "additive";
pub const PRODUCER_REVISION: &str = "producer_revision";
pub const NAME: &str = "name";
pub const APPROVAL: &str = "approval";
pub const RECONCILE: &str = "reconcile";
pub const INPUT_REVISION: &str = "input_revision";
pub const OUTPUT_REVISION: &str = "output_revision";
pub const EFFECT_REVISION: &str = "effect_revision";
pub const HANDLER_REVISION: &str = "handler_revision";
pub const POLICY_REVISION: &str = "policy_revision";
pub const SOURCE_TIER: &str = "source_tier";
pub const OPERATION: &str = "operation";
pub const WITHIN: &str = "within";

// Container keys of both namespaces.
pub const MAX_BYTES: &str = "max_bytes";
pub const MAX_DEPTH: &str = "max_depth";

// Field keys of both namespaces.
pub const MAX_LEN: &str = "max_len";
pub const MIN_LEN: &str = "min_len";
pub const PATTERN: &str = "pattern";
pub const FORMAT: &str = "format";
pub const MAX_ITEMS: &str = "max_items";
pub const MINIMUM: &str = "minimum";
pub const MAXIMUM: &str = "maximum";
pub const FREE_FORM: &str = "free_form";

// Field keys of `#[tool_output(...)]` only (`grounded` is a container key there too).
pub const BOUND: &str = "bound";
pub const GROUNDED: &str = "grounded";
pub const REJECT_SYNTHETIC: &str = "reject_synthetic";
pub const STRIP_SYNTHETIC: &str = "strip_synthetic";
pub const WITH: &str = "with";
pub const ALLOW_FORBIDDEN_KEY: &str = "allow_forbidden_key";

pub const CONTRACT_KEYS: &[&str] = &[
    OUTPUT,
    ADDITIVE,
    EFFECT,
    SOURCE_LABEL,
    PRODUCER_REVISION,
    NAME,
    APPROVAL,
    RECONCILE,
    OPERATION,
    WITHIN,
    INPUT_REVISION,
    OUTPUT_REVISION,
    EFFECT_REVISION,
    HANDLER_REVISION,
    POLICY_REVISION,
    SOURCE_TIER,
    MAX_BYTES,
    MAX_DEPTH,
];
pub const OUTPUT_KEYS: &[&str] = &[MAX_BYTES, MAX_DEPTH, GROUNDED];
pub const INPUT_FIELD_KEYS: &[&str] = &[
    MAX_LEN,
    MIN_LEN,
    PATTERN,
    FORMAT,
    MAX_ITEMS,
    MINIMUM,
    MAXIMUM,
    FREE_FORM,
    ALLOW_FORBIDDEN_KEY,
];
pub const OUTPUT_FIELD_KEYS: &[&str] = &[
    MAX_LEN,
    MIN_LEN,
    PATTERN,
    FORMAT,
    MAX_ITEMS,
    MINIMUM,
    MAXIMUM,
    FREE_FORM,
    BOUND,
    GROUNDED,
    REJECT_SYNTHETIC,
    STRIP_SYNTHETIC,
    ALLOW_FORBIDDEN_KEY,
];
