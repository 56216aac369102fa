//! `policy-check mcp`: the guarded `bash` tool and the text editor tool as an MCP server over
//! stdio, on the official Rust SDK (`rmcp`); over Streamable HTTP with `--http` ([`http`]).
//!
//! - **The same guard as `serve`** ([`super::serve::tool_guard`]): the policy, the sandbox
//!   launcher, redaction and truncation, one persistent bash session for every call. A
//!   refusal is a `CallToolResult` with `isError: true` whose text names the rule; a command
//!   that fails is `isError` with its exit status, as in serve.
//! - **Protocol era**: the handshake era (`initialize`, up to `2025-11-25`), the one that has
//!   `notifications/cancelled`, `roots/list` and `elicitation/create`. A client that probes
//!   `server/discover` at `2026-07-28` is told the versions served and falls back to
//!   `initialize` (what the official clients do).
//! - **Cancellation** (`notifications/cancelled`, or a call whose future is dropped) kills
//!   the session's process group, and with it the PID namespace of everything the call
//!   started; the next call starts a new session. End of input (the client closing stdin, as
//!   the MCP shutdown sequence does) and a closed stdout (the client gone) kill everything at
//!   once, then the server exits.
//! - **Progress**: a call that carries a `progressToken` gets `notifications/progress` every
//!   [`TICK`] while its command runs (seconds elapsed, of the timeout).
//! - **`ask` verdicts** go to the user through `elicitation/create` when the client declared
//!   the elicitation capability (`--ask elicit`, the default); otherwise they are refused,
//!   and the result says that no one can approve them here.
//! - **Roots** (`roots/list`, when the client has the capability) narrow the workspace: a
//!   root inside it becomes a workspace root, a root around it leaves it whole, a root
//!   elsewhere is ignored; when no root meets the workspace, every call is refused. They can
//!   never widen it. `notifications/roots/list_changed` reads them again.
//! - **A hostile client**: a line that is not JSON gets a `-32700` parse error, a line that
//!   is JSON but not a JSON-RPC message (or a batch) `-32600`, a line longer than
//!   [`MAX_MESSAGE`] bytes is dropped with a `-32600` error (id null), and a request before
//!   `initialize` gets `-32600` saying to initialize first; each also goes to stderr. None
//!   ends the server.

/// `eprintln!` that cannot panic: stderr may be closed (a host gone closes every pipe),
/// and a panic would end the thread that was about to kill the sessions or exit.
macro_rules! say {
    ($($t:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($t)*);
    }};
}

pub mod http;

use std::collections::HashSet;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc as std_mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::SinkExt;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ClientJsonRpcMessage, ClientResult,
    ContentBlock, ElicitRequest, ElicitRequestParams, ElicitationAction, ElicitationSchema,
    Implementation, ListToolsResult, PaginatedRequestParams, ProgressNotificationParam,
    ProtocolVersion, RequestId, ServerCapabilities, ServerConfig, ServerJsonRpcMessage,
    ServerRequest, Tool, ToolAnnotations,
};
use rmcp::service::{NotificationContext, OriginatingRequestId, RequestContext};
use rmcp::{ErrorData, Peer, RoleServer, ServerHandler, ServiceExt};
use serde_json::{json, Value};
use shellgate::middleware::{contain, ApprovalRequest, BashSession, Guard, ToolSet, ToolUse};
use shellgate::Policy;

use crate::error::CliError;
use crate::serve::{SessionArgs, ToolArgs};

/// The longest message read (one line); a longer one is dropped with an error.
pub const MAX_MESSAGE: usize = 16 << 20;

/// How often a running command reports progress.
const TICK: Duration = Duration::from_secs(2);

/// How long a user may take to answer an approval before it counts as declined.
const ELICIT_TIMEOUT: Duration = Duration::from_secs(300);

/// The text editor tool's name (the same as the Messages API's client tool).
const EDITOR: &str = "str_replace_based_edit_tool";

/// Who decides commands the policy marks `ask`.
#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum McpAsk {
    /// Ask the user through MCP elicitation when the client supports it; refuse otherwise.
    Elicit,
    /// Refuse them.
    Deny,
}

