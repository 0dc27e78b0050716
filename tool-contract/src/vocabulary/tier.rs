//! How far a kind of source is trusted: the order of source tiers.

use std::fmt;

use serde::Serialize;

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

    pub(crate) fn from_name(name: &str) -> Option<Self> {
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
