//! The `shellgate` Python module (`shellgate._shellgate`): thin PyO3 bindings over the Rust
//! library. Every decision, refusal text and tool result comes from the library itself
//! ([`shellgate::Policy::evaluate`], [`shellgate::report`], [`Guard::handle_json`]), so Python
//! answers exactly what `policy-check check`, `explain` and `serve` answer.
//!
//! The GIL is released (`py.detach`, PyO3's name for `allow_threads`) while a policy loads,
//! while a command is parsed and evaluated, and while a guarded command runs; a Python
//! executor takes the GIL back only for its own call.

#![forbid(unsafe_code)]

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::ThreadId;
use std::time::Duration;

use pyo3::create_exception;
use pyo3::exceptions::{PyException, PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};
use serde_json::Value;
use shellgate::middleware::{
    Answer, BashSession, ExecError, Executor, Guard, NotACall, Output, RedactThenTruncate,
    ReferenceSetup, ToolSet,
};
use shellgate::redact::{Redactor, RuleSet};
use shellgate::snapshot::{SnapshotError, Snapshots};
use shellgate::truncate::TruncateConfig;
use shellgate::{report, Context};

create_exception!(
    shellgate,
    PolicyError,
    PyException,
    "A policy could not be loaded; `diagnostics` lists every problem found."
);

/// Nesting deeper than this in a value given to `Guard.handle` is refused (a cycle, or hostile
/// input), never a stack overflow.
const MAX_DEPTH: usize = 64;

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic while holding the lock leaves the data as the library left it, which is always
    // consistent between calls; go on rather than poison every later call.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// One problem in a policy file.
#[pyclass(frozen, module = "shellgate", name = "Diagnostic")]
#[derive(Clone)]
struct PyDiagnostic {
    /// Stable kebab-case code, such as `policy-unknown-key`.
    #[pyo3(get)]
    code: String,
    /// What is wrong.
    #[pyo3(get)]
    message: String,
    /// The file (`shipped:NAME` for a shipped policy).
    #[pyo3(get)]
    file: String,
    /// 1-based line (0 when not applicable).
    #[pyo3(get)]
    line: usize,
    /// 1-based column in characters (0 when not applicable).
    #[pyo3(get)]
    column: usize,
}

#[pymethods]
impl PyDiagnostic {
    fn __repr__(&self) -> String {
        format!(
            "Diagnostic(code={:?}, message={:?}, file={:?}, line={}, column={})",
            self.code, self.message, self.file, self.line, self.column
        )
    }
    fn __str__(&self) -> String {
        format!(
            "{}:{}:{}: error[{}]: {}",
            self.file, self.line, self.column, self.code, self.message
        )
    }
}

fn policy_error(py: Python<'_>, e: &shellgate::PolicyError) -> PyErr {
    let diagnostics: Vec<PyDiagnostic> = match e {
        shellgate::PolicyError::Io { path, source } => vec![PyDiagnostic {
            code: "policy-unreadable".into(),
            message: format!("cannot read policy: {source}"),
            file: path.display().to_string(),
            line: 0,
            column: 0,
        }],
        _ => e
            .diagnostics()
            .iter()
            .map(|d| PyDiagnostic {
                code: d.code.to_string(),
                message: d.message.clone(),
                file: d.location.file.clone(),
                line: d.location.line,
                column: d.location.col,
            })
            .collect(),
    };
    let err = PolicyError::new_err(e.to_string().trim_end().to_string());
    if let Err(set) = err.value(py).setattr("diagnostics", diagnostics) {
        return set;
    }
    err
}

/// A compiled policy: a shipped name (`"read-only"`, `"developer"`) or a TOML file.
#[pyclass(frozen, module = "shellgate", name = "Policy")]
struct PyPolicy {
    inner: Arc<shellgate::Policy>,
}

fn fspath(obj: &Bound<'_, PyAny>) -> PyResult<String> {
    if let Ok(s) = obj.extract::<String>() {
        return Ok(s);
    }
    let path: PathBuf = obj.extract()?;
    path.to_str()
        .map(str::to_string)
        .ok_or_else(|| PyValueError::new_err("the path is not valid UTF-8"))
}

/// `cwd` made absolute, `workspace` (one path or several; default: `cwd`) as the roots.
fn context(cwd: &Path, workspace: Option<&Bound<'_, PyAny>>) -> PyResult<Context> {
    let Some(ws) = workspace.filter(|w| !w.is_none()) else {
        return Ok(Context::new(cwd));
    };
    let roots: Vec<PathBuf> = if ws.is_instance_of::<PyString>() || ws.hasattr("__fspath__")? {
        vec![ws.extract()?]
    } else {
        ws.try_iter()?
            .map(|r| r?.extract())
            .collect::<PyResult<_>>()?
    };
    let Some(first) = roots.first() else {
        return Err(PyValueError::new_err("workspace: give at least one root"));
    };
    let mut ctx = Context::new(first);
    ctx.workspace = roots.iter().map(|r| Context::new(r).cwd).collect();
    ctx.cwd = Context::new(cwd).cwd;
    Ok(ctx)
}

