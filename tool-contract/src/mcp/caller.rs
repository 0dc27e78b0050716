//! Whom a request is of: the one principal a server acts for, or (feature `mcp-auth`) the
//! principal each HTTP request's verified bearer token proves.

use rmcp::ErrorData;
use rmcp::service::{RequestContext, RoleServer};

use crate::contract::ToolSpec;
use crate::vocabulary::{ForbiddenKeys, Principal};

/// Whom a server's requests are of.
#[derive(Clone)]
pub(super) enum Callers {
    /// One principal for every request: a local process over stdio, a loopback listener, or
    /// a server behind a proxy that authenticates.
    One(Principal),
    /// Each HTTP request is of the principal its verified bearer token proves.
    #[cfg(feature = "mcp-auth")]
    Tokens(std::sync::Arc<super::auth::ResourceServer>),
}

impl Callers {
    /// The principal `request_context`'s request is of, and the verified token that proves
    /// it when requests are authenticated. A request of an authenticated server that no door
    /// admitted (served some other way) is refused: nothing runs for a caller nobody verified.
    #[cfg_attr(not(feature = "mcp-auth"), allow(unused_variables))]
    pub(super) fn of(
        &self,
        request_context: &RequestContext<RoleServer>,
    ) -> Result<(Principal, Option<Verified>), ErrorData> {
        match self {
            Callers::One(principal) => Ok((principal.clone(), None)),
            #[cfg(feature = "mcp-auth")]
            Callers::Tokens(resource) => {
                let caller = request_context
                    .extensions
                    .get::<http::request::Parts>()
                    .and_then(|parts| parts.extensions.get::<super::auth::Caller>())
                    .ok_or_else(|| {
                        ErrorData::invalid_request(
                            "the request carries no verified token: nothing ran",
                            None,
                        )
                    })?;
                let verified = Verified {
                    caller: caller.clone(),
                    resource: resource.clone(),
                };
                Ok((caller.0.principal.clone(), Some(verified)))
            }
        }
    }
}

/// The verified token of an authenticated request, with the configuration that judges what
/// it may call.
#[cfg(feature = "mcp-auth")]
#[derive(Clone)]
pub(super) struct Verified {
    caller: super::auth::Caller,
    resource: std::sync::Arc<super::auth::ResourceServer>,
}

/// Without `mcp-auth` no request carries a verified token.
#[cfg(not(feature = "mcp-auth"))]
#[derive(Clone)]
pub(super) enum Verified {}

impl Verified {
    /// Whether `tools/list` shows `spec` to this caller.
    pub(super) fn shows(&self, spec: &ToolSpec) -> bool {
        #[cfg(feature = "mcp-auth")]
        return self.resource.shows(&self.caller.0, spec);
        #[cfg(not(feature = "mcp-auth"))]
        {
            let _ = spec;
            match *self {}
        }
    }

    /// The scopes the token grants.
    pub(super) fn scopes(&self) -> &std::collections::BTreeSet<String> {
        #[cfg(feature = "mcp-auth")]
        return &self.caller.0.scopes;
        #[cfg(not(feature = "mcp-auth"))]
        match *self {}
    }

    /// Refuses a call of `spec` with `arguments` whose scopes the token lacks.
    pub(super) fn allows(
        &self,
        spec: &ToolSpec,
        arguments: &[u8],
        forbidden: &ForbiddenKeys,
    ) -> Result<(), ErrorData> {
        #[cfg(feature = "mcp-auth")]
        return match self
            .resource
            .missing_scopes(&self.caller.0, spec, arguments, forbidden)
        {
            None => Ok(()),
            Some(needed) => Err(ErrorData::invalid_request(
                format!(
                    "the token lacks a scope this call needs ({}): nothing ran",
                    needed.join(" ")
                ),
                None,
            )),
        };
        #[cfg(not(feature = "mcp-auth"))]
        {
            let _ = (spec, arguments, forbidden);
            match *self {}
        }
    }
}
