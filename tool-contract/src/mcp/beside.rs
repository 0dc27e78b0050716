//! What an application serves beside the contracts' tools on one MCP server: its resources,
//! prompts and completions, answered by its own rmcp `ServerHandler`.

use std::future::Future;
use std::pin::Pin;

use rmcp::model::{
    CompleteRequestParams, CompleteResult, GetPromptRequestParams, GetPromptResponse,
    ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult, PaginatedRequestParams,
    ReadResourceRequestParams, ReadResourceResponse, ServerCapabilities, SubscribeRequestParams,
    UnsubscribeRequestParams,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{ErrorData, ServerHandler};

/// An answer of the application's handler, boxed so that the server holds any handler.
pub(super) type Answer<'a, T> = Pin<Box<dyn Future<Output = Result<T, ErrorData>> + Send + 'a>>;

/// The methods the server hands to the application's handler: rmcp's `ServerHandler`, made
/// object safe.
pub(super) trait Beside: Send + Sync {
    /// The capabilities the handler declares: its resources, prompts, completions.
    fn capabilities(&self) -> ServerCapabilities;

    fn list_resources(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Answer<'_, ListResourcesResult>;

    fn list_resource_templates(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Answer<'_, ListResourceTemplatesResult>;

    fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Answer<'_, ReadResourceResponse>;

    fn subscribe(
        &self,
        request: SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Answer<'_, ()>;

    fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Answer<'_, ()>;

    fn list_prompts(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Answer<'_, ListPromptsResult>;

    fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Answer<'_, GetPromptResponse>;

    fn complete(
        &self,
        request: CompleteRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Answer<'_, CompleteResult>;
}

impl<H: ServerHandler> Beside for H {
    fn capabilities(&self) -> ServerCapabilities {
        self.get_info().capabilities
    }

    fn list_resources(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Answer<'_, ListResourcesResult> {
        Box::pin(ServerHandler::list_resources(self, request, context))
    }

    fn list_resource_templates(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Answer<'_, ListResourceTemplatesResult> {
        Box::pin(ServerHandler::list_resource_templates(
            self, request, context,
        ))
    }

    fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Answer<'_, ReadResourceResponse> {
        Box::pin(ServerHandler::read_resource(self, request, context))
    }

    // The handshake revisions' subscriptions, which rmcp marks legacy; handed on all the same.
    #[allow(deprecated)]
    fn subscribe(
        &self,
        request: SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Answer<'_, ()> {
        Box::pin(ServerHandler::subscribe(self, request, context))
    }

    #[allow(deprecated)]
    fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Answer<'_, ()> {
        Box::pin(ServerHandler::unsubscribe(self, request, context))
    }

    fn list_prompts(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Answer<'_, ListPromptsResult> {
        Box::pin(ServerHandler::list_prompts(self, request, context))
    }

    fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Answer<'_, GetPromptResponse> {
        Box::pin(ServerHandler::get_prompt(self, request, context))
    }

    fn complete(
        &self,
        request: CompleteRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Answer<'_, CompleteResult> {
        Box::pin(ServerHandler::complete(self, request, context))
    }
}

/// Whether `beside` serves `resources/subscribe`, which the handshake revisions declare.
pub(super) fn subscribes(beside: &dyn Beside) -> bool {
    beside
        .capabilities()
        .resources
        .is_some_and(|resources| resources.subscribe == Some(true))
}

/// `ours` with what the application's handler declares besides: its resources, prompts and
/// completions (the tools and tasks stay the server's).
pub(super) fn merged(mut ours: ServerCapabilities, beside: &dyn Beside) -> ServerCapabilities {
    let theirs = beside.capabilities();
    ours.resources = theirs.resources.map(|mut resources| {
        // `resources/subscribe` is the handshake revisions' (2026-07-28 has
        // `subscriptions/listen`): declared in their `initialize` answer alone.
        resources.subscribe = None;
        resources
    });
    ours.prompts = theirs.prompts;
    ours.completions = theirs.completions;
    ours
}