#[pymethods]
impl PyPolicy {
    #[new]
    fn new(py: Python<'_>, name_or_path: &Bound<'_, PyAny>) -> PyResult<PyPolicy> {
        let spec = fspath(name_or_path)?;
        match py.detach(|| shellgate::Policy::from_name_or_file(&spec)) {
            Ok(p) => Ok(PyPolicy { inner: Arc::new(p) }),
            Err(e) => Err(policy_error(py, &e)),
        }
    }

    /// A policy from TOML text; `origin` names it in diagnostics and rule locations.
    #[staticmethod]
    #[pyo3(signature = (text, origin = "<string>"))]
    fn from_toml(py: Python<'_>, text: &str, origin: &str) -> PyResult<PyPolicy> {
        match py.detach(|| shellgate::Policy::from_toml(text, origin)) {
            Ok(p) => Ok(PyPolicy { inner: Arc::new(p) }),
            Err(e) => Err(policy_error(py, &e)),
        }
    }

    /// `[policy] name`.
    #[getter]
    fn name(&self) -> &str {
        &self.inner.name
    }

    /// Evaluate `command` as if run in `cwd`, with `workspace` (default: `cwd`) standing for
    /// `{workspace}` in path rules.
    #[pyo3(signature = (command, cwd = PathBuf::from("."), workspace = None))]
    fn check(
        &self,
        py: Python<'_>,
        command: String,
        cwd: PathBuf,
        workspace: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyDecision> {
        let ctx = context(&cwd, workspace)?;
        let policy = &self.inner;
        let decision = py.detach(|| policy.evaluate(&ctx, &command));
        Ok(PyDecision { command, decision })
    }

    fn __repr__(&self) -> String {
        format!("Policy({:?})", self.inner.name)
    }
}

/// The outcome of checking one command.
#[pyclass(frozen, module = "shellgate", name = "Decision")]
struct PyDecision {
    command: String,
    decision: shellgate::Decision,
}

#[pymethods]
impl PyDecision {
    /// `"allow"`, `"ask"` or `"deny"`: the strictest verdict over everything in the command.
    #[getter]
    fn verdict(&self) -> &'static str {
        self.decision.verdict.as_str()
    }

    /// Whether the command may run without asking.
    #[getter]
    fn allowed(&self) -> bool {
        self.decision.is_allowed()
    }

    /// The command checked.
    #[getter]
    fn command(&self) -> &str {
        &self.command
    }

    /// Every finding that is not an allow, in source order.
    #[getter]
    fn reasons(&self) -> Vec<PyReason> {
        self.decision
            .reasons
            .iter()
            .map(|r| PyReason {
                code: r.code,
                verdict: r.verdict.as_str(),
                message: r.message.clone(),
                rule: r.rule.as_ref().map(|rule| rule.name.clone()),
                rule_location: r.rule.as_ref().map(|rule| rule.location_text()),
                span: (r.span.start, r.span.end),
            })
            .collect()
    }

    /// Which rule decided each part of the command (allowed parts too), in source order.
    #[getter]
    fn trace(&self) -> Vec<PyTraceStep> {
        self.decision
            .trace
            .steps()
            .map(|s| PyTraceStep {
                part: s.part.as_str(),
                text: self
                    .command
                    .get(s.span.start..s.span.end)
                    .unwrap_or_default()
                    .to_string(),
                span: (s.span.start, s.span.end),
                rule: s.rule.name.clone(),
                rule_location: s.rule.location_text(),
                key: s.key,
                entry: s.entry.map(str::to_string),
                verdict: s.verdict.as_str(),
            })
            .collect()
    }

    /// The text of `policy-check explain`: each reason with carets under its span, then the
    /// rule that decided each part.
    fn explain(&self) -> String {
        report::explain(&self.command, &self.decision, false)
    }

    /// What the model is told when the command is refused (empty when allowed).
    fn for_model(&self) -> String {
        report::for_model(&self.command, &self.decision)
    }

    /// The decision as `policy-check check --format json` prints it.
    fn to_json(&self) -> String {
        report::json_line(&self.command, &self.decision)
    }

    fn __bool__(&self) -> bool {
        self.decision.is_allowed()
    }

    fn __repr__(&self) -> String {
        let codes: Vec<&str> = self.decision.reasons.iter().map(|r| r.code).collect();
        format!(
            "Decision(verdict={:?}, reasons={:?})",
            self.decision.verdict.as_str(),
            codes
        )
    }
}

