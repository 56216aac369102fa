//! `policy-check mcp --http ADDR`: the same server over MCP's Streamable HTTP transport, at
//! `http://ADDR/mcp`, on rmcp's own transport (`StreamableHttpService`) served by hyper.
//!
//! - **One MCP session per `Mcp-Session-Id`**, each with its own [`Server`]: its own guard,
//!   bash session, roots and elicitation. A session ends on `DELETE`, after [`idle`] without
//!   a message, or when the server stops; then everything its calls started is killed (the
//!   [`Server`] is dropped). At most [`MAX_SESSIONS`] at once.
//! - **Who may connect.** The address must be loopback unless `--allow-remote`, which also
//!   needs `--token-file`. With a token, every request must carry `Authorization: Bearer
//!   TOKEN` (401 otherwise). The `Host` header must name a loopback host (rmcp's check
//!   against DNS rebinding; off with `--allow-remote`, where the token is the gate). A
//!   request with an `Origin` header is refused (403) unless that origin was given with
//!   `--allow-origin`: a web page the user visits cannot drive the shell.
//! - **A hostile client** gets a status and a named error, never a crash: a body larger than
//!   [`MAX_MESSAGE`] is 413, a body that is not JSON a `-32700` error, a batch or JSON that is
//!   no MCP message `-32600` (all 400); a request without a session id other than
//!   `initialize` is 400, an unknown or ended session id 404, an unsupported
//!   `MCP-Protocol-Version` 400 (rmcp). Slow clients: headers within [`HEADER_TIMEOUT`], a
//!   body within [`BODY_TIMEOUT`]; at most [`MAX_CONNECTIONS`] connections.

use std::collections::HashMap;
use std::convert::Infallible;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use rmcp::model::ClientJsonRpcMessage;
use rmcp::transport::streamable_http_server::session::local::{LocalSessionManager, SessionConfig};
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use serde_json::Value;
use sha2::{Digest, Sha256};
use shellgate::middleware::contain;

use super::{error_line, McpOptions, Server, Worker, MAX_MESSAGE};
use crate::error::CliError;

/// The path the transport answers at.
pub const PATH: &str = "/mcp";

/// The header naming the MCP session.
const SESSION_ID: &str = "mcp-session-id";

/// MCP sessions alive at once (each has its own bash session).
pub const MAX_SESSIONS: usize = 16;

/// Connections open at once; more wait in the kernel's backlog.
pub const MAX_CONNECTIONS: usize = 64;

/// Bodies being read at once (each up to [`MAX_MESSAGE`] bytes in memory).
const MAX_BODIES: usize = 4;

/// How long a client may take to send a request's headers.
pub const HEADER_TIMEOUT: Duration = Duration::from_secs(10);

/// How long a client may take to send a request's body.
pub const BODY_TIMEOUT: Duration = Duration::from_secs(30);

/// The shortest token `--token-file` accepts.
const MIN_TOKEN: usize = 32;

/// `policy-check mcp --http` and its security options.
#[derive(clap::Args, Clone, Default)]
pub struct HttpArgs {
    /// Serve MCP's Streamable HTTP transport at http://ADDR/mcp instead of stdio. ADDR is a
    /// loopback address and port (`127.0.0.1:8931`, `[::1]:8931`, `localhost:8931`; port 0
    /// picks a free one); the URL is printed on stderr.
    #[arg(long, value_name = "ADDR")]
    pub http: Option<String>,
    /// With --http: allow an address that is not loopback (`0.0.0.0:8931`). Needs
    /// --token-file; the Host header is then not checked.
    #[arg(long, requires = "http")]
    pub allow_remote: bool,
    /// With --http: every request must carry `Authorization: Bearer TOKEN`, TOKEN being
    /// this file's content without surrounding whitespace (at least 32 characters).
    #[arg(long, value_name = "FILE", requires = "http")]
    pub token_file: Option<PathBuf>,
    /// With --http: a browser origin that may connect (`http://localhost:6274`; repeat for
    /// more). By default a request carrying any Origin header is refused (403).
    #[arg(long, value_name = "ORIGIN", requires = "http")]
    pub allow_origin: Vec<String>,
}

