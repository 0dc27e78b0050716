//! `GroundingSource`: the evidence a fact carries; and how a source tier is read, against the
//! ceiling its contract declares.

use serde::Serialize;

use super::reader::{self, NoBoundInputs, Reader, Stop};
use super::rules::Rules;
use super::shape::{EnumShape, Shape};
use super::traits::{ContractField, ReadField};
use super::traits::{OwnedOutput, ToolOutput};
use crate::json::canonical::write as canonical;
use crate::json::encoding::infallible;
use crate::vocabulary::forbidden::ForbiddenKeys;
use crate::vocabulary::limits::Limits;
use crate::vocabulary::tier::SourceTier;
use crate::vocabulary::violation::Violations;

static TIER_NAMES: [&str; 4] = [
    SourceTier::ALL[0].as_str(),
    SourceTier::ALL[1].as_str(),
    SourceTier::ALL[2].as_str(),
    SourceTier::ALL[3].as_str(),
];

static TIER_SHAPE: EnumShape = EnumShape::new(
    "SourceTier",
    Some(
        "How far the source is trusted: official > authoritative_database > web_search > community.",
    ),
    &TIER_NAMES,
);

// Written by hand rather than derived: reading a tier also checks it against the ceiling the
// contract declares, so that no payload raises its own tier.
impl ContractField for SourceTier {
    type __Check<I: crate::contract::ToolContract> = crate::contract::bound::NoBounds;

    fn __shape() -> Shape {
        Shape::Enum(&TIER_SHAPE)
    }

    fn __write_canonical(&self, out: &mut Vec<u8>) {
        canonical::write_str(out, self.as_str());
    }

    const __CLAIMS_TIER: bool = true;
}

impl<'de> ReadField<'de> for SourceTier {
    fn __read(reader: &mut Reader<'de, '_>, _rules: &Rules) -> Result<Option<Self>, Stop> {
        let Some(name) = reader.read_string()? else {
            return Ok(None);
        };
        let Some(tier) = SourceTier::from_name(&name) else {
            reader.not_in_enum(&TIER_NAMES)?;
            return Ok(None);
        };
        let ok = reader.check_source_tier(tier)?;
        Ok(ok.then_some(tier))
    }
}

impl ToolOutput for SourceTier {
    const LIMITS: Limits = Limits::DEFAULT;
}

impl OwnedOutput for SourceTier {}

/// One piece of evidence for a fact: where it was read, what it said, how sure the tool is.
///
/// An output type declared `#[tool_output(grounded)]` holds a `Vec<GroundingSource>` field
/// that validation requires to be non-empty; each source is read exactly like any output:
/// `id` 1–128 of `A-Z a-z 0-9 . _ : / # -` starting with a letter or digit, `label` 1–200
/// characters, `tier` no higher than the contract's `source_tier`, `url` null or an `https://`
/// URL, `snippet` 1–2,000 characters of the source's own text, `confidence` within `0..=1`.
///
/// The fields are private, so every value in hand passed those checks: validation builds it,
/// or [`GroundingSource::new`] does, with the same rules.
///
/// ```
/// use tool_contract::evidence::{GroundingSource, SourceTier};
///
/// let source = GroundingSource::new(
///     "staff-page",
///     "Faculty of Physics: staff",
///     SourceTier::Official,
///     Some("https://physics.example.edu/staff"),
///     "Prof. Ada Byron, head of the optics group",
///     0.9,
/// )?;
/// assert_eq!(source.tier(), SourceTier::Official);
///
/// let plain_http = GroundingSource::new("s", "l", SourceTier::Community, Some("http://x.org"), "t", 0.5);
/// assert_eq!(plain_http.unwrap_err().paths().collect::<Vec<_>>(), ["/url"]);
/// # Ok::<(), tool_contract::Violations>(())
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, tool_contract_derive::ToolOutput)]
pub struct GroundingSource {
    /// The source's id, unique within one result.
    #[tool_output(pattern = "^[A-Za-z0-9][A-Za-z0-9._:/#-]{0,127}$")]
    id: String,
    /// A human-readable name of the source.
    #[tool_output(min_len = 1, max_len = 200)]
    label: String,
    /// How far the source is trusted.
    tier: SourceTier,
    /// Where the source can be read, if it has an address.
    #[tool_output(format = https_url, max_len = 2048)]
    url: Option<String>,
    /// The source's own text that supports the fact.
    #[tool_output(min_len = 1, max_len = 2000)]
    snippet: String,
    /// How sure the tool is that the source supports the fact, from 0 to 1.
    #[tool_output(minimum = 0, maximum = 1)]
    confidence: f64,
}

impl GroundingSource {
    /// A source, checked by the rules validation applies.
    ///
    /// # Errors
    ///
    /// Every rule the values break, each at the JSON Pointer of its field.
    pub fn new(
        id: impl Into<String>,
        label: impl Into<String>,
        tier: SourceTier,
        url: Option<&str>,
        snippet: impl Into<String>,
        confidence: f64,
    ) -> Result<Self, Violations> {
        let source = GroundingSource {
            id: id.into(),
            label: label.into(),
            tier,
            url: url.map(str::to_owned),
            snippet: snippet.into(),
            confidence,
        };
        // The rules are the derived reader's own: the source is read back from its JSON form
        // (in declaration order, so violations come in that order) exactly as validation
        // reads one in an output. A non-finite confidence, which JSON cannot hold, is written
        // as `null` and refused as no number.
        let bytes = infallible(
            serde_json::to_vec(&source),
            "a grounding source serializes to strings and a number",
        );
        reader::read_document(
            &bytes,
            Self::LIMITS,
            &ForbiddenKeys::DEFAULT,
            &NoBoundInputs,
            |reader| Self::__read(reader, &Rules::NONE),
        )?;
        Ok(source)
    }

    /// The source's id.
    #[must_use]
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The source's name.
    #[must_use]
    pub fn label(&self) -> &str {
        &self.label
    }

    /// The tier the source claims (at most its contract's).
    #[must_use]
    pub fn tier(&self) -> SourceTier {
        self.tier
    }

    /// Its `https://` address, if it has one.
    #[must_use]
    pub fn url(&self) -> Option<&str> {
        self.url.as_deref()
    }

    /// The source's own text that supports the fact.
    #[must_use]
    pub fn snippet(&self) -> &str {
        &self.snippet
    }

    /// How sure the tool is, within `0..=1`.
    #[must_use]
    pub fn confidence(&self) -> f64 {
        self.confidence
    }
}