/// One finding: why (part of) a command is not simply allowed.
#[pyclass(frozen, module = "shellgate", name = "Reason")]
#[derive(Clone)]
struct PyReason {
    /// Stable kebab-case code, such as `program-not-allowed`.
    #[pyo3(get)]
    code: &'static str,
    /// What this finding alone decides.
    #[pyo3(get)]
    verdict: &'static str,
    /// A short explanation the model can act on.
    #[pyo3(get)]
    message: String,
    /// The dotted name of the rule responsible (`programs.find.deny_options`, or
    /// `builtin:<code>` when no rule of the policy decided it). None only in a reason built
    /// by hand.
    #[pyo3(get)]
    rule: Option<String>,
    /// Where that rule is written (`file:line:col`), or None.
    #[pyo3(get)]
    rule_location: Option<String>,
    /// `(start, end)` byte offsets into the command (UTF-8).
    #[pyo3(get)]
    span: (usize, usize),
}

/// One step of a decision's trace: a part of the command and the rule that decided it.
#[pyclass(frozen, module = "shellgate", name = "TraceStep")]
#[derive(Clone)]
struct PyTraceStep {
    /// What the part is: `program`, `subcommand`, `wrapper`, `option`, `operand`, `path`,
    /// `redirect`, `assignment`, `expansion`, `command` or `syntax`.
    #[pyo3(get)]
    part: &'static str,
    /// The text of the part in the command.
    #[pyo3(get)]
    text: String,
    /// `(start, end)` byte offsets into the command (UTF-8).
    #[pyo3(get)]
    span: (usize, usize),
    /// The dotted name of the rule (`programs.ls`, `paths.read`, `builtin:<code>`).
    #[pyo3(get)]
    rule: String,
    /// Where that rule is written (`file:line:col`, or `<built-in>`).
    #[pyo3(get)]
    rule_location: String,
    /// The key of the rule that applied (`allow_options`, `operands`), or None.
    #[pyo3(get)]
    key: Option<&'static str>,
    /// The entry that matched (the option `-l`, the pattern `{workspace}/**`), or None.
    #[pyo3(get)]
    entry: Option<String>,
    /// What this step alone decides.
    #[pyo3(get)]
    verdict: &'static str,
}

#[pymethods]
impl PyTraceStep {
    fn __repr__(&self) -> String {
        let entry = self
            .entry
            .as_ref()
            .map_or_else(|| "None".to_string(), |e| format!("{e:?}"));
        format!(
            "TraceStep(part={:?}, text={:?}, rule={:?}, entry={entry}, verdict={:?})",
            self.part, self.text, self.rule, self.verdict
        )
    }
}

#[pymethods]
impl PyReason {
    fn __repr__(&self) -> String {
        format!(
            "Reason(code={:?}, rule={:?}, span={:?}, message={:?})",
            self.code, self.rule, self.span, self.message
        )
    }
}

/// Text or bytes in, bytes out, and whether it was text.
fn text_or_bytes(obj: &Bound<'_, PyAny>) -> PyResult<(Vec<u8>, bool)> {
    if let Ok(s) = obj.cast::<PyString>() {
        return Ok((s.to_cow()?.as_bytes().to_vec(), true));
    }
    if let Ok(b) = obj.cast::<PyBytes>() {
        return Ok((b.as_bytes().to_vec(), false));
    }
    Err(PyTypeError::new_err(format!(
        "expected str or bytes, got {}",
        obj.get_type().name()?
    )))
}

fn same_type(py: Python<'_>, data: Vec<u8>, text: bool) -> Py<PyAny> {
    if text {
        let s = match String::from_utf8(data) {
            Ok(s) => s,
            Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
        };
        PyString::new(py, &s).into_any().unbind()
    } else {
        PyBytes::new(py, &data).into_any().unbind()
    }
}

/// Redact credentials (the built-in rule pack); str in gives str out, bytes in gives bytes.
#[pyfunction]
fn redact(py: Python<'_>, text: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
    let (data, is_text) = text_or_bytes(text)?;
    let out = py.detach(|| RuleSet::builtin().redact(&data).0);
    Ok(same_type(py, out, is_text))
}

/// Truncate output to a model's budget: the head and more of the tail kept, a marker saying
/// how much was left out. Always returns str (invalid UTF-8 is replaced).
#[pyfunction]
#[pyo3(signature = (text, max_bytes = 30_000, max_lines = 400))]
fn truncate(
    py: Python<'_>,
    text: &Bound<'_, PyAny>,
    max_bytes: usize,
    max_lines: usize,
) -> PyResult<String> {
    let (data, _) = text_or_bytes(text)?;
    let config = TruncateConfig {
        max_bytes,
        max_lines,
    };
    Ok(py.detach(|| shellgate::truncate::truncate(&data, &config)))
}