/// What `policy-check mcp` runs with (over HTTP, each MCP session gets a copy).
#[derive(Clone)]
pub struct McpOptions {
    /// The policy.
    pub policy: Policy,
    /// The workspace root and the session's first working directory (absolute).
    pub cwd: PathBuf,
    /// Per command.
    pub timeout: Duration,
    /// The session options shared with serve.
    pub session: SessionArgs,
    /// `--ask`.
    pub ask: McpAsk,
    /// `--audit FILE`.
    pub audit: Option<PathBuf>,
}

/// `policy-check mcp`: serve until the client closes stdin (exit 0) or stdout (exit 2).
pub fn mcp(options: McpOptions) -> Result<u8, CliError> {
    crate::serve::handle_signals("mcp")?;
    crate::serve::watch_stdout("mcp");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the async runtime: {e}"))?;
    let worker = Worker::start(options, runtime.handle().clone())?;
    let (to_rmcp, from_client) = futures::channel::mpsc::channel::<ClientJsonRpcMessage>(16);
    let (to_client, from_rmcp) = futures::channel::mpsc::channel::<ServerJsonRpcMessage>(16);
    let (lines, writer) = std_mpsc::channel::<Vec<u8>>();
    spawn("shellgate-mcp-out", move || write_lines(&writer));
    {
        let lines = lines.clone();
        spawn("shellgate-mcp-encode", move || {
            for message in futures::executor::block_on_stream(from_rmcp) {
                match serde_json::to_vec(&message) {
                    Ok(text) => {
                        if lines.send(text).is_err() {
                            break;
                        }
                    }
                    Err(e) => say!("policy-check mcp: cannot encode a message: {e}"),
                }
            }
        });
    }
    spawn("shellgate-mcp-in", move || read_messages(to_rmcp, &lines));
    let server = Server::new(worker);
    let sink = to_client.sink_map_err(|e| std::io::Error::other(e.to_string()));
    let code = runtime.block_on(async move {
        match server.serve((sink, from_client)).await {
            Ok(running) => {
                let _ = running.waiting().await;
                0
            }
            Err(e) => {
                say!("policy-check mcp: the session ended before it started: {e}");
                2
            }
        }
    });
    // Everything the session started ends here, whatever was running.
    contain::end_all_sessions();
    Ok(code)
}

fn spawn(name: &str, f: impl FnOnce() + Send + 'static) {
    if let Err(e) = std::thread::Builder::new().name(name.into()).spawn(f) {
        say!("policy-check mcp: cannot start a thread: {e}");
        contain::end_all_sessions();
        std::process::exit(2);
    }
}

/// Write each message as one line. A closed stdout means the client is gone: every process
/// of the session is killed at once and the server exits.
fn write_lines(lines: &std_mpsc::Receiver<Vec<u8>>) {
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    for mut line in lines {
        line.push(b'\n');
        if let Err(e) = out.write_all(&line).and_then(|()| out.flush()) {
            contain::stop_all_sessions("the client closed stdout");
            contain::end_all_sessions();
            say!(
                "policy-check mcp: stdout: {e}: the client is gone; the bash session and every process it started were killed"
            );
            std::process::exit(2);
        }
    }
}

/// A JSON-RPC error with a null id, for a line whose id cannot be known.
fn error_line(code: i32, message: &str, id: Option<&Value>) -> Vec<u8> {
    let message = json!({
        "jsonrpc": "2.0",
        "id": id.cloned().unwrap_or(Value::Null),
        "error": {"code": code, "message": message},
    });
    message.to_string().into_bytes()
}

