//! How far a kind of source is trusted: the order of source tiers.

use serde::Serialize;

use crate::json::names::wire_names;

wire_names! {
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
    pub enum SourceTier {
        /// Forums, wikis anyone edits, social posts.
        Community = "community",
        /// A page found by a web search, whoever publishes it.
        WebSearch = "web_search",
        /// A curated database the application trusts (a registry, an accredited directory).
        AuthoritativeDatabase = "authoritative_database",
        /// The subject's own publication: the institution's site, the issuer's register.
        Official = "official",
    }
}

impl SourceTier {
    /// Every tier, the most trusted first.
    pub const ALL: [SourceTier; 4] = [
        SourceTier::Official,
        SourceTier::AuthoritativeDatabase,
        SourceTier::WebSearch,
        SourceTier::Community,
    ];

    pub(crate) fn from_name(name: &str) -> Option<Self> {
        SourceTier::ALL
            .into_iter()
            .find(|tier| tier.as_str() == name)
    }
}