/// Streaming redaction: `feed` chunks as they arrive, then `finish`. A secret split across
/// chunks is still redacted; each call returns the bytes that are safe to pass on so far.
#[pyclass(frozen, module = "shellgate", name = "Redactor")]
struct PyRedactor {
    inner: Mutex<Option<Redactor<'static>>>,
}

#[pymethods]
impl PyRedactor {
    #[new]
    fn new() -> PyRedactor {
        PyRedactor {
            inner: Mutex::new(Some(Redactor::new(RuleSet::builtin()))),
        }
    }

    /// Feed one chunk (str or bytes); returns the redacted bytes ready so far.
    fn feed(&self, py: Python<'_>, chunk: &Bound<'_, PyAny>) -> PyResult<Py<PyBytes>> {
        let (data, _) = text_or_bytes(chunk)?;
        let out = py.detach(|| {
            let mut inner = lock(&self.inner);
            let r = inner.as_mut()?;
            let mut out = Vec::new();
            r.feed(&data, &mut out);
            Some(out)
        });
        match out {
            Some(out) => Ok(PyBytes::new(py, &out).unbind()),
            None => Err(PyValueError::new_err("the Redactor is finished")),
        }
    }

    /// End the stream; returns the last redacted bytes. Feeding afterwards is an error.
    fn finish(&self, py: Python<'_>) -> PyResult<Py<PyBytes>> {
        let out = py.detach(|| {
            let mut r = lock(&self.inner).take()?;
            let mut out = Vec::new();
            r.finish(&mut out);
            Some(out)
        });
        match out {
            Some(out) => Ok(PyBytes::new(py, &out).unbind()),
            None => Err(PyValueError::new_err("the Redactor is finished")),
        }
    }
}

/// An executor that calls a Python callable `(command) -> (output, exit_status)`.
struct PyExecutor {
    callable: Py<PyAny>,
    timeout: Duration,
    /// An error to raise in the caller once the call is answered (a bad return value, or a
    /// `BaseException` such as KeyboardInterrupt that must not be swallowed).
    pending: Arc<Mutex<Option<PyErr>>>,
}

impl PyExecutor {
    fn call(&self, py: Python<'_>, command: &str) -> Result<Output, ExecError> {
        let result = match self.callable.bind(py).call1((command,)) {
            Ok(r) => r,
            Err(e) => return Err(self.exception(py, e)),
        };
        match Self::output(&result) {
            Ok(out) => Ok(out),
            Err(e) => {
                let msg = format!("the executor returned an invalid value: {e}");
                *lock(&self.pending) = Some(PyTypeError::new_err(msg.clone()));
                Err(ExecError::Failed(msg))
            }
        }
    }

    fn output(result: &Bound<'_, PyAny>) -> PyResult<Output> {
        let tuple = result
            .cast::<PyTuple>()
            .map_err(|_| PyTypeError::new_err("expected a tuple (output, exit_status)"))?;
        if tuple.len() != 2 {
            return Err(PyTypeError::new_err(
                "expected a tuple of two: (output, exit_status)",
            ));
        }
        let (output, _) = text_or_bytes(&tuple.get_item(0)?)?;
        let status = tuple.get_item(1)?;
        if status.is_none() {
            return Ok(Output::without_status(output));
        }
        if status.is_instance_of::<PyBool>() {
            return Err(PyTypeError::new_err("exit_status must be an int or None"));
        }
        let status: i32 = status
            .extract()
            .map_err(|_| PyTypeError::new_err("exit_status must be an int or None"))?;
        Ok(Output::new(output, status))
    }

    /// A Python exception from the executor: a timeout (`TimeoutError`,
    /// `subprocess.TimeoutExpired`) is the timeout result, any other `Exception` a failure the
    /// model is told about; a `BaseException` that is not an `Exception` is raised again.
    fn exception(&self, py: Python<'_>, e: PyErr) -> ExecError {
        let value = e.value(py);
        let expired = py
            .import("subprocess")
            .and_then(|m| m.getattr("TimeoutExpired"))
            .is_ok_and(|t| value.is_instance(&t).unwrap_or(false));
        if expired || e.is_instance_of::<pyo3::exceptions::PyTimeoutError>(py) {
            let output = value
                .getattr("output")
                .ok()
                .and_then(|o| text_or_bytes(&o).ok())
                .map(|(o, _)| o)
                .unwrap_or_default();
            return ExecError::Timeout {
                after: self.timeout,
                output,
                restarted: false,
                gap: None,
            };
        }
        let text = value
            .str()
            .map(|s| s.to_string())
            .unwrap_or_else(|_| "(unprintable)".into());
        let kind = value
            .get_type()
            .name()
            .map(|n| n.to_string())
            .unwrap_or_default();
        if !e.is_instance_of::<PyException>(py) {
            *lock(&self.pending) = Some(e);
        }
        ExecError::Failed(format!("the executor raised {kind}: {text}"))
    }
}

