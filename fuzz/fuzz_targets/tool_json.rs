//! The tool_use JSON a model sends, through `Guard::handle_str` under the shipped read-only
//! policy with a recording fake executor. Properties: never panics; always exactly one answer,
//! a `tool_result` that serialises to one line of JSON; the answer quotes the input's string
//! `id` (empty when there is none); and the executor runs only the exact command of a valid
//! bash call that the policy allows — never one it denies.
#![no_main]

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::{Arc, OnceLock};

use libfuzzer_sys::fuzz_target;
use serde_json::Value;
use shellgate::middleware::{from_fn, Guard, Output};
use shellgate::{Context, Policy};

fn policy() -> Arc<Policy> {
    static P: OnceLock<Arc<Policy>> = OnceLock::new();
    P.get_or_init(|| Arc::new(Policy::shipped("read-only").expect("valid shipped policy")))
        .clone()
}

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let ran: Rc<RefCell<Vec<String>>> = Rc::default();
    let log = ran.clone();
    let executor = from_fn(move |command: &str| {
        log.borrow_mut().push(command.to_string());
        Ok(Output::new(b"fake output\n".to_vec(), 0))
    });
    let ctx = Context::example();
    let mut guard = Guard::new(policy(), ctx.clone(), executor);
    let result = guard.handle_str(&text);

    // Exactly one answer, one line of JSON, shaped as a tool_result.
    let line = serde_json::to_string(&result).expect("a tool_result serialises");
    assert!(!line.contains('\n'), "{line}");
    let values: Vec<Value> = serde_json::Deserializer::from_str(&line)
        .into_iter::<Value>()
        .collect::<Result<_, _>>()
        .expect("the answer parses as JSON");
    assert_eq!(values.len(), 1);
    let answer = &values[0];
    assert_eq!(answer["type"], "tool_result", "{line}");
    assert!(answer["tool_use_id"].is_string() && answer["content"].is_string());
    assert!(answer["is_error"].is_boolean());

    // The answer quotes the id of the block it answers.
    let input: Option<Value> = serde_json::from_str(&text).ok();
    let id = input
        .as_ref()
        .and_then(|v| v.get("id"))
        .and_then(Value::as_str)
        .unwrap_or("");
    assert_eq!(result.tool_use_id, id, "{text:?}");

    // The executor runs only an allowed command, exactly as given, at most once.
    let ran = ran.borrow();
    assert!(ran.len() <= 1, "{ran:?}");
    let command = input.as_ref().and_then(|v| {
        let is_bash = v.get("type").and_then(Value::as_str) == Some("tool_use")
            && v.get("name").and_then(Value::as_str) == Some("bash")
            && v.get("id").is_some_and(Value::is_string);
        is_bash
            .then(|| v.get("input")?.get("command")?.as_str())
            .flatten()
    });
    match command {
        Some(c) => {
            let allowed = policy().evaluate(&ctx, c).is_allowed();
            if !allowed {
                assert!(ran.is_empty(), "ran the denied command {c:?}");
            }
            if let Some(r) = ran.first() {
                assert_eq!(r, c);
                assert!(allowed);
                assert!(!result.is_error, "{line}");
            }
        }
        None => assert!(ran.is_empty(), "ran {ran:?} for {text:?}"),
    }
});
