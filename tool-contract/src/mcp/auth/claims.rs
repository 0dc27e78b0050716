//! The claims of a token whose signature (or issuer) vouched for it: issuer, audience, time,
//! and the principal and scopes they prove. The JWT and the introspection verifier read their
//! claims here alike.

use std::collections::BTreeSet;
use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::{Map, Value};

use super::token::{TokenRefusal, VerifiedToken};
use super::uri::names_resource;
use crate::vocabulary::Principal;

/// Where a principal's tenant comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum TenantRule {
    /// The issuer's own URL: each issuer is a tenant of its own, as OpenID Connect makes
    /// `(iss, sub)` one identity.
    Issuer,
    /// A claim of the token, which must be a non-empty string.
    Claim(String),
    /// The same tenant for every token of this issuer.
    Fixed(String),
}

/// What the claims must say.
pub(super) struct Expected<'a> {
    /// The issuer, exactly (RFC 8414, section 3.3: compared as strings).
    pub(super) issuer: &'a str,
    /// Whether the claims must name the issuer (a JWT must; an introspection answer, which
    /// comes from the issuer itself, may leave it out).
    pub(super) issuer_required: bool,
    /// This server's canonical URI, which the audience must contain.
    pub(super) resource: &'a str,
    /// Whether the claims must say when they expire (a JWT must).
    pub(super) expiry_required: bool,
    /// The clock skew allowed on `exp` and `nbf`, in seconds.
    pub(super) leeway_s: u64,
    pub(super) tenant: &'a TenantRule,
}

/// Now, in seconds since the Unix epoch.
pub(super) fn now_s() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| since.as_secs())
}

/// The token `claims` prove, or why they prove nothing.
pub(super) fn check(
    claims: &Map<String, Value>,
    expected: &Expected<'_>,
) -> Result<VerifiedToken, TokenRefusal> {
    match claims.get("iss") {
        Some(Value::String(issuer)) if issuer == expected.issuer => {}
        Some(_) => return Err(TokenRefusal::WrongIssuer),
        None if expected.issuer_required => return Err(TokenRefusal::MissingClaim("iss")),
        None => {}
    }
    if !audience(claims)?
        .iter()
        .any(|audience| names_resource(audience, expected.resource))
    {
        return Err(TokenRefusal::WrongAudience);
    }
    let now = now_s();
    let expires_at = seconds(claims, "exp")?;
    match expires_at {
        Some(exp) if now >= exp.saturating_add(expected.leeway_s) => {
            return Err(TokenRefusal::Expired);
        }
        None if expected.expiry_required => return Err(TokenRefusal::MissingClaim("exp")),
        _ => {}
    }
    if let Some(not_before) = seconds(claims, "nbf")?
        && not_before > now.saturating_add(expected.leeway_s)
    {
        return Err(TokenRefusal::NotYetValid);
    }
    let subject = non_empty(claims, "sub", "sub")?.ok_or(TokenRefusal::MissingClaim("sub"))?;
    let tenant = match expected.tenant {
        TenantRule::Issuer => expected.issuer.to_owned(),
        TenantRule::Fixed(tenant) => tenant.clone(),
        TenantRule::Claim(name) => non_empty(claims, name, "tenant")?
            .ok_or(TokenRefusal::MissingClaim("tenant"))?
            .to_owned(),
    };
    let mut verified = VerifiedToken::new(Principal::new(tenant, subject), expected.issuer)
        .with_scopes(scopes(claims));
    verified.expires_at = expires_at;
    verified.client_id = non_empty(claims, "client_id", "client_id")?.map(str::to_owned);
    Ok(verified)
}

/// The audience: one string or an array of strings (RFC 7519, section 4.1.3).
fn audience(claims: &Map<String, Value>) -> Result<Vec<&str>, TokenRefusal> {
    match claims.get("aud") {
        Some(Value::String(one)) => Ok(vec![one]),
        Some(Value::Array(many)) => many
            .iter()
            .map(|audience| audience.as_str().ok_or(TokenRefusal::MissingClaim("aud")))
            .collect(),
        _ => Err(TokenRefusal::MissingClaim("aud")),
    }
}

/// The scopes granted: `scope`, space-separated (RFC 9068, section 2.2.3); failing that the
/// `scp` some issuers write, as a string or an array.
fn scopes(claims: &Map<String, Value>) -> BTreeSet<String> {
    let words = |text: &str| {
        text.split(' ')
            .filter(|word| !word.is_empty())
            .map(str::to_owned)
            .collect::<BTreeSet<_>>()
    };
    match claims.get("scope").or_else(|| claims.get("scp")) {
        Some(Value::String(text)) => words(text),
        Some(Value::Array(items)) => items
            .iter()
            .filter_map(Value::as_str)
            .flat_map(words)
            .collect(),
        _ => BTreeSet::new(),
    }
}