impl Executor for PyExecutor {
    fn run(&mut self, command: &str) -> Result<Output, ExecError> {
        Python::attach(|py| self.call(py, command))
    }

    /// An executor object with a `cwd` attribute (an absolute path) says where the next
    /// command runs, as the bash session does; commands are checked against it.
    fn cwd(&self) -> Option<PathBuf> {
        Python::attach(|py| {
            let cwd = self.callable.bind(py).getattr("cwd").ok()?;
            cwd.extract::<PathBuf>().ok()
        })
    }
}

enum AnyGuard {
    Bash(Box<Guard<BashSession>>),
    Python(Box<Guard<PyExecutor>>),
}

impl AnyGuard {
    fn handle_json(&mut self, value: &Value) -> Result<Answer, NotACall> {
        match self {
            AnyGuard::Bash(g) => g.handle_json(value),
            AnyGuard::Python(g) => g.handle_json(value),
        }
    }

    fn cwd(&self) -> &Path {
        match self {
            AnyGuard::Bash(g) => &g.context().cwd,
            AnyGuard::Python(g) => &g.context().cwd,
        }
    }
}

struct GuardState {
    guard: Option<AnyGuard>,
}

/// The tool shapes named in `Guard(tools=[...])`: the Messages API's tool names, or serve's
/// `--tools` names.
fn tool_set(tools: Option<&Bound<'_, PyAny>>) -> PyResult<ToolSet> {
    let Some(tools) = tools.filter(|t| !t.is_none()) else {
        return Ok(ToolSet::default());
    };
    if tools.is_instance_of::<PyString>() {
        return Err(PyTypeError::new_err(
            "tools: give a list of tool names, such as [\"bash\", \"str_replace_based_edit_tool\"]",
        ));
    }
    let mut set = ToolSet {
        bash: false,
        text_editor: false,
        code_execution: false,
    };
    for name in tools.try_iter()? {
        let name: String = name?.extract()?;
        match name.as_str() {
            "bash" => set.bash = true,
            "str_replace_based_edit_tool" | "text_editor" | "text-editor" => set.text_editor = true,
            "code_execution"
            | "code-execution"
            | "bash_code_execution"
            | "text_editor_code_execution" => set.code_execution = true,
            other => {
                return Err(PyValueError::new_err(format!(
                    "tools: unknown tool {other:?}; the tools are \"bash\", \
                     \"str_replace_based_edit_tool\" and \"code_execution\" \
                     (bash_code_execution and text_editor_code_execution)"
                )))
            }
        }
    }
    if !(set.bash || set.text_editor || set.code_execution) {
        return Err(PyValueError::new_err("tools: name at least one tool"));
    }
    Ok(set)
}

/// The sandbox launcher: `launcher`, else `$SHELLGATE_POLICY_CHECK`, else the `policy-check`
/// binary shipped in the wheel (`shellgate/bin/policy-check`).
fn find_launcher(py: Python<'_>, launcher: Option<PathBuf>) -> PyResult<Option<PathBuf>> {
    if let Some(l) = launcher {
        if !l.is_file() {
            return Err(PyValueError::new_err(format!(
                "launcher: {}: no such file",
                l.display()
            )));
        }
        return Ok(Some(l));
    }
    if let Some(l) = std::env::var_os("SHELLGATE_POLICY_CHECK").filter(|v| !v.is_empty()) {
        let l = PathBuf::from(l);
        if !l.is_file() {
            return Err(PyValueError::new_err(format!(
                "$SHELLGATE_POLICY_CHECK: {}: no such file",
                l.display()
            )));
        }
        return Ok(Some(l));
    }
    let package: PathBuf = py.import("shellgate")?.getattr("__file__")?.extract()?;
    let shipped = package
        .parent()
        .map(|d| d.join("bin").join("policy-check"))
        .filter(|p| p.is_file());
    Ok(shipped)
}

/// Checks each bash `tool_use` against a policy, runs what is allowed and answers with the
/// `tool_result`, exactly as `policy-check serve` does.
#[pyclass(frozen, module = "shellgate", name = "Guard")]
struct PyGuard {
    state: Mutex<GuardState>,
    /// The thread inside `handle`, to refuse a re-entrant call (from the executor) instead
    /// of deadlocking.
    busy: Mutex<Option<ThreadId>>,
    pending: Arc<Mutex<Option<PyErr>>>,
    sandboxed: bool,
    tools: Vec<String>,
    /// The workspace snapshots (`snapshots=True`): shared with the guard, which snapshots
    /// before each call that may write.
    snapshots: Option<Arc<Mutex<Snapshots>>>,
}

impl PyGuard {
    fn snapshot_store(&self) -> PyResult<Arc<Mutex<Snapshots>>> {
        self.snapshots.clone().ok_or_else(|| {
            PyRuntimeError::new_err("this Guard keeps no snapshots: create it with snapshots=True")
        })
    }
}