/// Read JSON-RPC messages from stdin, one per line, and hand the valid ones to rmcp;
/// answer the others here (see the module docs). At end of input, kill whatever runs.
fn read_messages(
    mut to_rmcp: futures::channel::mpsc::Sender<ClientJsonRpcMessage>,
    errors: &std_mpsc::Sender<Vec<u8>>,
) {
    let stdin = std::io::stdin();
    let mut input = stdin.lock();
    let mut line = Vec::new();
    let mut initialized = false;
    let mut lineno = 0u64;
    let reply = |lineno: u64, code: i32, message: String, id: Option<&Value>| {
        say!("policy-check mcp: stdin:{lineno}: {message}");
        let _ = errors.send(error_line(code, &message, id));
    };
    loop {
        lineno += 1;
        match crate::read_line_capped(&mut input, &mut line, MAX_MESSAGE) {
            Ok(crate::LineRead::Eof) => break,
            Ok(crate::LineRead::TooLong) => {
                reply(
                    lineno,
                    -32600,
                    format!("message longer than {MAX_MESSAGE} bytes: dropped"),
                    None,
                );
                continue;
            }
            Ok(crate::LineRead::Line) => {}
            Err(e) => {
                say!("policy-check mcp: stdin: {e}");
                break;
            }
        }
        let text = line.strip_suffix(b"\r").unwrap_or(&line);
        if text.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let value: Value = match serde_json::from_slice(text) {
            Ok(v) => v,
            Err(e) => {
                reply(lineno, -32700, format!("parse error: {e}"), None);
                continue;
            }
        };
        let id = value.get("id").filter(|i| i.is_string() || i.is_number());
        if value.is_array() {
            reply(
                lineno,
                -32600,
                "invalid request: JSON-RPC batches are not supported".into(),
                None,
            );
            continue;
        }
        let method = value
            .get("method")
            .and_then(Value::as_str)
            .map(str::to_string);
        let message: ClientJsonRpcMessage = match serde_json::from_value(value.clone()) {
            Ok(m) => m,
            Err(e) => {
                let what = method.as_deref().unwrap_or("(no method)");
                reply(
                    lineno,
                    -32600,
                    format!("invalid request: not a JSON-RPC message of MCP ({what}): {e}"),
                    id,
                );
                continue;
            }
        };
        // Before `initialize`, rmcp would end the session on a notification and answer a
        // request with a metadata error: say plainly what is wrong instead.
        if !initialized {
            match (method.as_deref(), id) {
                (Some("initialize"), _) => initialized = true,
                (Some("ping" | "server/discover"), _) | (None, _) => {}
                (Some(m), Some(_)) => {
                    reply(
                        lineno,
                        -32600,
                        format!("invalid request: {m} before initialize: send initialize first"),
                        id,
                    );
                    continue;
                }
                (Some(m), None) => {
                    say!(
                        "policy-check mcp: stdin:{lineno}: ignoring the notification {m} sent before initialize"
                    );
                    continue;
                }
            }
        }
        if futures::executor::block_on(to_rmcp.send(message)).is_err() {
            break;
        }
    }
    // End of input: the client is shutting down. Whatever runs is killed now (rmcp waits for
    // in-flight calls before it stops).
    contain::stop_all_sessions("end of input: the client closed stdin");
}

/// The MCP side of one MCP session: tool listing and calls, handed to its [`Worker`].
/// Dropped when the session ends (end of input; over HTTP a `DELETE`, the idle timeout or
/// the server stopping): then everything its calls started is killed.
pub(super) struct Server {
    worker: Arc<Worker>,
    /// Held while the session lives (`--http` counts sessions with it, and finds them by
    /// their `Mcp-Session-Id`).
    slot: Option<http::Slot>,
}

impl Server {
    fn new(worker: Arc<Worker>) -> Server {
        Server { worker, slot: None }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.worker.shutdown("the MCP session ended");
    }
}

impl ServerHandler for Server {
    fn get_info(&self) -> ServerConfig {
        let instructions = format!(
            "A bash shell and a text editor guarded by the shellgate policy {:?}: every command \
             and every path is checked before it runs; refused calls say which rule refused them \
             and what is allowed instead. Workspace: {}.",
            self.worker.policy_name,
            self.worker.root.display()
        );
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_protocol_version(ProtocolVersion::LATEST_WITH_INITIALIZE)
            .with_server_info(Implementation::new("shellgate", env!("CARGO_PKG_VERSION")))
            .with_instructions(instructions)
    }