/// The live MCP sessions, by `Mcp-Session-Id` once a call has named it.
type Registry = Arc<Mutex<HashMap<String, Weak<Worker>>>>;

/// Counts a live MCP session and finds it by its id; dropped with its [`Server`].
pub(super) struct Slot {
    live: Arc<AtomicUsize>,
    registry: Registry,
    id: Mutex<Option<String>>,
}

impl Slot {
    /// Learn the session's id from a request's HTTP parts (the first call that has them),
    /// so that a `DELETE` of it ends the session's calls at once.
    pub(super) fn bind(&self, extensions: &rmcp::model::Extensions, worker: &Arc<Worker>) {
        let mut id = super::lock(&self.id);
        if id.is_some() {
            return;
        }
        let named = extensions
            .get::<hyper::http::request::Parts>()
            .and_then(|p| p.headers.get(SESSION_ID))
            .and_then(|v| v.to_str().ok());
        if let Some(named) = named {
            super::lock(&self.registry).insert(named.to_string(), Arc::downgrade(worker));
            *id = Some(named.to_string());
        }
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        if let Some(id) = super::lock(&self.id).take() {
            super::lock(&self.registry).remove(&id);
        }
        self.live.fetch_sub(1, Ordering::SeqCst);
    }
}

/// The address to listen on, refused when it is not loopback without `--allow-remote`.
pub fn address(text: &str, allow_remote: bool) -> Result<SocketAddr, CliError> {
    let addr = match text.strip_prefix("localhost:") {
        Some(port) => port
            .parse::<u16>()
            .map(|p| SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), p))
            .map_err(|e| format!("--http {text}: bad port: {e}"))?,
        None => text.parse::<SocketAddr>().map_err(|e| {
            format!("--http {text}: not an address and port such as 127.0.0.1:8931 ({e})")
        })?,
    };
    if !addr.ip().to_canonical().is_loopback() && !allow_remote {
        return Err(format!(
            "--http {text}: not a loopback address: anyone who can reach it could run commands \
             in this workspace. Use 127.0.0.1 or [::1], or --allow-remote with --token-file"
        )
        .into());
    }
    Ok(addr)
}

/// The bearer token of `--token-file`.
fn read_token(path: &std::path::Path) -> Result<String, CliError> {
    let text = std::fs::read_to_string(path).map_err(|e| CliError::read(path, e))?;
    let token = text.trim();
    if token.len() < MIN_TOKEN || token.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(format!(
            "{}: the token must be at least {MIN_TOKEN} characters with no space or control \
             character in it (such as the output of `openssl rand -hex 32`)",
            path.display()
        )
        .into());
    }
    Ok(token.to_string())
}

/// Idle time after which a session ends: longer than any call may run.
pub fn idle(timeout: Duration) -> Duration {
    SessionConfig::DEFAULT_KEEP_ALIVE.max(timeout + Duration::from_secs(60))
}

type Body = BoxBody<Bytes, Infallible>;

fn plain(status: StatusCode, text: impl Into<String>) -> Response<Body> {
    let mut response = Response::new(Full::new(Bytes::from(text.into())).boxed());
    *response.status_mut() = status;
    response.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}

fn jsonrpc_error(code: i32, message: &str, id: Option<&Value>) -> Response<Body> {
    let mut response = Response::new(Full::new(Bytes::from(error_line(code, message, id))).boxed());
    *response.status_mut() = StatusCode::BAD_REQUEST;
    response.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("application/json"),
    );
    response
}

/// Whether `given` is the token, in time that does not depend on where they differ.
fn token_matches(given: &[u8], token: &[u8]) -> bool {
    let (a, b) = (Sha256::digest(given), Sha256::digest(token));
    a.iter()
        .zip(b.iter())
        .fold(0u8, |acc, (x, y)| acc | (x ^ y))
        == 0
}

/// What the server checks before rmcp's transport sees a request.
struct Gate {
    token: Option<String>,
    live: Arc<AtomicUsize>,
    registry: Registry,
    bodies: tokio::sync::Semaphore,
}

