//! Tool surfaces: the tools and prompts a server serves in place of ntdbg's own, handed to it
//! at construction ([`NtdbgServer::with_surface`]), so the server knows no drop-in profile.
//!
//! A surface's tools are the methods of a host type of its own (an rmcp `#[tool_router]` on
//! that type), which reaches the server's sessions and limits through [`Api`]. [`ToolSurface::hosted`]
//! re-homes those routes on the server: each call builds its host from the server's [`Api`],
//! then runs the surface's method, so sessions, limits, tasks, redaction and the transcript
//! are the server's for every surface alike.
//!
//! [`NtdbgServer::with_surface`]: crate::NtdbgServer::with_surface

use crate::api::Api;
use crate::tool_sets::ToolKinds;
use rmcp::handler::server::prompt::PromptContext;
use rmcp::handler::server::router::prompt::{PromptRoute, PromptRouter};
use rmcp::handler::server::router::tool::{ToolRoute, ToolRouter};
use rmcp::handler::server::tool::ToolCallContext;
use rmcp::model::CallToolRequestParams;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

/// A server that serves surfaces: it hands their tools its [`Api`].
pub trait ServesApi: Send + Sync + 'static {
    /// The server as a surface's tools reach it.
    fn api(&self) -> Api;
}

/// What a surface does when the server starts serving (open a target given on the command
/// line, say); an error stops the server with its message.
type StartHook =
    Arc<dyn Fn(&Api) -> Pin<Box<dyn Future<Output = std::io::Result<()>> + Send>> + Send + Sync>;

/// A set of tools and prompts served by server type `S` in place of ntdbg's own (see the
/// [module](self)).
pub struct ToolSurface<S> {
    pub(crate) tools: ToolRouter<S>,
    pub(crate) prompts: PromptRouter<S>,
    pub(crate) workflow: &'static str,
    pub(crate) kinds: ToolKinds,
    start: Option<StartHook>,
}

impl<S> Clone for ToolSurface<S> {
    fn clone(&self) -> Self {
        ToolSurface {
            tools: self.tools.clone(),
            prompts: self.prompts.clone(),
            workflow: self.workflow,
            kinds: self.kinds,
            start: self.start.clone(),
        }
    }
}

impl<S> std::fmt::Debug for ToolSurface<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolSurface")
            .field("tools", &self.tools)
            .field("prompts", &self.prompts.map.keys().collect::<Vec<_>>())
            .field("workflow", &self.workflow)
            .finish_non_exhaustive()
    }
}

impl<S: ServesApi> ToolSurface<S> {
    /// The routes of `tools` and `prompts`, written as methods of `H`, served by the server:
    /// each call runs on the host `host` builds from the server's [`Api`]. Every tool works
    /// on dumps and live targets alike until [`Self::with_kinds`] says otherwise.
    pub fn hosted<H, F>(host: F, tools: ToolRouter<H>, prompts: PromptRouter<H>) -> Self
    where
        H: Send + Sync + 'static,
        F: Fn(&Api) -> H + Clone + Send + Sync + 'static,
    {
        let mut served = ToolRouter::new();
        for route in tools {
            let (call, host) = (route.call.clone(), host.clone());
            served.add_route(ToolRoute::new_dyn(
                route.attr,
                move |context: ToolCallContext<'_, S>| {
                    let (call, on) = (call.clone(), host(&context.service.api()));
                    let ToolCallContext {
                        request_context,
                        name,
                        arguments,
                        input_responses,
                        request_state,
                        ..
                    } = context;
                    let mut request = CallToolRequestParams::new(name);
                    request.arguments = arguments;
                    request.input_responses = input_responses;
                    request.request_state = request_state;
                    Box::pin(async move {
                        call(ToolCallContext::new(&on, request, request_context)).await
                    })
                },
            ));
        }
        let mut served_prompts = PromptRouter::new();
        for route in prompts.map.into_values() {
            let (get, host) = (route.get.clone(), host.clone());
            served_prompts.add_route(PromptRoute::new_dyn(
                route.attr,
                move |context: PromptContext<'_, S>| {
                    let (get, on) = (get.clone(), host(&context.server.api()));
                    let PromptContext {
                        name,
                        arguments,
                        context,
                        ..
                    } = context;
                    Box::pin(
                        async move { get(PromptContext::new(&on, name, arguments, context)).await },
                    )
                },
            ));
        }
        ToolSurface {
            tools: served,
            prompts: served_prompts,
            workflow: "",
            kinds: ToolKinds::default(),
            start: None,
        }
    }

    /// The workflow sentence that opens the server's instructions.
    pub fn with_workflow(mut self, workflow: &'static str) -> Self {
        self.workflow = workflow;
        self
    }

    /// The tools and prompts only a live target can use (`live_only`) and only a dump file
    /// can use (`dump_only`), which `ntdbg mcp --tools` leaves out.
    pub fn with_kinds(
        mut self,
        live_only: &'static [&'static str],
        dump_only: &'static [&'static str],
    ) -> Self {
        self.kinds = ToolKinds {
            live_only,
            dump_only,
        };
        self
    }

    /// Runs `start` when the server starts serving ([`crate::run`]); its error stops the
    /// server.
    pub fn with_start<F, Fut>(mut self, start: F) -> Self
    where
        F: Fn(&Api) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = std::io::Result<()>> + Send + 'static,
    {
        self.start = Some(Arc::new(move |api| Box::pin(start(api))));
        self
    }

    /// Runs the start hook, if there is one.
    pub(crate) async fn start(&self, api: &Api) -> std::io::Result<()> {
        match &self.start {
            Some(start) => start(api).await,
            None => Ok(()),
        }
    }
}
