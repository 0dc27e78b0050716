//! `ToolSpec` and the pieces of a contract the derives emit: effects, field rules, shapes.

use std::fmt;
use std::sync::OnceLock;

use regex::Regex;

use crate::evidence::{SourceTier, SyntheticRule};
use serde::Serialize;
use serde_json::Value;

/// What calling a tool does to the world. It decides retries, approvals and reconciliation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Effect {
    /// Computes from its arguments alone; touches nothing.
    Pure,
    /// Reads outside state; changes nothing.
    ReadOnly,
    /// Changes state; repeating it with the same idempotency key changes nothing more.
    IdempotentWrite,
    /// Changes state; repeating it may do it twice.
    NonIdempotentWrite,
}

impl Effect {
    /// Whether the effect changes state.
    #[must_use]
    pub const fn is_write(self) -> bool {
        matches!(self, Effect::IdempotentWrite | Effect::NonIdempotentWrite)
    }

    /// The name used in the DSL and in JSON, e.g. `read_only`.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Effect::Pure => "pure",
            Effect::ReadOnly => "read_only",
            Effect::IdempotentWrite => "idempotent_write",
            Effect::NonIdempotentWrite => "non_idempotent_write",
        }
    }
}

/// Whether a write needs a person's approval before it runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Approval {
    /// A person approves the exact action first.
    Required,
    /// The write runs without approval.
    NotRequired,
}

/// How a `non_idempotent_write` whose outcome is unknown gets resolved.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind", content = "tool")]
pub enum Reconcile {
    /// By calling this read-only status tool.
    Tool(&'static str),
    /// By a person.
    Manual,
}

/// A named string format a field may require.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Format {
    /// An RFC 3339 date-time with any offset: the format of `time::OffsetDateTime` fields.
    Rfc3339,
    /// An RFC 3339 date-time in UTC, written with a `Z` offset: `2026-11-29T12:00:00Z`.
    Rfc3339Utc,
    /// An absolute `https://` URL with a host and no user info.
    HttpsUrl,
}

impl Format {
    /// The name used in the DSL, e.g. `rfc3339_utc`.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Format::Rfc3339 => "rfc3339",
            Format::Rfc3339Utc => "rfc3339_utc",
            Format::HttpsUrl => "https_url",
        }
    }

    /// Whether `value` is in this format.
    #[must_use]
    pub fn matches(self, value: &str) -> bool {
        match self {
            Format::Rfc3339 => crate::validate::format::parse_rfc3339(value).is_some(),
            Format::Rfc3339Utc => crate::validate::format::is_rfc3339_utc(value),
            Format::HttpsUrl => crate::validate::format::is_https_url(value),
        }
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A `pattern = "..."` rule: its source and, compiled on first use, its regex.
///
/// The derive checks the syntax at compile time. Should the compiled program still not fit the
/// regex engine's size limit, every value fails the pattern: the check fails closed.
pub struct Pattern {
    source: &'static str,
    regex: OnceLock<Option<Regex>>,
}

impl Pattern {
    /// A pattern from its source text (Rust `regex` syntax; unanchored, as in JSON Schema).
    #[must_use]
    pub const fn new(source: &'static str) -> Self {
        Pattern {
            source,
            regex: OnceLock::new(),
        }
    }

    /// The pattern as declared.
    #[must_use]
    pub const fn source(&self) -> &'static str {
        self.source
    }

    /// Whether `value` contains a match.
    #[must_use]
    pub fn is_match(&self, value: &str) -> bool {
        self.regex
            .get_or_init(|| Regex::new(self.source).ok())
            .as_ref()
            .is_some_and(|regex| regex.is_match(value))
    }
}

impl fmt::Debug for Pattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Pattern").field(&self.source).finish()
    }
}

/// Limits on a free-form `serde_json::Value` field, required by its opt-in attribute.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FreeFormLimits {
    /// Deepest nesting of containers inside the value (a scalar is depth 0).
    pub max_depth: usize,
    /// Largest encoded size of the value, in bytes.
    pub max_bytes: usize,
}

/// The constraints declared on one field, beyond its type.
///
/// Length counts Unicode scalar values; `minimum`/`maximum` are inclusive.
#[derive(Debug, Clone, Copy)]
pub struct Rules {
    min_len: Option<u32>,
    max_len: Option<u32>,
    pattern: Option<&'static Pattern>,
    format: Option<Format>,
    max_items: Option<u32>,
    minimum: Option<f64>,
    maximum: Option<f64>,
    free_form: Option<FreeFormLimits>,
    grounded: bool,
    synthetic: Option<&'static SyntheticRule>,
}