fn snapshot_error(e: SnapshotError) -> PyErr {
    PyRuntimeError::new_err(format!("{} ({})", e, e.code()))
}

#[pymethods]
impl PyGuard {
    #[new]
    #[pyo3(signature = (policy, cwd = PathBuf::from("."), timeout = 30.0, executor = None, *, tools = None, sandbox = None, launcher = None, snapshots = false))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        policy: &Bound<'_, PyAny>,
        cwd: PathBuf,
        timeout: f64,
        executor: Option<Py<PyAny>>,
        tools: Option<&Bound<'_, PyAny>>,
        sandbox: Option<bool>,
        launcher: Option<PathBuf>,
        snapshots: bool,
    ) -> PyResult<PyGuard> {
        let tools = tool_set(tools)?;
        let policy = match policy.cast::<PyPolicy>() {
            Ok(p) => p.get().inner.clone(),
            Err(_) => PyPolicy::new(py, policy)?.inner,
        };
        if !(timeout.is_finite() && timeout > 0.0 && timeout <= 86_400.0) {
            return Err(PyValueError::new_err(
                "timeout must be a number of seconds, more than 0 and at most 86400",
            ));
        }
        let timeout = Duration::from_secs_f64(timeout);
        let policy_snapshots = policy.snapshots.clone();
        let pending = Arc::new(Mutex::new(None));
        let mut sandboxed = false;
        let guard = match executor {
            None => {
                let launcher = match sandbox {
                    Some(false) => None,
                    _ => find_launcher(py, launcher)?,
                };
                if sandbox == Some(true) && launcher.is_none() {
                    return Err(PyRuntimeError::new_err(
                        "sandbox=True: no sandbox launcher: this install ships no policy-check \
                         binary; pass launcher=PATH or set SHELLGATE_POLICY_CHECK",
                    ));
                }
                sandboxed = launcher.is_some();
                let mut setup = ReferenceSetup::new(tools);
                setup.launcher = launcher;
                py.detach(|| Guard::reference_tools(policy, &cwd, timeout, setup, |_| {}))
                    .map(|(g, _)| AnyGuard::Bash(Box::new(g)))
                    .map_err(|e| PyRuntimeError::new_err(e.to_string()))?
            }
            Some(callable) => {
                if sandbox == Some(true) {
                    return Err(PyValueError::new_err(
                        "sandbox=True applies to the reference bash session, not to an executor",
                    ));
                }
                if !callable.bind(py).is_callable() {
                    return Err(PyTypeError::new_err("executor must be callable"));
                }
                let filter = RedactThenTruncate::for_policy(&policy, TruncateConfig::default())
                    .map_err(|e| {
                        PyValueError::new_err(format!("the policy's [redact] table: {e}"))
                    })?;
                let executor = PyExecutor {
                    callable,
                    timeout,
                    pending: pending.clone(),
                };
                let ctx = Context::new(&cwd);
                AnyGuard::Python(Box::new(
                    Guard::new(policy, ctx, executor)
                        .with_filter(filter)
                        .with_tools(tools),
                ))
            }
        };
        let (guard, snapshots) = if snapshots {
            let store = py
                .detach(|| {
                    let mut s = Snapshots::open(&cwd, &policy_snapshots)?;
                    s.hold_session()?;
                    Ok(s)
                })
                .map_err(snapshot_error)?;
            let shared = Arc::new(Mutex::new(store));
            let inner = shared.clone();
            let snapshotter = move |call: &shellgate::middleware::WriteCall<'_>| {
                lock(&inner)
                    .before(call.tool_use_id, call.tool, call.command)
                    .map(|_| ())
            };
            let guard = match guard {
                AnyGuard::Bash(g) => AnyGuard::Bash(Box::new(g.with_snapshots(snapshotter))),
                AnyGuard::Python(g) => AnyGuard::Python(Box::new(g.with_snapshots(snapshotter))),
            };
            (guard, Some(shared))
        } else {
            (guard, None)
        };
        Ok(PyGuard {
            state: Mutex::new(GuardState { guard: Some(guard) }),
            busy: Mutex::new(None),
            pending,
            sandboxed,
            tools: tools.names().iter().map(|n| n.to_string()).collect(),
            snapshots,
        })
    }

    /// Whether the reference session runs inside the kernel sandbox (under the launcher).
    #[getter]
    fn sandboxed(&self) -> bool {
        self.sandboxed
    }

    /// The tool names this guard answers.
    #[getter]
    fn tools(&self) -> Vec<String> {
        self.tools.clone()
    }

    /// Answer a `tool_use` block (→ its `tool_result` dict), or an assistant message / API
    /// response (a dict with a `content` list, an object with `.model_dump()` or a `content`
    /// attribute) → the user message dict of results, one per `tool_use`, in order.
    fn handle(&self, py: Python<'_>, obj: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let value = message_json(obj)?;
        let me = std::thread::current().id();
        if *lock(&self.busy) == Some(me) {
            return Err(PyRuntimeError::new_err(
                "Guard.handle called from inside its own executor",
            ));
        }
        let (answer, pending) = py.detach(|| {
            let mut state = lock(&self.state);
            *lock(&self.busy) = Some(me);
            let answer = state.guard.as_mut().map(|g| g.handle_json(&value));
            *lock(&self.busy) = None;
            // Taken while this call still holds the guard, so that another thread's call
            // cannot raise this one's error.
            (answer, lock(&self.pending).take())
        });
        if let Some(e) = pending {
            return Err(e);
        }
        let answer = match answer {
            None => return Err(PyRuntimeError::new_err("the Guard is closed")),
            Some(Err(not_a_call)) => return Err(PyValueError::new_err(not_a_call.to_string())),
            Some(Ok(Answer::Message(m))) if m.content.is_empty() => {
                return Err(PyValueError::new_err(
                    shellgate::middleware::NOTHING_TO_ANSWER,
                ))
            }
            Some(Ok(a)) => a,
        };
        let json = serde_json::to_value(&answer)
            .map_err(|e| PyRuntimeError::new_err(format!("cannot encode the answer: {e}")))?;
        to_python(py, &json)
    }

    /// Every snapshot of the workspace (`snapshots=True`), oldest first: a dict with `seq`,
    /// `id` (the tool_use id), `kind`, `time`, `tool`, `command` (redacted) and `changes`
    /// (`added`, `changed`, `removed` paths).
    fn history(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let store = self.snapshot_store()?;
        let items = py
            .detach(|| lock(&store).history())
            .map_err(snapshot_error)?;
        let json = serde_json::to_value(&items)
            .map_err(|e| PyRuntimeError::new_err(format!("cannot encode the history: {e}")))?;
        to_python(py, &json)
    }

    /// Restore the workspace to before the latest call that changed it (repeat to walk
    /// back), or with `to` to before the call with that tool_use id; returns what was
    /// restored. Waits for a call in progress; refused while another session holds the
    /// workspace. The undo is itself undoable (`to=report["undo_id"]`).
    #[pyo3(signature = (to = None))]
    fn undo(&self, py: Python<'_>, to: Option<String>) -> PyResult<Py<PyAny>> {
        let store = self.snapshot_store()?;
        let report = py
            .detach(|| {
                // No call runs while the workspace is restored.
                let _calls = lock(&self.state);
                lock(&store).undo(to.as_deref())
            })
            .map_err(snapshot_error)?;
        let json = serde_json::to_value(&report)
            .map_err(|e| PyRuntimeError::new_err(format!("cannot encode the report: {e}")))?;
        to_python(py, &json)
    }

    /// The working directory the next command is checked (and run) in.
    #[getter]
    fn cwd(&self, py: Python<'_>) -> PyResult<String> {
        let cwd = py.detach(|| {
            lock(&self.state)
                .guard
                .as_ref()
                .map(|g| g.cwd().display().to_string())
        });
        cwd.ok_or_else(|| PyRuntimeError::new_err("the Guard is closed"))
    }

    /// Whether `close()` was called.
    #[getter]
    fn closed(&self, py: Python<'_>) -> bool {
        py.detach(|| lock(&self.state).guard.is_none())
    }

    /// End the session (the reference bash session's whole process group is killed).
    /// Closing twice is harmless.
    fn close(&self, py: Python<'_>) {
        let guard = py.detach(|| lock(&self.state).guard.take());
        // A Python executor's callable is released with the GIL held; a bash session is
        // killed without it.
        match guard {
            Some(AnyGuard::Bash(g)) => py.detach(move || drop(g)),
            other => drop(other),
        }
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    #[pyo3(signature = (*_args))]
    fn __exit__(&self, py: Python<'_>, _args: &Bound<'_, PyTuple>) -> bool {
        self.close(py);
        false
    }
}

