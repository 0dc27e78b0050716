//! This server as an OAuth 2.1 resource server: its canonical URI, the verifier of its
//! tokens, the scopes its tools need, and the protected resource metadata it publishes
//! (RFC 9728).

use std::collections::BTreeSet;
use std::sync::Arc;

use serde_json::{Value, json};
use url::Url;

use super::error::AuthConfigError;
use super::scopes::{ScopePolicy, is_scope_token};
use super::token::{TokenVerifier, VerifiedToken};
use super::uri::canonical;
use crate::contract::{Registry, ToolContract, ToolSpec};
use crate::vocabulary::ForbiddenKeys;

/// Where RFC 9728 (section 3) puts the protected resource metadata.
const METADATA_PATH: &str = "/.well-known/oauth-protected-resource";

/// How an MCP server over HTTP authenticates each request: an OAuth 2.1 resource server, as
/// MCP's authorization specification has it.
///
/// It names the server's canonical URI (the audience every token must carry, RFC 8707), the
/// [`TokenVerifier`] of its tokens, and the scopes each tool needs: by default a read needs
/// `tools:read` and a write `tools:write`; a tool may have its own
/// ([`with_tool_scopes`](Self::with_tool_scopes)), a call may need more when its arguments say
/// so ([`with_scope_when`](Self::with_scope_when)), and a scope may imply others
/// ([`with_scope_implying`](Self::with_scope_implying)).
///
/// ```no_run
/// # use std::sync::Arc;
/// # use tool_contract::dispatch::Dispatcher;
/// use tool_contract::mcp::McpServer;
/// use tool_contract::mcp::auth::{Issuer, JwtVerifier, ResourceServer};
/// # async fn run(dispatcher: Dispatcher) -> Result<(), Box<dyn std::error::Error>> {
/// let issuer = Issuer::new("https://auth.example.com")?.with_tenant_claim("org_id");
/// let resource = ResourceServer::new("https://mcp.example.com/mcp", JwtVerifier::new([issuer])?)?;
/// let listener = tokio::net::TcpListener::bind("0.0.0.0:443").await?;
/// McpServer::authenticated(Arc::new(dispatcher), resource)?
///     .serve_http(listener)
///     .await?;
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct ResourceServer {
    resource: String,
    /// The path of the MCP endpoint (the resource URI's), and of its metadata.
    endpoint_path: String,
    metadata_path: String,
    verifier: Arc<dyn TokenVerifier>,
    authorization_servers: Vec<String>,
    pub(super) scopes: ScopePolicy,
    resource_name: Option<String>,
    /// Mistakes found while it was configured, reported when a server takes it.
    mistakes: Vec<AuthConfigError>,
}

impl std::fmt::Debug for ResourceServer {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("ResourceServer")
            .field("resource", &self.resource)
            .field("authorization_servers", &self.authorization_servers)
            .finish_non_exhaustive()
    }
}

impl ResourceServer {
    /// The server whose canonical URI is `resource` (for example
    /// `https://mcp.example.com/mcp`: the MCP endpoint is its path), its tokens checked by
    /// `verifier`.
    ///
    /// # Errors
    ///
    /// [`AuthConfigError::Uri`] when `resource` is not an absolute `https` URI (or `http` on a
    /// loopback host) without fragment or query; [`AuthConfigError::NoAuthorizationServer`]
    /// when `verifier` names no authorization server.
    pub fn new(resource: &str, verifier: impl TokenVerifier) -> Result<Self, AuthConfigError> {
        let resource = canonical(resource)?;
        let endpoint_path =
            Url::parse(&resource).map_or_else(|_| "/".to_owned(), |url| url.path().to_owned());
        let metadata_path = format!("{METADATA_PATH}{}", endpoint_path.trim_end_matches('/'));
        let authorization_servers = verifier.authorization_servers();
        if authorization_servers.is_empty() {
            return Err(AuthConfigError::NoAuthorizationServer);
        }
        Ok(ResourceServer {
            resource,
            endpoint_path,
            metadata_path,
            verifier: Arc::new(verifier),
            authorization_servers,
            scopes: ScopePolicy::default(),
            resource_name: None,
            mistakes: Vec::new(),
        })
    }

    /// The scope every read needs (`tools:read` unless set).
    #[must_use]
    pub fn with_read_scope(mut self, scope: impl Into<String>) -> Self {
        self.scopes.read = self.checked(scope.into());
        self
    }

    /// The scope every write needs (`tools:write` unless set).
    #[must_use]
    pub fn with_write_scope(mut self, scope: impl Into<String>) -> Self {
        self.scopes.write = self.checked(scope.into());
        self
    }

    /// The scopes every call of `C` needs, in place of the read or write scope.
    #[must_use]
    pub fn with_tool_scopes<C: ToolContract>(
        mut self,
        scopes: impl IntoIterator<Item = impl Into<String>>,
    ) -> Self {
        let scopes = scopes
            .into_iter()
            .map(|scope| self.checked(scope.into()))
            .collect();
        self.scopes.per_tool.insert(C::NAME.to_owned(), scopes);
        self
    }

