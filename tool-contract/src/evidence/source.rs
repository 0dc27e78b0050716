//! `GroundingSource` and `SourceTier`: the evidence a fact carries, and how far it is trusted.

use std::fmt;

use serde::Serialize;

use crate::ToolOutput;
use crate::canonical::write as canonical;
use crate::spec::{EnumShape, Format, Limits, Rules, Shape};
use crate::validate::field::ContractField;
use crate::validate::reader::{Reader, Stop};
use crate::violation::{Violation, ViolationKind, Violations};

/// How far a kind of source is trusted, from the most to the least:
/// `official` > `authoritative_database` > `web_search` > `community`.
///
/// The order is fixed and `Ord` follows it (`Official` is the greatest). A tool's tier is
/// declared on its contract (`#[tool_contract(source_tier = official)]`); a source in its
/// output may claim that tier or a lower one, never a higher one.
///
/// ```
/// use tool_contract::evidence::SourceTier;
///
/// assert!(SourceTier::Official > SourceTier::AuthoritativeDatabase);
/// assert!(SourceTier::WebSearch > SourceTier::Community);
/// assert_eq!(SourceTier::AuthoritativeDatabase.as_str(), "authoritative_database");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SourceTier {
    /// Forums, wikis anyone edits, social posts.
    Community,
    /// A page found by a web search, whoever publishes it.
    WebSearch,
    /// A curated database the application trusts (a registry, an accredited directory).
    AuthoritativeDatabase,
    /// The subject's own publication: the institution's site, the issuer's register.
    Official,
}

impl SourceTier {
    /// Every tier, the most trusted first.
    pub const ALL: [SourceTier; 4] = [
        SourceTier::Official,
        SourceTier::AuthoritativeDatabase,
        SourceTier::WebSearch,
        SourceTier::Community,
    ];

    /// The name used in the DSL and in JSON, e.g. `web_search`.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            SourceTier::Official => "official",
            SourceTier::AuthoritativeDatabase => "authoritative_database",
            SourceTier::WebSearch => "web_search",
            SourceTier::Community => "community",
        }
    }

    fn from_name(name: &str) -> Option<Self> {
        SourceTier::ALL
            .into_iter()
            .find(|tier| tier.as_str() == name)
    }
}

impl fmt::Display for SourceTier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

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
    fn __read(reader: &mut Reader<'_>, _rules: &Rules) -> Result<Option<Self>, Stop> {
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

    fn __shape() -> Shape {
        Shape::Enum(&TIER_SHAPE)
    }

    fn __write_canonical(&self, out: &mut Vec<u8>) {
        canonical::write_str(out, self.as_str());
    }

    const __CLAIMS_TIER: bool = true;
}

impl ToolOutput for SourceTier {
    const LIMITS: Limits = Limits::DEFAULT;
}

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
#[derive(Debug, Clone, PartialEq, Serialize, crate::ToolOutput)]
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
        let violations = source.violations();
        if violations.is_empty() {
            Ok(source)
        } else {
            Err(Violations::new(violations, false))
        }
    }

    fn violations(&self) -> Vec<Violation> {
        let mut violations = Vec::new();
        let id_ok = self.id.len() <= 128
            && self.id.bytes().enumerate().all(|(index, byte)| {
                byte.is_ascii_alphanumeric() || (index > 0 && b"._:/#-".contains(&byte))
            })
            && !self.id.is_empty();
        if !id_ok {
            let pattern = "^[A-Za-z0-9][A-Za-z0-9._:/#-]{0,127}$";
            violations.push(Violation::new(
                "/id",
                ViolationKind::PatternMismatch { pattern },
            ));
        }
        for (path, text, max) in [
            ("/label", &self.label, 200),
            ("/snippet", &self.snippet, 2000),
        ] {
            let actual = text.chars().count();
            if actual == 0 {
                violations.push(Violation::new(
                    path,
                    ViolationKind::TooShort { min: 1, actual },
                ));
            } else if actual > max as usize {
                violations.push(Violation::new(path, ViolationKind::TooLong { max, actual }));
            }
        }
        if let Some(url) = &self.url
            && !(url.chars().count() <= 2048 && Format::HttpsUrl.matches(url))
        {
            let kind = ViolationKind::InvalidFormat {
                format: Format::HttpsUrl,
            };
            violations.push(Violation::new("/url", kind));
        }
        // `contains` is false for NaN, so NaN is refused too.
        if !(0.0..=1.0).contains(&self.confidence) {
            let kind = if self.confidence < 0.0 {
                ViolationKind::BelowMinimum { minimum: 0.0 }
            } else {
                ViolationKind::AboveMaximum { maximum: 1.0 }
            };
            violations.push(Violation::new("/confidence", kind));
        }
        violations
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