/// What `Guard.handle` was given, as JSON. An object with `.model_dump()` (a pydantic model,
/// as the SDK's are) is dumped; another object with a `content` attribute becomes
/// `{"content": [...]}`.
fn message_json(obj: &Bound<'_, PyAny>) -> PyResult<Value> {
    if obj.is_instance_of::<PyDict>() || obj.hasattr("model_dump")? {
        return to_json(obj, 0);
    }
    if let Ok(content) = obj.getattr("content") {
        let mut map = serde_json::Map::new();
        if let Ok(kind) = obj.getattr("type") {
            if let Ok(kind) = kind.extract::<String>() {
                map.insert("type".into(), Value::String(kind));
            }
        }
        map.insert("content".into(), to_json(&content, 1)?);
        return Ok(Value::Object(map));
    }
    to_json(obj, 0)
}

/// `obj.model_dump(mode="json")` (pydantic's JSON-safe dump), or `obj.model_dump()` for an
/// object whose `model_dump` takes no `mode`.
fn model_dump<'py>(obj: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    let kwargs = PyDict::new(obj.py());
    kwargs.set_item("mode", "json")?;
    match obj.call_method("model_dump", (), Some(&kwargs)) {
        Err(e) if e.is_instance_of::<PyTypeError>(obj.py()) => obj.call_method0("model_dump"),
        other => other,
    }
}

