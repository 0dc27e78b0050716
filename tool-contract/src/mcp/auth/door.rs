//! The HTTP door of an authenticated server: every request passes here before rmcp reads it.
//!
//! It serves the protected resource metadata (RFC 9728), takes the bearer token from the
//! `Authorization` header only (RFC 6750, section 2.1; a token in the query string is refused,
//! as MCP's authorization requires), has it verified, keeps each handshake session to the
//! principal that opened it, and refuses a call whose scopes the token lacks, with the
//! challenge a client steps up from (MCP's "Scope Challenge Handling").

use std::sync::Arc;

use bytes::Bytes;
use http::request::Parts;
use http::{HeaderValue, Method, StatusCode, header};
use url::form_urlencoded;

use super::resource::ResourceServer;
use super::token::{TokenRefusal, VerifiedToken};
use crate::dispatch::Dispatcher;
use crate::mcp::reply::{self, Reply};
use crate::mcp::sessions::{SessionBook, session_of};
use crate::vocabulary::Principal;

/// The longest `Authorization` header read; a longer one is refused before it is parsed.
pub const MAX_AUTHORIZATION_BYTES: usize = 8 * 1024;

/// The caller of one HTTP request, as the door verified it: what the server's handler acts
/// for. Only the door makes one, so nothing else in a request's extensions can pose as it.
#[derive(Debug, Clone)]
pub(crate) struct Caller(pub(crate) Arc<VerifiedToken>);

/// Why the door turned a request away.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Refused {
    /// No bearer token at all.
    NoToken,
    /// A request no resource server takes (RFC 6750's `invalid_request`).
    BadRequest(&'static str),
    /// A token its verifier refused.
    Token(TokenRefusal),
    /// A token without every scope the call needs: these.
    Scope(Vec<String>),
    /// A session another principal opened.
    OtherPrincipal,
    /// A session this door does not know.
    UnknownSession,
}

/// The door of one server.
pub(crate) struct Door {
    resource: Arc<ResourceServer>,
    dispatcher: Arc<Dispatcher>,
    metadata: Bytes,
    metadata_url: String,
    /// What a client asks for to use the server at all, as a `401` names it.
    supported: String,
    /// Which principal opened each handshake session.
    sessions: Arc<SessionBook>,
}

impl Door {
    pub(crate) fn new(
        resource: Arc<ResourceServer>,
        dispatcher: Arc<Dispatcher>,
        sessions: Arc<SessionBook>,
    ) -> Self {
        let registry = dispatcher.registry();
        let metadata = Bytes::from(resource.metadata(registry).to_string());
        let supported = resource.scopes.supported(registry).join(" ");
        Door {
            metadata_url: resource.metadata_url(),
            resource,
            dispatcher,
            metadata,
            supported,
            sessions,
        }
    }

    /// The answer to a request that is not for the MCP endpoint: the metadata, or `404`.
    pub(crate) fn answer_elsewhere(&self, parts: &Parts) -> Option<Reply> {
        let path = parts.uri.path();
        if self.resource.is_metadata_path(path) {
            return Some(if parts.method == Method::GET {
                reply::body(StatusCode::OK, "application/json", self.metadata.clone())
            } else {
                reply::text(
                    StatusCode::METHOD_NOT_ALLOWED,
                    "the metadata is read with GET",
                )
            });
        }
        (path != self.resource.endpoint_path())
            .then(|| reply::text(StatusCode::NOT_FOUND, "no MCP endpoint here"))
    }

    /// The caller of a request for the MCP endpoint, or the answer that turns it away.
    pub(crate) async fn admit(&self, parts: &Parts) -> Result<Caller, Reply> {
        let admitted = self.verified(parts).await.and_then(|verified| {
            self.check_session(parts, &verified.principal)?;
            Ok(verified)
        });
        admitted
            .map(|verified| Caller(Arc::new(verified)))
            .map_err(|refused| self.refusal(&refused))
    }