    fn supported_protocol_versions(&self) -> std::borrow::Cow<'static, [ProtocolVersion]> {
        std::borrow::Cow::Borrowed(ProtocolVersion::known_up_to(
            &ProtocolVersion::LATEST_WITH_INITIALIZE,
        ))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(tools(&self.worker)))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        tools(&self.worker).into_iter().find(|t| t.name == name)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let name = request.name.to_string();
        if name != "bash" && name != EDITOR {
            return Err(ErrorData::invalid_params(
                format!("unknown tool {name:?}: this server has \"bash\" and \"{EDITOR}\""),
                None,
            ));
        }
        let input = Value::Object(request.arguments.unwrap_or_default());
        if let Some(slot) = &self.slot {
            slot.bind(&context.extensions, &self.worker);
        }
        let workspace = self.worker.workspace_for(&context.peer).await;
        let (seq, reply) = self.worker.submit(
            name,
            input,
            workspace,
            context.peer.clone(),
            context.id.clone(),
        )?;
        let mut in_flight = InFlight {
            seq,
            worker: self.worker.clone(),
            done: false,
        };
        let token = context.meta.get_progress_token();
        let started = Instant::now();
        let mut reply = std::pin::pin!(reply);
        let answer = loop {
            tokio::select! {
                answer = &mut reply => break answer,
                () = context.ct.cancelled() => {
                    // The client gave up on the call: end what it started, then answer
                    // (rmcp does not send a response to a cancelled request).
                    self.worker.cancel(seq);
                    in_flight.done = true;
                    return Ok(text_result("cancelled: the command and every process it started were killed", true).into());
                }
                () = tokio::time::sleep(TICK), if token.is_some() => {
                    if let Some(token) = token.clone() {
                        let secs = started.elapsed().as_secs_f64().floor();
                        let mut p = ProgressNotificationParam::new(token, secs);
                        p.total = Some(self.worker.timeout.as_secs_f64());
                        p.message = Some(format!("running for {secs} s"));
                        let _ = context.peer.notify_progress(p).await;
                    }
                }
            }
        };
        in_flight.done = true;
        let (content, is_error) = answer.unwrap_or_else(|_| {
            (
                "the call was dropped: the server is stopping".to_string(),
                true,
            )
        });
        Ok(text_result(content, is_error).into())
    }

    async fn on_custom_request(
        &self,
        request: rmcp::model::CustomRequest,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::CustomResult, ErrorData> {
        Err(ErrorData::new(
            rmcp::model::ErrorCode::METHOD_NOT_FOUND,
            format!(
                "method not found: {}: this server has tools/list and tools/call",
                request.method
            ),
            None,
        ))
    }

    async fn on_roots_list_changed(&self, _context: NotificationContext<RoleServer>) {
        if let Ok(mut roots) = self.worker.roots.lock() {
            *roots = None;
        }
    }
}

fn text_result(content: impl Into<String>, is_error: bool) -> CallToolResult {
    let content = vec![ContentBlock::text(content.into())];
    if is_error {
        CallToolResult::error(content)
    } else {
        CallToolResult::success(content)
    }
}

/// Cancels its call when dropped before the answer came (rmcp, or a transport, dropping the
/// future): what the call started never outlives it.
struct InFlight {
    seq: u64,
    worker: Arc<Worker>,
    done: bool,
}

impl Drop for InFlight {
    fn drop(&mut self) {
        if !self.done {
            self.worker.cancel(self.seq);
        }
    }
}

fn schema(value: Value) -> Arc<serde_json::Map<String, Value>> {
    match value {
        Value::Object(map) => Arc::new(map),
        _ => Arc::new(serde_json::Map::new()),
    }
}