impl Rules {
    /// No constraint beyond the type.
    pub const NONE: Rules = Rules {
        min_len: None,
        max_len: None,
        pattern: None,
        format: None,
        max_items: None,
        minimum: None,
        maximum: None,
        free_form: None,
        grounded: false,
        synthetic: None,
    };

    /// With a least string length.
    #[must_use]
    pub const fn with_min_len(mut self, n: u32) -> Self {
        self.min_len = Some(n);
        self
    }

    /// With a greatest string length.
    #[must_use]
    pub const fn with_max_len(mut self, n: u32) -> Self {
        self.max_len = Some(n);
        self
    }

    /// With a pattern strings must match.
    #[must_use]
    pub const fn with_pattern(mut self, pattern: &'static Pattern) -> Self {
        self.pattern = Some(pattern);
        self
    }

    /// With a named format strings must have.
    #[must_use]
    pub const fn with_format(mut self, format: Format) -> Self {
        self.format = Some(format);
        self
    }

    /// With a greatest item count for arrays.
    #[must_use]
    pub const fn with_max_items(mut self, n: u32) -> Self {
        self.max_items = Some(n);
        self
    }

    /// With a least number.
    #[must_use]
    pub const fn with_minimum(mut self, minimum: f64) -> Self {
        self.minimum = Some(minimum);
        self
    }

    /// With a greatest number.
    #[must_use]
    pub const fn with_maximum(mut self, maximum: f64) -> Self {
        self.maximum = Some(maximum);
        self
    }

    /// With the limits of a free-form JSON value.
    #[must_use]
    pub const fn with_free_form(mut self, limits: FreeFormLimits) -> Self {
        self.free_form = Some(limits);
        self
    }

    /// The least string length, if any.
    #[must_use]
    pub const fn min_len(&self) -> Option<u32> {
        self.min_len
    }

    /// The greatest string length, if any.
    #[must_use]
    pub const fn max_len(&self) -> Option<u32> {
        self.max_len
    }

    /// The pattern, if any.
    #[must_use]
    pub const fn pattern(&self) -> Option<&'static Pattern> {
        self.pattern
    }

    /// The named format, if any.
    #[must_use]
    pub const fn format(&self) -> Option<Format> {
        self.format
    }

    /// The greatest item count, if any.
    #[must_use]
    pub const fn max_items(&self) -> Option<u32> {
        self.max_items
    }

    /// The least number, if any.
    #[must_use]
    pub const fn minimum(&self) -> Option<f64> {
        self.minimum
    }

    /// The greatest number, if any.
    #[must_use]
    pub const fn maximum(&self) -> Option<f64> {
        self.maximum
    }

    /// The limits of a free-form JSON value, if the field is one.
    #[must_use]
    pub const fn free_form(&self) -> Option<FreeFormLimits> {
        self.free_form
    }

    /// Marked `grounded`: the value (each item, for a list) must carry one or more sources.
    #[must_use]
    pub const fn with_grounded(mut self) -> Self {
        self.grounded = true;
        self
    }

    /// With synthetic-data detectors on the string values.
    #[must_use]
    pub const fn with_synthetic(mut self, rule: &'static SyntheticRule) -> Self {
        self.synthetic = Some(rule);
        self
    }

    /// Whether the value must carry sources.
    #[must_use]
    pub const fn grounded(&self) -> bool {
        self.grounded
    }

    /// The synthetic-data detectors, if any.
    #[must_use]
    pub const fn synthetic(&self) -> Option<&'static SyntheticRule> {
        self.synthetic
    }
}

/// The JSON shape of a field's type.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub enum Shape {
    /// A string.
    String,
    /// `true` or `false`.
    Boolean,
    /// An integer within `min..=max` (the Rust type's range narrowed to ±(2^53−1)).
    Integer {
        /// The least value.
        min: i64,
        /// The greatest value.
        max: i64,
    },
    /// A finite double.
    Number,
    /// An RFC 3339 date-time string.
    DateTime,
    /// Any JSON value, within its field's [`FreeFormLimits`].
    FreeForm,
    /// The inner shape, or `null`.
    Nullable(fn() -> Shape),
    /// An array of the inner shape.
    Array(fn() -> Shape),
    /// An object with exactly the declared fields.
    Object(&'static ObjectShape),
    /// One of a finite set of strings.
    Enum(&'static EnumShape),
}

/// An object type: a contract's arguments or a `ToolOutput` struct.
#[derive(Debug)]
pub struct ObjectShape {
    name: &'static str,
    description: Option<&'static str>,
    fields: &'static [FieldSpec],
}

impl ObjectShape {
    #[doc(hidden)]
    #[must_use]
    pub const fn new(
        name: &'static str,
        description: Option<&'static str>,
        fields: &'static [FieldSpec],
    ) -> Self {
        ObjectShape {
            name,
            description,
            fields,
        }
    }

    /// The Rust type's name.
    #[must_use]
    pub const fn name(&self) -> &'static str {
        self.name
    }

    /// The type's doc comment, if it has one.
    #[must_use]
    pub const fn description(&self) -> Option<&'static str> {
        self.description
    }

    /// The fields, in declaration order.
    #[must_use]
    pub const fn fields(&self) -> &'static [FieldSpec] {
        self.fields
    }
}

