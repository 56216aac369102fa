//! The JSON a model sends, through `Guard::handle_json` (what `policy-check serve` answers)
//! under the shipped read-only policy with a recording fake executor. Properties: never
//! panics; the executor runs only commands the policy allows, never one it denies; a value
//! that is not a call gets no answer and runs nothing; a call gets one answer that serialises
//! to one line of JSON: for a block, a `tool_result` quoting the block's string `id` (empty
//! when there is none), and the executor ran at most the exact command of a valid bash call;
//! for a message, one `tool_result` per call at most, and no more commands than results.
#![no_main]

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::{Arc, OnceLock};

use libfuzzer_sys::fuzz_target;
use serde_json::Value;
use shellgate::middleware::{from_fn, Answer, Guard, NotACall, Output};
use shellgate::{Context, Policy};

fn policy() -> Arc<Policy> {
    static P: OnceLock<Arc<Policy>> = OnceLock::new();
    P.get_or_init(|| Arc::new(Policy::shipped("read-only").expect("valid shipped policy")))
        .clone()
}

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    // Malformed JSON never reaches the guard (serve answers it with an error line).
    let Ok(input) = serde_json::from_str::<Value>(&text) else {
        return;
    };
    let ran: Rc<RefCell<Vec<String>>> = Rc::default();
    let log = ran.clone();
    let executor = from_fn(move |command: &str| {
        log.borrow_mut().push(command.to_string());
        Ok(Output::new(b"fake output\n".to_vec(), 0))
    });
    let ctx = Context::example();
    let mut guard = Guard::new(policy(), ctx.clone(), executor);
    let answer = guard.handle_json(&input);
    drop(guard);

    // Whatever the input, the executor ran only allowed commands.
    let ran = ran.borrow();
    for c in ran.iter() {
        assert!(
            policy().evaluate(&ctx, c).is_allowed(),
            "ran the denied command {c:?}"
        );
    }
    let answer = match answer {
        Err(NotACall) => {
            assert!(
                ran.is_empty(),
                "ran {ran:?} for what is not a call: {text:?}"
            );
            return;
        }
        Ok(a) => a,
    };

    // One answer, one line of JSON.
    let line = serde_json::to_string(&answer).expect("an answer serialises");
    assert!(!line.contains('\n'), "{line}");
    let values: Vec<Value> = serde_json::Deserializer::from_str(&line)
        .into_iter::<Value>()
        .collect::<Result<_, _>>()
        .expect("the answer parses as JSON");
    assert_eq!(values.len(), 1);

    match answer {
        Answer::Block(block) => {
            // Only the bash tool is enabled: every answer is a tool_result.
            let result = block.as_tool_result().expect("a tool_result");
            assert_eq!(values[0]["type"], "tool_result", "{line}");
            assert!(values[0]["is_error"].is_boolean());
            // The answer quotes the id of the block it answers.
            let id = input.get("id").and_then(Value::as_str).unwrap_or("");
            assert_eq!(result.tool_use_id, id, "{text:?}");
            // At most the exact command of a valid bash call ran, once.
            assert!(ran.len() <= 1, "{ran:?}");
            let command = (input.get("type").and_then(Value::as_str) == Some("tool_use")
                && input.get("name").and_then(Value::as_str) == Some("bash")
                && input.get("id").is_some_and(Value::is_string))
            .then(|| input.get("input")?.get("command")?.as_str())
            .flatten();
            match command {
                Some(c) => {
                    if let Some(r) = ran.first() {
                        assert_eq!(r, c);
                        assert!(!result.is_error, "{line}");
                    }
                }
                None => assert!(ran.is_empty(), "ran {ran:?} for {text:?}"),
            }
        }
        Answer::Message(message) => {
            let blocks = input["content"].as_array().map_or(0, Vec::len);
            assert!(message.content.len() <= blocks, "{line}");
            assert!(ran.len() <= message.content.len(), "{ran:?}");
            for r in &message.content {
                assert!(r.as_tool_result().is_some(), "{line}");
            }
            assert_eq!(values[0]["role"], "user", "{line}");
        }
    }
});