/// The two tools, with schemas and descriptions a model can use.
fn tools(worker: &Worker) -> Vec<Tool> {
    let policy = &worker.policy_name;
    let root = worker.root.display();
    let timeout = worker.timeout.as_secs_f64();
    let bash = Tool::new(
        "bash",
        format!(
            "Run a command in a persistent bash session (working directory, variables and \
             files persist between calls; the session starts in {root}). Each command is checked \
             against the shellgate policy {policy:?} before it runs: a refused command is not run, \
             and the result names the rule and what is allowed instead. stdout and stderr are \
             interleaved; output is redacted (credentials) and truncated (head and tail kept). A \
             nonzero exit status is an error result ending in `exit status N`. Commands time out \
             after {timeout} s (the session is then restarted). Commands get no stdin and no \
             terminal. Pass `restart: true` to start a fresh session."
        ),
        schema(json!({
            "type": "object",
            "properties": {
                "command": {
                    "type": "string",
                    "description": "The bash command to run (one or more lines)."
                },
                "restart": {
                    "type": "boolean",
                    "description": "true to kill the session and start a new one (then omit command)."
                }
            },
            "additionalProperties": false
        })),
    )
    .with_title("Guarded bash")
    .with_annotations(
        ToolAnnotations::new()
            .read_only(false)
            .destructive(true)
            .open_world(false),
    );
    let editor = Tool::new(
        EDITOR,
        format!(
            "View, create and edit files, checked against the shellgate policy {policy:?} (the \
             same path rules as the shell: paths outside the workspace {root} are refused unless \
             the policy allows them). Relative paths are resolved against the shell's working \
             directory. `view` shows a file with line numbers (or lists a directory); `create` \
             writes a whole file; `str_replace` replaces text that occurs exactly once; `insert` \
             adds text after a line (0: at the top)."
        ),
        schema(json!({
            "type": "object",
            "properties": {
                "command": {
                    "type": "string",
                    "enum": ["view", "create", "str_replace", "insert"],
                    "description": "What to do."
                },
                "path": {"type": "string", "description": "The file or directory."},
                "file_text": {"type": "string", "description": "create: the whole content of the file."},
                "old_str": {"type": "string", "description": "str_replace: the text to replace; it must occur exactly once."},
                "new_str": {"type": "string", "description": "str_replace: the replacement (may be empty)."},
                "insert_line": {"type": "integer", "minimum": 0, "description": "insert: the line after which the text goes (0: at the top)."},
                "insert_text": {"type": "string", "description": "insert: the text to insert."},
                "view_range": {
                    "type": "array",
                    "items": {"type": "integer"},
                    "minItems": 2,
                    "maxItems": 2,
                    "description": "view: [first, last] line, 1-based; last -1 for the end of the file."
                }
            },
            "required": ["command", "path"],
            "additionalProperties": false
        })),
    )
    .with_title("Guarded text editor")
    .with_annotations(
        ToolAnnotations::new()
            .read_only(false)
            .destructive(true)
            .open_world(false),
    );
    vec![bash, editor]
}

/// The workspace the next call runs with: the server's own, or narrowed by the client's roots.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Workspace {
    /// The server's workspace (no roots, or roots around it).
    Whole,
    /// These roots inside it.
    Narrowed(Vec<PathBuf>),
    /// The client's roots, none of which meets the workspace.
    Disjoint(Vec<String>),
}

/// Narrow `root` by the client's root URIs (see the module docs).
fn narrow(root: &Path, uris: &[String]) -> Workspace {
    if uris.is_empty() {
        return Workspace::Whole;
    }
    let mut inside = Vec::new();
    for uri in uris {
        let Some(path) = file_uri_path(uri) else {
            continue;
        };
        // Lexically, then for real: a root reached through a symlink counts where it leads.
        let path = shellgate::Context::new(&path).cwd;
        let real = std::fs::canonicalize(&path).unwrap_or(path);
        if root.starts_with(&real) {
            return Workspace::Whole;
        }
        if real.starts_with(root) && real.is_dir() {
            inside.push(real);
        }
    }
    if inside.is_empty() {
        Workspace::Disjoint(uris.to_vec())
    } else {
        inside.sort();
        inside.dedup();
        Workspace::Narrowed(inside)
    }
}