    /// The answer that steps `caller` up, when its token lacks a scope this call of `tool`
    /// with `arguments` needs; `None` when it may make the call.
    pub(crate) fn refuse_call(
        &self,
        caller: &Caller,
        tool: &str,
        arguments: &[u8],
    ) -> Option<Reply> {
        // The dispatcher answers an unknown tool, to every caller alike.
        let spec = self.dispatcher.registry().get(tool)?;
        let forbidden = self.dispatcher.registry().forbidden_keys();
        let needed = self
            .resource
            .missing_scopes(&caller.0, spec, arguments, forbidden)?;
        Some(self.refusal(&Refused::Scope(needed)))
    }

    async fn verified(&self, parts: &Parts) -> Result<VerifiedToken, Refused> {
        if token_in_query(parts.uri.query()) {
            return Err(Refused::BadRequest(
                "access tokens are accepted in the Authorization header only",
            ));
        }
        let token = bearer(&parts.headers)?.ok_or(Refused::NoToken)?;
        self.resource
            .verifier()
            .verify(token, self.resource.resource())
            .await
            .map_err(Refused::Token)
    }

    /// A request within a handshake session must come from the principal that opened it.
    fn check_session(&self, parts: &Parts, principal: &Principal) -> Result<(), Refused> {
        let Some(id) = session_of(&parts.headers) else {
            return Ok(());
        };
        match self.sessions.owner(id) {
            Some(owner) if owner == *principal => Ok(()),
            Some(_) => Err(Refused::OtherPrincipal),
            None => Err(Refused::UnknownSession),
        }
    }

    fn refusal(&self, refused: &Refused) -> Reply {
        let challenge = |error: Option<(&str, &str)>, scope: &str| {
            let mut challenge = format!("Bearer resource_metadata=\"{}\"", self.metadata_url);
            if !scope.is_empty() {
                challenge.push_str(&format!(", scope=\"{scope}\""));
            }
            if let Some((code, description)) = error {
                challenge.push_str(&format!(
                    ", error=\"{code}\", error_description=\"{}\"",
                    quotable(description)
                ));
            }
            challenge
        };
        let (status, header, text) = match refused {
            Refused::NoToken => (
                StatusCode::UNAUTHORIZED,
                Some(challenge(None, &self.supported)),
                "a bearer access token is required",
            ),
            Refused::BadRequest(why) => (
                StatusCode::BAD_REQUEST,
                Some(challenge(Some(("invalid_request", why)), "")),
                *why,
            ),
            Refused::Token(TokenRefusal::Unavailable(why)) => {
                tracing::warn!(reason = %why, "a token could not be verified");
                (
                    StatusCode::SERVICE_UNAVAILABLE,
                    None,
                    "the token could not be verified now; try again later",
                )
            }
            Refused::Token(refusal) => {
                tracing::info!(refusal = refusal.code(), "a bearer token was refused");
                (
                    StatusCode::UNAUTHORIZED,
                    Some(challenge(
                        Some(("invalid_token", &refusal.to_string())),
                        &self.supported,
                    )),
                    "the bearer token was refused",
                )
            }
            Refused::Scope(needed) => (
                StatusCode::FORBIDDEN,
                Some(challenge(
                    Some(("insufficient_scope", "this call needs more scopes")),
                    &needed.join(" "),
                )),
                "the token lacks a scope this call needs",
            ),
            Refused::OtherPrincipal => (
                StatusCode::FORBIDDEN,
                None,
                "this session belongs to another principal: open a session of your own",
            ),
            Refused::UnknownSession => {
                (StatusCode::NOT_FOUND, None, "Not Found: Session not found")
            }
        };
        let mut answer = reply::text(status, text);
        if let Some(value) = header.and_then(|header| HeaderValue::from_str(&header).ok()) {
            answer.headers_mut().insert(header::WWW_AUTHENTICATE, value);
        }
        answer
    }
}

/// Whether the query string carries an access token (RFC 6750, section 2.3, which MCP forbids).
fn token_in_query(query: Option<&str>) -> bool {
    query.is_some_and(|query| {
        form_urlencoded::parse(query.as_bytes()).any(|(name, _)| name == "access_token")
    })
}