/// A NumericDate claim, if present: a number of seconds (fractions dropped).
fn seconds(claims: &Map<String, Value>, name: &'static str) -> Result<Option<u64>, TokenRefusal> {
    match claims.get(name) {
        None => Ok(None),
        Some(Value::Number(number)) => number
            .as_u64()
            .or_else(|| {
                number
                    .as_f64()
                    .filter(|seconds| seconds.is_finite() && *seconds >= 0.0)
                    // Whole seconds of a date within u64, as the claim means it.
                    .map(|seconds| seconds as u64)
            })
            .map(Some)
            .ok_or(TokenRefusal::MissingClaim(name)),
        Some(_) => Err(TokenRefusal::MissingClaim(name)),
    }
}

/// The claim `name`, which when present must be a non-empty string (refused as `label`).
fn non_empty<'c>(
    claims: &'c Map<String, Value>,
    name: &str,
    label: &'static str,
) -> Result<Option<&'c str>, TokenRefusal> {
    match claims.get(name) {
        None => Ok(None),
        Some(Value::String(text)) if !text.is_empty() => Ok(Some(text)),
        Some(_) => Err(TokenRefusal::MissingClaim(label)),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    const ISSUER: &str = "https://auth.example.com";
    const RESOURCE: &str = "https://mcp.example.com/mcp";

    fn expected(tenant: &TenantRule) -> Expected<'_> {
        Expected {
            issuer: ISSUER,
            issuer_required: true,
            resource: RESOURCE,
            expiry_required: true,
            leeway_s: 30,
            tenant,
        }
    }

    fn claims(extra: Value) -> Map<String, Value> {
        let mut claims = json!({
            "iss": ISSUER, "aud": RESOURCE, "sub": "alice", "exp": now_s() + 300,
            "scope": "tools:read  tools:write", "client_id": "desk-client", "org": "acme",
        });
        if let (Value::Object(claims), Value::Object(extra)) = (&mut claims, extra) {
            claims.extend(extra);
        }
        match claims {
            Value::Object(claims) => claims,
            _ => unreachable!("an object"),
        }
    }

    #[test]
    fn good_claims_prove_the_subject_within_the_configured_tenant_with_their_scopes() {
        let rule = TenantRule::Claim("org".to_owned());
        let verified = check(&claims(json!({})), &expected(&rule)).unwrap();
        assert_eq!(verified.principal, Principal::new("acme", "alice"));
        assert_eq!(
            verified.scopes.iter().collect::<Vec<_>>(),
            ["tools:read", "tools:write"]
        );
        assert_eq!(verified.client_id.as_deref(), Some("desk-client"));
        let by_issuer = check(&claims(json!({})), &expected(&TenantRule::Issuer)).unwrap();
        assert_eq!(by_issuer.principal, Principal::new(ISSUER, "alice"));
    }

    #[test]
    fn each_wrong_claim_is_its_own_refusal() {
        let rule = TenantRule::Claim("org".to_owned());
        let refused = |extra: Value| check(&claims(extra), &expected(&rule)).unwrap_err();
        assert_eq!(
            refused(json!({ "iss": "https://evil.example" })),
            TokenRefusal::WrongIssuer
        );
        assert_eq!(
            refused(json!({ "aud": ["https://other.example.com/mcp"] })),
            TokenRefusal::WrongAudience
        );
        assert_eq!(
            refused(json!({ "aud": 7 })),
            TokenRefusal::MissingClaim("aud")
        );
        assert_eq!(
            refused(json!({ "exp": now_s() - 31 })),
            TokenRefusal::Expired
        );
        assert_eq!(
            refused(json!({ "nbf": now_s() + 31 })),
            TokenRefusal::NotYetValid
        );
        assert_eq!(
            refused(json!({ "sub": "" })),
            TokenRefusal::MissingClaim("sub")
        );
        assert_eq!(
            refused(json!({ "org": null })),
            TokenRefusal::MissingClaim("tenant")
        );
        assert_eq!(
            refused(json!({ "exp": "tomorrow" })),
            TokenRefusal::MissingClaim("exp")
        );
    }

    #[test]
    fn the_leeway_forgives_a_little_skew_and_no_more() {
        let rule = TenantRule::Issuer;
        let within = claims(json!({ "exp": now_s() - 10, "nbf": now_s() + 10 }));
        assert!(check(&within, &expected(&rule)).is_ok());
    }

    #[test]
    fn one_of_several_audiences_is_enough() {
        let rule = TenantRule::Issuer;
        let many =
            claims(json!({ "aud": ["https://other.example", "HTTPS://MCP.EXAMPLE.COM/mcp"] }));
        assert!(check(&many, &expected(&rule)).is_ok());
    }
}