fn to_json(obj: &Bound<'_, PyAny>, depth: usize) -> PyResult<Value> {
    if depth > MAX_DEPTH {
        return Err(PyValueError::new_err(format!(
            "nested more than {MAX_DEPTH} deep"
        )));
    }
    if obj.is_none() {
        return Ok(Value::Null);
    }
    if let Ok(b) = obj.cast::<PyBool>() {
        return Ok(Value::Bool(b.is_true()));
    }
    if obj.is_instance_of::<PyInt>() {
        if let Ok(i) = obj.extract::<i64>() {
            return Ok(Value::from(i));
        }
        if let Ok(u) = obj.extract::<u64>() {
            return Ok(Value::from(u));
        }
        return Err(PyValueError::new_err("an integer too large for JSON"));
    }
    if let Ok(f) = obj.cast::<PyFloat>() {
        return serde_json::Number::from_f64(f.value())
            .map(Value::Number)
            .ok_or_else(|| PyValueError::new_err("NaN and infinity are not JSON"));
    }
    if let Ok(s) = obj.cast::<PyString>() {
        return Ok(Value::String(s.to_cow()?.into_owned()));
    }
    if let Ok(d) = obj.cast::<PyDict>() {
        let mut map = serde_json::Map::new();
        for (k, v) in d.iter() {
            let key: String = k
                .extract()
                .map_err(|_| PyTypeError::new_err("JSON object keys must be str"))?;
            map.insert(key, to_json(&v, depth + 1)?);
        }
        return Ok(Value::Object(map));
    }
    if obj.is_instance_of::<PyList>() || obj.is_instance_of::<PyTuple>() {
        let items = obj
            .try_iter()?
            .map(|v| to_json(&v?, depth + 1))
            .collect::<PyResult<_>>()?;
        return Ok(Value::Array(items));
    }
    if obj.hasattr("model_dump")? {
        return to_json(&model_dump(obj)?, depth + 1);
    }
    if let Ok(attrs) = obj.getattr("__dict__") {
        if let Ok(attrs) = attrs.cast::<PyDict>() {
            let public = PyDict::new(obj.py());
            for (k, v) in attrs.iter() {
                if !k.extract::<String>().is_ok_and(|k| k.starts_with('_')) {
                    public.set_item(k, v)?;
                }
            }
            return to_json(public.as_any(), depth + 1);
        }
    }
    Err(PyTypeError::new_err(format!(
        "cannot read a {} as a tool_use block or message",
        obj.get_type().name()?
    )))
}

fn to_python(py: Python<'_>, value: &Value) -> PyResult<Py<PyAny>> {
    Ok(match value {
        Value::Null => py.None(),
        Value::Bool(b) => PyBool::new(py, *b).to_owned().into_any().unbind(),
        Value::Number(n) => match (n.as_i64(), n.as_u64(), n.as_f64()) {
            (Some(i), _, _) => i.into_pyobject(py)?.into_any().unbind(),
            (_, Some(u), _) => u.into_pyobject(py)?.into_any().unbind(),
            (_, _, f) => f.unwrap_or(f64::NAN).into_pyobject(py)?.into_any().unbind(),
        },
        Value::String(s) => PyString::new(py, s).into_any().unbind(),
        Value::Array(items) => {
            let list = PyList::empty(py);
            for item in items {
                list.append(to_python(py, item)?)?;
            }
            list.into_any().unbind()
        }
        Value::Object(map) => {
            let dict = PyDict::new(py);
            for (k, v) in map {
                dict.set_item(k, to_python(py, v)?)?;
            }
            dict.into_any().unbind()
        }
    })
}

#[pymodule]
#[pyo3(name = "_shellgate")]
fn shellgate_module(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("PolicyError", m.py().get_type::<PolicyError>())?;
    m.add_class::<PyPolicy>()?;
    m.add_class::<PyDecision>()?;
    m.add_class::<PyReason>()?;
    m.add_class::<PyTraceStep>()?;
    m.add_class::<PyDiagnostic>()?;
    m.add_class::<PyRedactor>()?;
    m.add_class::<PyGuard>()?;
    m.add_function(wrap_pyfunction!(redact, m)?)?;
    m.add_function(wrap_pyfunction!(truncate, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