    /// A call of `C` needs `scope` besides when `applies` holds of its input: a token
    /// without it is answered `403` with `error="insufficient_scope"` and every scope the
    /// call needs (step-up authorization).
    ///
    /// ```
    /// # use tool_contract::{ToolContract, ToolOutput};
    /// # use tool_contract::mcp::auth::ResourceServer;
    /// #[derive(serde::Deserialize, ToolContract)]
    /// #[tool_contract(output = Drafted, effect = non_idempotent_write, operation = same_arguments, approval = by_caller,
    ///                 reconcile = manual, source_label = "desk", producer_revision = "desk-1")]
    /// /// Drafts a refund.
    /// struct DraftRefund {
    ///     #[tool_contract(maximum = 1000000)]
    ///     amount_cents: u32,
    /// }
    /// #[derive(serde::Serialize, ToolOutput)]
    /// struct Drafted { #[tool_output(max_len = 16)] draft_ref: String }
    ///
    /// # fn configure(resource: ResourceServer) -> ResourceServer {
    /// // Refunds above 40.00 need `refunds:large` as well as the write scope.
    /// resource.with_scope_when("refunds:large", |refund: &DraftRefund| refund.amount_cents > 4_000)
    /// # }
    /// ```
    #[must_use]
    pub fn with_scope_when<C: ToolContract>(
        mut self,
        scope: impl Into<String>,
        applies: impl Fn(&C) -> bool + Send + Sync + 'static,
    ) -> Self {
        let scope = self.checked(scope.into());
        let rule = Arc::new(move |arguments: &[u8], forbidden: &_| {
            C::parse_arguments_with(arguments, forbidden).map_or(true, |input| applies(&input))
        });
        self.scopes
            .when
            .entry(C::NAME.to_owned())
            .or_default()
            .push((scope, rule));
        self
    }

    /// A token granting `broader` holds `narrower` too (MCP asks servers to honour scope
    /// hierarchies), transitively.
    #[must_use]
    pub fn with_scope_implying(
        mut self,
        broader: impl Into<String>,
        narrower: impl IntoIterator<Item = impl Into<String>>,
    ) -> Self {
        let broader = self.checked(broader.into());
        let narrower: BTreeSet<String> = narrower
            .into_iter()
            .map(|scope| self.checked(scope.into()))
            .collect();
        self.scopes
            .implies
            .entry(broader)
            .or_default()
            .extend(narrower);
        self
    }

    /// The name the metadata gives the server (`resource_name`), for people to read.
    #[must_use]
    pub fn with_resource_name(mut self, name: impl Into<String>) -> Self {
        self.resource_name = Some(name.into());
        self
    }

    /// The canonical URI: the audience every token must carry.
    #[must_use]
    pub fn resource(&self) -> &str {
        &self.resource
    }

    /// The URL of the protected resource metadata, as each `401`'s challenge names it: the
    /// well-known path with the MCP endpoint's path after it (RFC 9728, section 3.1).
    #[must_use]
    pub fn metadata_url(&self) -> String {
        let Ok(mut url) = Url::parse(&self.resource) else {
            return format!("{}{METADATA_PATH}", self.resource);
        };
        url.set_path(&self.metadata_path);
        url.to_string()
    }

    /// The path of the MCP endpoint: the resource URI's.
    pub(super) fn endpoint_path(&self) -> &str {
        &self.endpoint_path
    }

    /// Whether `path` is one the metadata is served at: the path-inserted form, and the root
    /// form clients fall back to.
    pub(super) fn is_metadata_path(&self, path: &str) -> bool {
        path == self.metadata_path || path == METADATA_PATH
    }

    /// The protected resource metadata (RFC 9728, section 2) for a server of `registry`.
    pub(super) fn metadata(&self, registry: &Registry) -> Value {
        let mut metadata = json!({
            "resource": self.resource,
            "authorization_servers": self.authorization_servers,
            "scopes_supported": self.scopes.supported(registry),
            "bearer_methods_supported": ["header"],
        });
        if let (Some(name), Value::Object(fields)) = (&self.resource_name, &mut metadata) {
            fields.insert("resource_name".to_owned(), Value::String(name.clone()));
        }
        metadata
    }

    /// The scopes `spec`'s call with `arguments` needs that `verified` lacks: `None` when it
    /// holds them all, else every scope the call needs (MCP asks a challenge to name all of
    /// them at once).
    pub(crate) fn missing_scopes(
        &self,
        verified: &VerifiedToken,
        spec: &ToolSpec,
        arguments: &[u8],
        forbidden: &ForbiddenKeys,
    ) -> Option<Vec<String>> {
        let needed = self.scopes.required(spec, arguments, forbidden);
        (!self.scopes.grants(&verified.scopes, &needed))
            .then(|| needed.into_iter().map(str::to_owned).collect())
    }

    /// Whether `verified` holds what every call of `spec` needs: the tools `tools/list` shows.
    pub(crate) fn shows(&self, verified: &VerifiedToken, spec: &ToolSpec) -> bool {
        self.scopes
            .grants(&verified.scopes, &self.scopes.base(spec))
    }

    pub(super) fn verifier(&self) -> &dyn TokenVerifier {
        &*self.verifier
    }

    /// The first mistake of its configuration for a server of `registry`, if any.
    pub(crate) fn mistake(&self, registry: &Registry) -> Option<AuthConfigError> {
        if let Some(mistake) = self.mistakes.first() {
            return Some(mistake.clone());
        }
        let named = self.scopes.per_tool.keys().chain(self.scopes.when.keys());
        named
            .into_iter()
            .find(|tool| registry.get(tool).is_none())
            .map(|tool| AuthConfigError::UnknownTool(tool.clone()))
    }

    /// `scope`, remembered as a mistake when it is not a scope token.
    fn checked(&mut self, scope: String) -> String {
        if !is_scope_token(&scope) {
            self.mistakes
                .push(AuthConfigError::InvalidScope(scope.clone()));
        }
        scope
    }
}