/// A unit-only enum output: a finite set of strings.
#[derive(Debug)]
pub struct EnumShape {
    name: &'static str,
    description: Option<&'static str>,
    values: &'static [&'static str],
}

impl EnumShape {
    #[doc(hidden)]
    #[must_use]
    pub const fn new(
        name: &'static str,
        description: Option<&'static str>,
        values: &'static [&'static str],
    ) -> Self {
        EnumShape {
            name,
            description,
            values,
        }
    }

    /// The Rust type's name.
    #[must_use]
    pub const fn name(&self) -> &'static str {
        self.name
    }

    /// The type's doc comment, if it has one.
    #[must_use]
    pub const fn description(&self) -> Option<&'static str> {
        self.description
    }

    /// The allowed strings, with serde renames applied.
    #[must_use]
    pub const fn values(&self) -> &'static [&'static str] {
        self.values
    }
}

/// One field of an argument or output object.
#[derive(Debug)]
pub struct FieldSpec {
    name: &'static str,
    rust_name: &'static str,
    description: Option<&'static str>,
    shape: fn() -> Shape,
    rules: Rules,
    bound: Option<&'static str>,
}

impl FieldSpec {
    #[doc(hidden)]
    #[must_use]
    pub const fn new(
        name: &'static str,
        rust_name: &'static str,
        description: Option<&'static str>,
        shape: fn() -> Shape,
        rules: Rules,
        bound: Option<&'static str>,
    ) -> Self {
        FieldSpec {
            name,
            rust_name,
            description,
            shape,
            rules,
            bound,
        }
    }

    /// The JSON key, with serde renames applied.
    #[must_use]
    pub const fn name(&self) -> &'static str {
        self.name
    }

    /// The Rust field's name.
    #[must_use]
    pub const fn rust_name(&self) -> &'static str {
        self.rust_name
    }

    /// The field's doc comment, if it has one.
    #[must_use]
    pub const fn description(&self) -> Option<&'static str> {
        self.description
    }

    /// The JSON shape of the field's type.
    #[must_use]
    pub fn shape(&self) -> Shape {
        (self.shape)()
    }

    /// The declared constraints.
    #[must_use]
    pub const fn rules(&self) -> &Rules {
        &self.rules
    }

    /// The input field this output field must equal, if it is `bound`.
    #[must_use]
    pub const fn bound(&self) -> Option<&'static str> {
        self.bound
    }
}

/// Size and depth limits on one encoded document.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Limits {
    /// Largest encoded size, in bytes.
    pub max_bytes: usize,
    /// Deepest nesting of objects and arrays (the top-level object is depth 1).
    pub max_depth: usize,
}

impl Limits {
    /// The limits used where a contract declares none: 1 MiB and 32 levels.
    pub const DEFAULT: Limits = Limits {
        max_bytes: 1 << 20,
        max_depth: 32,
    };
}

/// The revisions that identify exactly which contract a result was produced under.
///
/// Where the contract declares no `input_revision`, `output_revision` or `effect_revision`,
/// each is `sha256:` and the first 16 hex digits of the SHA-256 of what it describes (the
/// input schema, the output schema, the effect declaration), so changing a schema always
/// changes its revision.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Revisions {
    /// Of the arguments' schema.
    pub input: String,
    /// Of the output's schema.
    pub output: String,
    /// Of the effect declaration (effect, approval, reconcile).
    pub effect: String,
    /// Of the code that produces results, as the tool's author names it.
    pub producer: String,
    /// Of the handler, if declared.
    pub handler: Option<String>,
    /// Of the policy around the tool, if declared.
    pub policy: Option<String>,
}

