//! `policy.schema.json` is generated from the policy types and kept in sync here. To update
//! it after changing `src/policy/raw.rs`:
//!
//! ```sh
//! SHELLGATE_UPDATE_SCHEMA=1 cargo test --test integration schema::
//! ```

use std::path::PathBuf;

use serde_json::Value;

fn schema_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("policy.schema.json")
}

#[test]
fn committed_schema_is_up_to_date() {
    let fresh = shellgate::policy::schema::json_schema_text();
    if std::env::var_os("SHELLGATE_UPDATE_SCHEMA").is_some_and(|v| v == "1") {
        std::fs::write(schema_path(), &fresh).expect("write policy.schema.json");
        return;
    }
    let committed = std::fs::read_to_string(schema_path()).unwrap_or_default();
    assert!(
        committed == fresh,
        "policy.schema.json is stale: run `SHELLGATE_UPDATE_SCHEMA=1 cargo test --test integration schema::` and commit it"
    );
}

/// A small validator for the subset of JSON Schema draft-07 that the generated schema uses:
/// `$ref`, `anyOf`/`oneOf`, `type`, `enum`, `properties`, `additionalProperties`, `items`,
/// `minimum`. Returns the problems found, each with its JSON path.
fn validate(root: &Value, schema: &Value, value: &Value, path: &str, errors: &mut Vec<String>) {
    if let Some(r) = schema.get("$ref").and_then(Value::as_str) {
        let name = r.trim_start_matches("#/definitions/");
        let target = &root["definitions"][name];
        assert!(!target.is_null(), "dangling $ref {r}");
        return validate(root, target, value, path, errors);
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(options) = schema.get(key).and_then(Value::as_array) {
            let attempts: Vec<Vec<String>> = options
                .iter()
                .map(|o| {
                    let mut e = Vec::new();
                    validate(root, o, value, path, &mut e);
                    e
                })
                .collect();
            if attempts.iter().any(Vec::is_empty) {
                return;
            }
            // Report the alternative that got furthest into the value.
            let best = attempts.into_iter().max_by_key(|e| {
                e.first()
                    .map_or(0, |m| m.split(':').next().map_or(0, str::len))
            });
            errors.extend(best.unwrap_or_default());
            return;
        }
    }
    if let Some(allowed) = schema.get("enum").and_then(Value::as_array) {
        if !allowed.contains(value) {
            errors.push(format!("{path}: {value} is not one of {allowed:?}"));
        }
    }
    if let Some(c) = schema.get("const") {
        if c != value {
            errors.push(format!("{path}: {value} is not {c}"));
        }
    }
    if let Some(t) = schema.get("type") {
        let types: Vec<&str> = match t {
            Value::String(s) => vec![s.as_str()],
            Value::Array(a) => a.iter().filter_map(Value::as_str).collect(),
            _ => vec![],
        };
        let ok = types.iter().any(|t| match *t {
            "string" => value.is_string(),
            "boolean" => value.is_boolean(),
            "integer" => value.is_i64() || value.is_u64(),
            "number" => value.is_number(),
            "array" => value.is_array(),
            "object" => value.is_object(),
            "null" => value.is_null(),
            _ => false,
        });
        if !ok {
            errors.push(format!("{path}: {value} is not of type {types:?}"));
            return;
        }
    }
    if let (Some(min), Some(n)) = (
        schema.get("minimum").and_then(Value::as_f64),
        value.as_f64(),
    ) {
        if n < min {
            errors.push(format!("{path}: {n} < {min}"));
        }
    }
    if let Some(obj) = value.as_object() {
        let props = schema.get("properties").and_then(Value::as_object);
        for (k, v) in obj {
            let sub = format!("{path}.{k}");
            match props.and_then(|p| p.get(k)) {
                Some(s) => validate(root, s, v, &sub, errors),
                None => match schema.get("additionalProperties") {
                    Some(Value::Bool(false)) => errors.push(format!("{sub}: unknown key")),
                    Some(s @ Value::Object(_)) => validate(root, s, v, &sub, errors),
                    _ => {}
                },
            }
        }
    }
    if let (Some(items), Some(arr)) = (schema.get("items"), value.as_array()) {
        for (i, v) in arr.iter().enumerate() {
            validate(root, items, v, &format!("{path}[{i}]"), errors);
        }
    }
}

fn check_toml(text: &str) -> Vec<String> {
    let schema = shellgate::policy::schema::json_schema();
    let doc: toml::Value = toml::from_str(text).expect("TOML");
    let value = serde_json::to_value(doc).expect("JSON");
    let mut errors = Vec::new();
    validate(&schema, &schema, &value, "$", &mut errors);
    errors
}

#[test]
fn shipped_policies_validate_against_the_schema() {
    for (name, text) in shellgate::policy::SHIPPED {
        let errors = check_toml(text);
        assert!(errors.is_empty(), "{name}: {errors:#?}");
    }
}

#[test]
fn schema_rejects_what_the_loader_rejects() {
    let errors = check_toml("[policy]\ndefault = \"maybe\"\n[programs.ls]\noperand = \"x\"\n");
    assert!(
        errors.iter().any(|e| e.starts_with("$.policy.default")),
        "{errors:?}"
    );
    assert!(
        errors
            .iter()
            .any(|e| e == "$.programs.ls.operand: unknown key"),
        "{errors:?}"
    );
    assert!(!check_toml("[shell]\nsubstitutions = \"inner\"\n")
        .iter()
        .any(|_| true));
    assert!(!check_toml("[shell]\nsubstitutions = \"sometimes\"\n").is_empty());
}

#[test]
fn schema_is_draft_07_with_descriptions() {
    let schema = shellgate::policy::schema::json_schema();
    assert_eq!(schema["$schema"], "http://json-schema.org/draft-07/schema#");
    assert_eq!(schema["title"], "shellgate policy");
    assert!(schema["properties"]["programs"]["description"].is_string());
    assert!(
        schema["definitions"]["RawProgram"]["properties"]["deny_options"]["description"]
            .is_string()
    );
}