/// The path of a `file://` URI (percent-decoded), `None` for any other URI.
fn file_uri_path(uri: &str) -> Option<PathBuf> {
    let rest = uri.strip_prefix("file://")?;
    // `file:///p` or `file://localhost/p`; another host is not this machine.
    let rest = rest.strip_prefix("localhost").unwrap_or(rest);
    if !rest.starts_with('/') {
        return None;
    }
    let bytes = rest.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = std::str::from_utf8(bytes.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    let text = String::from_utf8(out).ok()?;
    if text.contains('\0') {
        return None;
    }
    Some(PathBuf::from(text))
}

/// One call for the worker thread.
struct Job {
    seq: u64,
    name: String,
    input: Value,
    workspace: Workspace,
    peer: Peer<RoleServer>,
    /// The `tools/call` request's id: a request to the client made for it (elicitation)
    /// rides that call's stream over HTTP.
    request: RequestId,
    reply: tokio::sync::oneshot::Sender<(String, bool)>,
}

/// The thread that owns the guard (and its bash session), one call at a time.
struct Worker {
    jobs: Mutex<Option<std_mpsc::Sender<Job>>>,
    next: Mutex<u64>,
    /// The call running now, and calls cancelled before they started.
    state: Mutex<(Option<u64>, HashSet<u64>)>,
    /// The process group of the bash session while a call runs: what a cancellation kills
    /// (this session's only, whatever other sessions the server has).
    pgid: Mutex<Option<u32>>,
    /// The MCP session ended: calls still queued are not started.
    closed: AtomicBool,
    /// The client's root URIs, once read (`None`: to be read again).
    roots: Mutex<Option<Vec<String>>>,
    policy_name: String,
    root: PathBuf,
    timeout: Duration,
}

impl Worker {
    fn start(options: McpOptions, handle: tokio::runtime::Handle) -> Result<Arc<Worker>, CliError> {
        let root = std::fs::canonicalize(&options.cwd)
            .map_err(|e| format!("{}: {e}", options.cwd.display()))?;
        if !root.is_dir() {
            return Err(format!("{}: not a directory", root.display()).into());
        }
        let (tx, rx) = std_mpsc::channel::<Job>();
        let worker = Arc::new(Worker {
            jobs: Mutex::new(Some(tx)),
            next: Mutex::new(0),
            state: Mutex::new((None, HashSet::new())),
            pgid: Mutex::new(None),
            closed: AtomicBool::new(false),
            roots: Mutex::new(None),
            policy_name: options.policy.name.clone(),
            root: root.clone(),
            timeout: options.timeout,
        });
        let shared = worker.clone();
        spawn("shellgate-mcp-guard", move || {
            let mut run = Running {
                options,
                root,
                handle,
                guard: None,
                built_for: None,
                worker: shared.clone(),
                call_id: Arc::new(Mutex::new(None)),
            };
            for job in rx {
                if shared.closed.load(Ordering::SeqCst) {
                    let _ = job.reply.send(("the MCP session ended".into(), true));
                    continue;
                }
                {
                    let mut state = lock(&shared.state);
                    if state.1.remove(&job.seq) {
                        continue;
                    }
                    state.0 = Some(job.seq);
                }
                let answer = run.call(&job);
                {
                    let mut state = lock(&shared.state);
                    state.0 = None;
                    *lock(&shared.pgid) = None;
                }
                let _ = job.reply.send(answer);
            }
            // Dropping the guard kills the session's process group.
            drop(run);
        });
        Ok(worker)
    }

    fn submit(
        &self,
        name: String,
        input: Value,
        workspace: Workspace,
        peer: Peer<RoleServer>,
        request: RequestId,
    ) -> Result<(u64, tokio::sync::oneshot::Receiver<(String, bool)>), ErrorData> {
        let seq = {
            let mut n = lock(&self.next);
            *n += 1;
            *n
        };
        let (reply, rx) = tokio::sync::oneshot::channel();
        let job = Job {
            seq,
            name,
            input,
            workspace,
            peer,
            request,
            reply,
        };
        let sent = lock(&self.jobs).as_ref().map(|tx| tx.send(job).is_ok());
        if sent != Some(true) {
            return Err(ErrorData::internal_error(
                "the guard is not running: the server is stopping",
                None,
            ));
        }
        Ok((seq, rx))
    }

    /// End call `seq`: kill this session's bash if the call is running, else never start it.
    fn cancel(&self, seq: u64) {
        let mut state = lock(&self.state);
        if state.0 == Some(seq) {
            match *lock(&self.pgid) {
                Some(pgid) => contain::stop_session(pgid, "cancelled by the client"),
                // Still building its session: the call sees the mark before it runs.
                None => {
                    state.1.insert(seq);
                }
            }
        } else {
            state.1.insert(seq);
        }
    }

    /// The MCP session ended: no call starts any more, the running one is killed, and the
    /// worker thread ends (dropping the guard, which kills the session's process group).
    fn shutdown(&self, cause: &'static str) {
        self.closed.store(true, Ordering::SeqCst);
        drop(lock(&self.jobs).take());
        let state = lock(&self.state);
        if state.0.is_some() {
            if let Some(pgid) = *lock(&self.pgid) {
                contain::stop_session(pgid, cause);
            }
        }
    }

    /// The workspace for the next call: the client's roots (read once, and again after
    /// `notifications/roots/list_changed`) narrowing the server's.
    #[allow(deprecated)] // roots: deprecated by SEP-2577 (2026-07-28), current in the era served
    async fn workspace_for(&self, peer: &Peer<RoleServer>) -> Workspace {
        let has_roots = peer
            .peer_info()
            .is_some_and(|info| info.capabilities.roots.is_some());
        if !has_roots {
            return Workspace::Whole;
        }
        let known = lock(&self.roots).clone();
        let uris = match known {
            Some(uris) => uris,
            None => {
                #[allow(deprecated)]
                let listed = tokio::time::timeout(Duration::from_secs(10), peer.list_roots()).await;
                let uris: Vec<String> = match listed {
                    Ok(Ok(result)) => result.roots.into_iter().map(|r| r.uri).collect(),
                    Ok(Err(e)) => {
                        say!("policy-check mcp: roots/list failed: {e}; using the whole workspace");
                        Vec::new()
                    }
                    Err(_) => {
                        say!("policy-check mcp: roots/list got no answer in 10 s; using the whole workspace");
                        Vec::new()
                    }
                };
                *lock(&self.roots) = Some(uris.clone());
                uris
            }
        };
        narrow(&self.root, &uris)
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The worker thread's state: the guard, built on the first call (when the client's
/// capabilities and roots are known) and again when the workspace changes.
struct Running {
    options: McpOptions,
    root: PathBuf,
    handle: tokio::runtime::Handle,
    guard: Option<Guard<BashSession>>,
    built_for: Option<(Workspace, bool)>,
    worker: Arc<Worker>,
    /// The request id of the call running now, for the approver.
    call_id: Arc<Mutex<Option<RequestId>>>,
}

impl Running {
    fn call(&mut self, job: &Job) -> (String, bool) {
        if let Workspace::Disjoint(uris) = &job.workspace {
            return (
                format!(
                    "Error: refused: none of this client's roots ({}) is inside the workspace {} \
                     that the server was started with, so nothing may be used. Roots can narrow \
                     the workspace, never widen it.",
                    uris.join(", "),
                    self.root.display()
                ),
                true,
            );
        }
        let elicit = self.options.ask == McpAsk::Elicit
            && job
                .peer
                .peer_info()
                .is_some_and(|i| i.capabilities.elicitation.is_some());
        let key = (job.workspace.clone(), elicit);
        if self.built_for.as_ref() != Some(&key) || self.guard.is_none() {
            self.guard = None; // the old session ends first
            match self.build(&job.workspace, elicit, &job.peer) {
                Ok(g) => {
                    self.guard = Some(g);
                    self.built_for = Some(key);
                }
                Err(e) => return (format!("Error: cannot start the bash session: {e}"), true),
            }
        }
        let Some(guard) = self.guard.as_mut() else {
            return ("Error: the bash session is not running".into(), true);
        };
        // The session's process group, for a cancellation to kill: started now if it died
        // (a failed restart), so that the call runs in the group a cancellation sees.
        if guard.executor().pid().is_none() {
            let _ = shellgate::middleware::Executor::restart(guard.executor_mut());
        }
        {
            let mut state = lock(&self.worker.state);
            if self.worker.closed.load(Ordering::SeqCst) {
                return ("the MCP session ended".into(), true);
            }
            if state.1.remove(&job.seq) {
                return ("cancelled before it ran".into(), true);
            }
            *lock(&self.worker.pgid) = guard.executor().pid();
        }
        *lock(&self.call_id) = Some(job.request.clone());
        let tool_use = ToolUse {
            kind: "tool_use".into(),
            id: format!("mcp-{}", job.seq),
            name: job.name.clone(),
            input: job.input.clone(),
        };
        let result = guard.handle(&tool_use).result.into_tool_result();
        (result.content, result.is_error)
    }

    fn build(
        &mut self,
        workspace: &Workspace,
        elicit: bool,
        peer: &Peer<RoleServer>,
    ) -> Result<Guard<BashSession>, CliError> {
        let (cwd, roots) = match workspace {
            Workspace::Narrowed(roots) => (roots[0].clone(), roots.clone()),
            _ => (self.root.clone(), Vec::new()),
        };
        self.options.session.workspace = roots;
        let tools = ToolArgs {
            tools: ToolSet {
                bash: true,
                text_editor: true,
                code_execution: false,
            },
            max_calls_per_minute: None,
            outputs: None,
            max_output_file_bytes: 32 << 20,
        };
        let mut guard = crate::serve::tool_guard(
            &self.options.policy,
            &cwd,
            self.options.timeout,
            &self.options.session,
            &tools,
        )?;
        if let Some(path) = &self.options.audit {
            let log = shellgate::middleware::AuditLog::open(path).map_err(|e| e.to_string())?;
            guard = guard.with_audit(log);
        }
        if elicit {
            let peer = peer.clone();
            let handle = self.handle.clone();
            let call = self.call_id.clone();
            guard = guard.with_approver(move |request: &ApprovalRequest<'_>| {
                let call = lock(&call).clone();
                ask_user(&handle, &peer, call, request)
            });
        }
        Ok(guard)
    }
}

/// Ask the user, through the client's elicitation, whether an `ask` command may run.
fn ask_user(
    handle: &tokio::runtime::Handle,
    peer: &Peer<RoleServer>,
    call: Option<RequestId>,
    request: &ApprovalRequest<'_>,
) -> bool {
    let reasons: Vec<String> = request
        .decision
        .reasons
        .iter()
        .map(|r| format!("[{}] {}", r.code, r.message))
        .collect();
    let message = format!(
        "Allow this command to run in {}?\n\n{}\n\nThe policy asks because: {}",
        request.cwd.display(),
        request.command,
        reasons.join("; ")
    );
    let schema = ElicitationSchema::builder()
        .required_bool("approve")
        .build_unchecked();
    let params = ElicitRequestParams::FormElicitationParams {
        meta: None,
        message,
        requested_schema: schema,
    };
    // `elicitation/create` sent as a plain request: rmcp's `create_elicitation` helper is
    // behind its `elicitation` feature, which pulls `url` and its ~45 crates for a URL mode
    // this server never uses.
    let mut request = ServerRequest::ElicitRequest(ElicitRequest::new(params));
    // Over HTTP the question rides the stream of the call that asks it (the client may
    // have no standalone GET stream open); rmcp sets this only inside the handler's task.
    if let Some(id) = call {
        use rmcp::model::GetExtensions;
        request.extensions_mut().insert(OriginatingRequestId(id));
    }
    let answer = handle
        .block_on(async { tokio::time::timeout(ELICIT_TIMEOUT, peer.send_request(request)).await });
    match answer {
        Ok(Ok(ClientResult::ElicitResult(result))) => {
            result.action == ElicitationAction::Accept
                && result
                    .content
                    .as_ref()
                    .and_then(|c| c.get("approve"))
                    .and_then(Value::as_bool)
                    == Some(true)
        }
        Ok(Ok(_)) => {
            say!("policy-check mcp: the client answered the elicitation with another result; the command is refused");
            false
        }
        Ok(Err(e)) => {
            say!("policy-check mcp: elicitation failed: {e}; the command is refused");
            false
        }
        Err(_) => {
            say!("policy-check mcp: no answer to the approval in {ELICIT_TIMEOUT:?}; refused");
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_uris() {
        assert_eq!(file_uri_path("file:///a/b%20c"), Some("/a/b c".into()));
        assert_eq!(file_uri_path("file://localhost/x"), Some("/x".into()));
        assert_eq!(file_uri_path("file://host/x"), None);
        assert_eq!(file_uri_path("https://x/y"), None);
        assert_eq!(file_uri_path("file:///a%00b"), None);
        assert_eq!(file_uri_path("file:///a%zz"), None);
        assert_eq!(file_uri_path("file:///a%2"), None);
    }

    #[test]
    fn roots_narrow_never_widen() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::create_dir(root.join("sub")).unwrap();
        let uri = |p: &Path| format!("file://{}", p.display());
        assert_eq!(narrow(&root, &[]), Workspace::Whole);
        assert_eq!(narrow(&root, &[uri(Path::new("/"))]), Workspace::Whole);
        assert_eq!(
            narrow(&root, &[uri(&root.join("sub"))]),
            Workspace::Narrowed(vec![root.join("sub")])
        );
        assert!(matches!(
            narrow(&root, &[uri(Path::new("/etc"))]),
            Workspace::Disjoint(_)
        ));
        // `..` cannot climb out of the workspace.
        assert!(matches!(
            narrow(&root, &[format!("{}/sub/../../etc", uri(&root))]),
            Workspace::Disjoint(_)
        ));
    }
}
