//! The JSON Schema of the policy file format, generated from the raw serde types so that it
//! cannot drift from what the loader reads. `policy.schema.json` at the repository root is
//! this output (a test keeps it in sync); editors use it to complete and check policy files.

use schemars::generate::SchemaSettings;

use super::raw::RawPolicy;

/// The JSON Schema (draft-07, which taplo and Even Better TOML read) of a policy file.
pub fn json_schema() -> serde_json::Value {
    let generator = SchemaSettings::draft07().into_generator();
    let schema = generator.into_root_schema_for::<RawPolicy>();
    let mut value = schema.to_value();
    if let Some(obj) = value.as_object_mut() {
        obj.insert("title".into(), "shellgate policy".into());
        obj.insert(
            "description".into(),
            "A shellgate policy: which bash commands an AI agent may run (default deny). \
             See policies/read-only.toml for a commented template."
                .into(),
        );
    }
    value
}

/// [`json_schema`] as pretty-printed JSON with a trailing newline: the exact text of
/// `policy.schema.json`.
pub fn json_schema_text() -> String {
    let mut text = serde_json::to_string_pretty(&json_schema())
        .unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"));
    text.push('\n');
    text
}