impl Gate {
    /// A refusal for a request that may not reach the transport, or the request with its
    /// body read (a POST's, checked to be one JSON-RPC message of MCP).
    async fn admit(
        &self,
        request: Request<Incoming>,
    ) -> Result<Request<Full<Bytes>>, Response<Body>> {
        if request.uri().path() != PATH {
            return Err(plain(
                StatusCode::NOT_FOUND,
                format!("Not Found: this MCP server answers at {PATH}"),
            ));
        }
        if let Some(token) = &self.token {
            let given = request
                .headers()
                .get(hyper::header::AUTHORIZATION)
                .and_then(|v| v.as_bytes().strip_prefix(b"Bearer "));
            if !given.is_some_and(|g| token_matches(g, token.as_bytes())) {
                let mut response = plain(
                    StatusCode::UNAUTHORIZED,
                    "Unauthorized: send Authorization: Bearer TOKEN (the content of --token-file)",
                );
                response.headers_mut().insert(
                    hyper::header::WWW_AUTHENTICATE,
                    hyper::header::HeaderValue::from_static("Bearer"),
                );
                return Err(response);
            }
        }
        let new_session =
            request.method() == Method::POST && !request.headers().contains_key(SESSION_ID);
        if new_session && self.live.load(Ordering::SeqCst) >= MAX_SESSIONS {
            return Err(plain(
                StatusCode::SERVICE_UNAVAILABLE,
                format!(
                    "Service Unavailable: {MAX_SESSIONS} MCP sessions are open; end one (DELETE) \
                     or wait until one is idle for long enough to end"
                ),
            ));
        }
        let (parts, body) = request.into_parts();
        let bytes = if parts.method == Method::POST {
            let _permit = self.bodies.acquire().await.map_err(|_| {
                plain(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "Service Unavailable: stopping",
                )
            })?;
            let read =
                tokio::time::timeout(BODY_TIMEOUT, Limited::new(body, MAX_MESSAGE).collect());
            let collected = match read.await {
                Err(_) => {
                    return Err(plain(
                        StatusCode::REQUEST_TIMEOUT,
                        format!("Request Timeout: the body took longer than {BODY_TIMEOUT:?}"),
                    ))
                }
                Ok(Err(e)) if e.is::<http_body_util::LengthLimitError>() => {
                    return Err(plain(
                        StatusCode::PAYLOAD_TOO_LARGE,
                        format!("Payload Too Large: a message is at most {MAX_MESSAGE} bytes"),
                    ))
                }
                Ok(Err(e)) => {
                    return Err(plain(
                        StatusCode::BAD_REQUEST,
                        format!("Bad Request: cannot read the body: {e}"),
                    ))
                }
                Ok(Ok(c)) => c.to_bytes(),
            };
            if let Some(refused) = check_message(&collected) {
                return Err(refused);
            }
            collected
        } else {
            Bytes::new()
        };
        Ok(Request::from_parts(parts, Full::new(bytes)))
    }
}

impl Gate {
    /// The client ended session `id` (`DELETE`): its calls end now, not when rmcp has
    /// waited for their answers.
    fn ended(&self, id: &hyper::header::HeaderValue) {
        let Ok(id) = id.to_str() else { return };
        let worker = super::lock(&self.registry).get(id).and_then(Weak::upgrade);
        if let Some(worker) = worker {
            worker.shutdown("the client ended the MCP session");
        }
    }
}

/// A POST body must be one JSON-RPC message of MCP: the refusal of one that is not, with
/// named errors as over stdio.
fn check_message(body: &[u8]) -> Option<Response<Body>> {
    let value: Value = match serde_json::from_slice(body) {
        Ok(v) => v,
        Err(e) => return Some(jsonrpc_error(-32700, &format!("parse error: {e}"), None)),
    };
    if value.is_array() {
        return Some(jsonrpc_error(
            -32600,
            "invalid request: JSON-RPC batches are not supported",
            None,
        ));
    }
    let id = value.get("id").filter(|i| i.is_string() || i.is_number());
    if let Err(e) = serde_json::from_value::<ClientJsonRpcMessage>(value.clone()) {
        let what = value
            .get("method")
            .and_then(Value::as_str)
            .unwrap_or("(no method)");
        return Some(jsonrpc_error(
            -32600,
            &format!("invalid request: not a JSON-RPC message of MCP ({what}): {e}"),
            id,
        ));
    }
    None
}