/// The bearer token of `headers`: none when there is no `Authorization` header or it is of
/// another scheme; refused when there are several, one longer than
/// [`MAX_AUTHORIZATION_BYTES`] (before it is read any further), or one that is not a token.
fn bearer(headers: &http::HeaderMap) -> Result<Option<&str>, Refused> {
    let mut values = headers.get_all(header::AUTHORIZATION).iter();
    let Some(value) = values.next() else {
        return Ok(None);
    };
    if values.next().is_some() {
        return Err(Refused::BadRequest("more than one Authorization header"));
    }
    if value.len() > MAX_AUTHORIZATION_BYTES {
        return Err(Refused::BadRequest("the Authorization header is too long"));
    }
    let value = value
        .to_str()
        .map_err(|_| Refused::Token(TokenRefusal::Malformed))?;
    let Some((scheme, token)) = value.split_once(' ') else {
        return Ok(None);
    };
    if !scheme.eq_ignore_ascii_case("bearer") {
        return Ok(None);
    }
    let token = token.trim_start_matches(' ');
    if is_b64token(token) {
        Ok(Some(token))
    } else {
        Err(Refused::Token(TokenRefusal::Malformed))
    }
}

/// Whether `token` is a `b64token` (RFC 6750, section 2.1): letters, digits, `-._~+/`, then
/// any `=`.
fn is_b64token(token: &str) -> bool {
    /// The bytes of a `b64token` before its padding, by value.
    const B64TOKEN: [bool; 256] = {
        let mut allowed = [false; 256];
        let mut byte = 0;
        while byte < 256 {
            allowed[byte] = (byte as u8).is_ascii_alphanumeric()
                || matches!(byte as u8, b'-' | b'.' | b'_' | b'~' | b'+' | b'/');
            byte += 1;
        }
        allowed
    };
    let body = token.trim_end_matches('=');
    !body.is_empty() && body.bytes().all(|byte| B64TOKEN[usize::from(byte)])
}

/// `text` as the quoted string of a challenge may carry it (RFC 6750's `NQSCHAR`).
fn quotable(text: &str) -> String {
    text.chars()
        .map(|c| match c {
            ' ' | '!' | '#'..='[' | ']'..='~' => c,
            _ => '\'',
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(values: &[&str]) -> http::HeaderMap {
        let mut headers = http::HeaderMap::new();
        for value in values {
            headers.append(header::AUTHORIZATION, HeaderValue::from_str(value).unwrap());
        }
        headers
    }

    #[test]
    fn the_bearer_token_comes_from_one_authorization_header() {
        assert_eq!(
            bearer(&headers(&["Bearer abc.def-_~+/=="])),
            Ok(Some("abc.def-_~+/=="))
        );
        assert_eq!(bearer(&headers(&["bearer  abc"])), Ok(Some("abc")));
        assert_eq!(bearer(&headers(&[])), Ok(None));
        assert_eq!(bearer(&headers(&["Basic dXNlcjpwYXNz"])), Ok(None));
        assert_eq!(
            bearer(&headers(&["Bearer a", "Bearer b"])),
            Err(Refused::BadRequest("more than one Authorization header"))
        );
        assert_eq!(
            bearer(&headers(&["Bearer a\"b"])),
            Err(Refused::Token(TokenRefusal::Malformed))
        );
        assert_eq!(
            bearer(&headers(&["Bearer "])),
            Err(Refused::Token(TokenRefusal::Malformed))
        );
    }

    #[test]
    fn a_header_over_the_limit_is_refused_before_it_is_read() {
        let long = format!("Bearer {}", "a".repeat(MAX_AUTHORIZATION_BYTES));
        assert_eq!(
            bearer(&headers(&[&long])),
            Err(Refused::BadRequest("the Authorization header is too long"))
        );
    }

    #[test]
    fn a_token_in_the_query_string_is_seen() {
        assert!(token_in_query(Some("access_token=abc")));
        assert!(token_in_query(Some("x=1&access%5Ftoken=abc")));
        assert!(!token_in_query(Some("x=1")));
        assert!(!token_in_query(None));
    }

    #[test]
    fn a_description_never_breaks_its_quoted_string() {
        assert_eq!(quotable("a \"b\" \\ c\n"), "a 'b' ' c'");
    }
}