/// Everything the registry knows of one tool, generated by `#[derive(ToolContract)]`.
#[derive(Debug)]
pub struct ToolSpec {
    pub(crate) name: &'static str,
    pub(crate) description: &'static str,
    pub(crate) effect: Effect,
    pub(crate) approval: Option<Approval>,
    pub(crate) reconcile: Option<Reconcile>,
    pub(crate) source_label: &'static str,
    pub(crate) source_tier: Option<SourceTier>,
    pub(crate) revisions: Revisions,
    pub(crate) arguments: &'static ObjectShape,
    pub(crate) argument_limits: Limits,
    pub(crate) output: Shape,
    pub(crate) output_limits: Limits,
    pub(crate) input_schema: Value,
    pub(crate) output_schema: Value,
}

impl ToolSpec {
    /// The tool's name, as providers see it.
    #[must_use]
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// The tool's description: the contract's doc comment.
    #[must_use]
    pub fn description(&self) -> &'static str {
        self.description
    }

    /// What calling the tool does.
    #[must_use]
    pub fn effect(&self) -> Effect {
        self.effect
    }

    /// For writes, whether approval is required; `None` for reads.
    #[must_use]
    pub fn approval(&self) -> Option<Approval> {
        self.approval
    }

    /// For `non_idempotent_write`, how an unknown outcome is reconciled; `None` otherwise.
    #[must_use]
    pub fn reconcile(&self) -> Option<Reconcile> {
        self.reconcile
    }

    /// The label of the data source, shown to the model as provenance.
    #[must_use]
    pub fn source_label(&self) -> &'static str {
        self.source_label
    }

    /// The tier its sources are trusted at (`source_tier = ...`), if the contract declares
    /// one; a source in its output may claim no higher.
    #[must_use]
    pub fn source_tier(&self) -> Option<SourceTier> {
        self.source_tier
    }

    /// The producer revision declared by the contract.
    #[must_use]
    pub fn producer_revision(&self) -> &str {
        &self.revisions.producer
    }

    /// Every revision of the contract.
    #[must_use]
    pub fn revisions(&self) -> &Revisions {
        &self.revisions
    }

    /// The arguments' fields.
    #[must_use]
    pub fn arguments(&self) -> &'static ObjectShape {
        self.arguments
    }

    /// Size and depth limits on the encoded arguments.
    #[must_use]
    pub fn argument_limits(&self) -> Limits {
        self.argument_limits
    }

    /// The output's shape.
    #[must_use]
    pub fn output(&self) -> Shape {
        self.output
    }

    /// Size and depth limits on the encoded output.
    #[must_use]
    pub fn output_limits(&self) -> Limits {
        self.output_limits
    }

    /// The arguments' JSON Schema (draft 2020-12; fit for OpenAI strict function tools,
    /// Anthropic `input_schema` and Gemini `parameters`).
    #[must_use]
    pub fn input_schema(&self) -> &Value {
        &self.input_schema
    }

    /// The output's JSON Schema (draft 2020-12).
    #[must_use]
    pub fn output_schema(&self) -> &Value {
        &self.output_schema
    }

    /// The JSON Schema (draft 2020-12) of every [`ModelResult`](crate::ModelResult) this
    /// tool can produce: the `tool-model-result-v2` envelope, with `data` the
    /// [output schema](Self::output_schema) on success, and otherwise `error` one entry of
    /// the [catalog](crate::CATALOG) exactly. It is what an MCP server lists as the tool's
    /// `outputSchema`, since its `structuredContent` is the model result.
    ///
    /// ```
    /// # use tool_contract::{ToolContract, ToolOutput};
    /// # /// Echo a word.
    /// # #[derive(serde::Deserialize, ToolContract)]
    /// # #[tool_contract(output = Echoed, effect = pure, source_label = "echo", producer_revision = "1")]
    /// # struct Echo { word: String }
    /// # #[derive(serde::Serialize, ToolOutput)]
    /// # struct Echoed { word: String }
    /// let schema = Echo::spec().model_result_schema();
    /// let success = &schema["oneOf"][0]["properties"];
    /// assert_eq!(success["data"], *Echo::spec().output_schema());
    /// assert_eq!(success["schema_version"]["const"], "tool-model-result-v2");
    /// ```
    #[must_use]
    pub fn model_result_schema(&self) -> Value {
        crate::schema::model_result_schema(&self.output_schema)
    }
}

/// Whether `name` fits every provider's tool-name rules: `^[A-Za-z_][A-Za-z0-9_-]{0,63}$`
/// (the rule the derive enforces on contracts at compile time).
pub(crate) fn is_tool_name(name: &str) -> bool {
    let bytes = name.as_bytes();
    matches!(bytes.first(), Some(first) if first.is_ascii_alphabetic() || *first == b'_')
        && bytes.len() <= 64
        && bytes
            .iter()
            .all(|byte| byte.is_ascii_alphanumeric() || *byte == b'_' || *byte == b'-')
}