/// Serve MCP over Streamable HTTP until a signal stops the server (which kills every
/// session's processes).
pub fn serve(options: McpOptions, args: &HttpArgs) -> Result<u8, CliError> {
    let text = args.http.as_deref().unwrap_or_default();
    let addr = address(text, args.allow_remote)?;
    let token = args.token_file.as_deref().map(read_token).transpose()?;
    if args.allow_remote && token.is_none() {
        return Err(
            "--allow-remote needs --token-file: a server others can reach must ask for a token"
                .into(),
        );
    }
    crate::serve::handle_signals("mcp")?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the async runtime: {e}"))?;
    let code = runtime.block_on(run(options, args, addr, token));
    contain::end_all_sessions();
    code
}

async fn run(
    options: McpOptions,
    args: &HttpArgs,
    addr: SocketAddr,
    token: Option<String>,
) -> Result<u8, CliError> {
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|e| format!("--http {addr}: cannot listen: {e}"))?;
    let local = listener
        .local_addr()
        .map_err(|e| format!("--http {addr}: {e}"))?;
    // Check the workspace once, before any client comes.
    drop(Server::new(Worker::start(
        options.clone(),
        tokio::runtime::Handle::current(),
    )?));
    let live = Arc::new(AtomicUsize::new(0));
    let registry: Registry = Arc::default();
    let mut sessions = LocalSessionManager::default();
    sessions.session_config.keep_alive = Some(idle(options.timeout));
    // No SSE "priming" event (an id with empty data, for resuming a dropped stream, new in
    // 2025-11-25): clients of 2025-06-18, such as Gemini CLI 0.61, parse its empty data as
    // JSON and drop the server.
    sessions.session_config.sse_retry = None;
    let mut config = StreamableHttpServerConfig::default()
        .with_sse_retry(None)
        .with_max_request_body_bytes(MAX_MESSAGE)
        .with_allowed_origins(args.allow_origin.clone())
        .enforce_origin_validation();
    if args.allow_remote {
        config = config.disable_allowed_hosts();
    }
    let factory = {
        let live = live.clone();
        let registry = registry.clone();
        let handle = tokio::runtime::Handle::current();
        move || -> Result<Server, std::io::Error> {
            if live.fetch_add(1, Ordering::SeqCst) >= MAX_SESSIONS {
                live.fetch_sub(1, Ordering::SeqCst);
                return Err(std::io::Error::other(format!(
                    "{MAX_SESSIONS} MCP sessions are open"
                )));
            }
            let slot = Slot {
                live: live.clone(),
                registry: registry.clone(),
                id: Mutex::new(None),
            };
            let worker = Worker::start(options.clone(), handle.clone())
                .map_err(|e| std::io::Error::other(e.to_string()))?;
            Ok(Server {
                worker,
                slot: Some(slot),
            })
        }
    };
    let service = StreamableHttpService::new(factory, Arc::new(sessions), config);
    let gate = Arc::new(Gate {
        token,
        live,
        registry,
        bodies: tokio::sync::Semaphore::new(MAX_BODIES),
    });
    let connections = Arc::new(tokio::sync::Semaphore::new(MAX_CONNECTIONS));
    let host = match local.ip() {
        IpAddr::V6(ip) => format!("[{ip}]:{}", local.port()),
        IpAddr::V4(ip) => format!("{ip}:{}", local.port()),
    };
    say!("policy-check mcp: listening on http://{host}{PATH}");
    loop {
        let permit = connections
            .clone()
            .acquire_owned()
            .await
            .map_err(|e| format!("connections: {e}"))?;
        let (stream, peer) = match listener.accept().await {
            Ok(s) => s,
            Err(e) => {
                say!("policy-check mcp: accept: {e}");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let service = service.clone();
        let gate = gate.clone();
        let handler = hyper::service::service_fn(move |request: Request<Incoming>| {
            let service = service.clone();
            let gate = gate.clone();
            async move {
                let (method, path) = (request.method().clone(), request.uri().path().to_string());
                let answer = match gate.admit(request).await {
                    Ok(request) => {
                        let deleted = (request.method() == Method::DELETE)
                            .then(|| request.headers().get(SESSION_ID).cloned())
                            .flatten();
                        let mut answer = service.handle(request).await;
                        if let Some(id) = deleted.filter(|_| answer.status().is_success()) {
                            gate.ended(&id);
                            // rmcp says 202; the Python SDK's client warns on anything but
                            // 200 or 204 (the TypeScript SDK takes any 2xx).
                            *answer.status_mut() = StatusCode::NO_CONTENT;
                        }
                        answer
                    }
                    Err(refused) => refused,
                };
                // Each refusal is a line on stderr too: what a host's "MCP issues" hides.
                if answer.status().is_client_error() || answer.status().is_server_error() {
                    say!(
                        "policy-check mcp: {peer}: {method} {path}: {}",
                        answer.status()
                    );
                }
                Ok::<_, Infallible>(answer)
            }
        });
        tokio::spawn(async move {
            let connection = hyper::server::conn::http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(HEADER_TIMEOUT)
                .serve_connection(TokioIo::new(stream), handler);
            let _ = connection.await;
            drop(permit);
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_loopback_without_allow_remote() {
        assert!(address("127.0.0.1:0", false).is_ok());
        assert!(address("[::1]:8931", false).is_ok());
        assert_eq!(
            address("localhost:8931", false).unwrap(),
            "127.0.0.1:8931".parse().unwrap()
        );
        assert!(address("[::ffff:127.0.0.1]:1", false).is_ok());
        for remote in [
            "0.0.0.0:8931",
            "[::]:8931",
            "192.168.1.2:80",
            "[::ffff:10.0.0.1]:1",
        ] {
            let e = address(remote, false).unwrap_err().to_string();
            assert!(e.contains("not a loopback address"), "{remote}: {e}");
            assert!(address(remote, true).is_ok());
        }
        assert!(address("example.com:80", false).is_err());
        assert!(address("localhost:x", false).is_err());
        assert!(address("127.0.0.1", false).is_err());
    }

    #[test]
    fn tokens() {
        assert!(token_matches(b"abc", b"abc"));
        assert!(!token_matches(b"abd", b"abc"));
        assert!(!token_matches(b"", b"abc"));
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t");
        std::fs::write(&path, "short\n").unwrap();
        assert!(read_token(&path).is_err());
        std::fs::write(&path, format!("{}\n", "a".repeat(32))).unwrap();
        assert_eq!(read_token(&path).unwrap(), "a".repeat(32));
        std::fs::write(&path, format!("{} {}", "a".repeat(32), "b")).unwrap();
        assert!(read_token(&path).is_err());
    }

    #[test]
    fn messages_are_checked_like_stdio_lines() {
        let status = |body: &[u8]| check_message(body).map(|r| r.status());
        assert_eq!(
            status(b"{\"jsonrpc\": \"2.0\", \"id\": 1, \"method\": \"ping\"}"),
            None
        );
        assert_eq!(status(b"{\"jsonrpc\""), Some(StatusCode::BAD_REQUEST));
        assert_eq!(status(b"[]"), Some(StatusCode::BAD_REQUEST));
        assert_eq!(
            status(b"{\"jsonrpc\": \"1.0\", \"id\": 2, \"method\": 7}"),
            Some(StatusCode::BAD_REQUEST)
        );
    }

    #[test]
    fn sessions_outlive_their_longest_call() {
        assert_eq!(idle(Duration::from_secs(30)), Duration::from_secs(300));
        assert_eq!(idle(Duration::from_secs(600)), Duration::from_secs(660));
    }
}
