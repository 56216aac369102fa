//! SARIF 2.1.0 output, for code-scanning tools (GitHub's `upload-sarif` and the like).
//!
//! One [`SarifResult`] per refused command (or per lint finding). Results in a file carry a
//! physical location (`artifactLocation.uri` and a `region` with 1-based lines and columns
//! counted in Unicode code points, which the run declares with `columnKind`); commands given
//! on the command line carry a logical location named after the command instead.

use std::collections::BTreeMap;

use serde_json::{json, Value};

/// The `$schema` of a SARIF 2.1.0 log.
pub const SCHEMA: &str = "https://json.schemastore.org/sarif-2.1.0.json";

/// The severity of a result (`level` in SARIF).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SarifLevel {
    /// A refusal (deny) or a policy that does not load.
    Error,
    /// Needs approval (ask), or a lint warning.
    Warning,
    /// Informational.
    Note,
}

impl SarifLevel {
    fn as_str(self) -> &'static str {
        match self {
            SarifLevel::Error => "error",
            SarifLevel::Warning => "warning",
            SarifLevel::Note => "note",
        }
    }
}

/// Where a result is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SarifLocation {
    /// A place in a file. Lines and columns are 1-based; columns count Unicode code points.
    File {
        /// The file, as a relative path or URI.
        uri: String,
        /// First line.
        start_line: usize,
        /// First column.
        start_column: usize,
        /// Last line, if known.
        end_line: Option<usize>,
        /// Column just past the end, if known.
        end_column: Option<usize>,
    },
    /// A command that is not in a file (given on the command line or on stdin).
    Command {
        /// The command text.
        text: String,
        /// Its position in the input (0-based).
        index: usize,
    },
}

/// One result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SarifResult {
    /// The rule id: a stable reason or diagnostic code such as `program-not-allowed`.
    pub rule_id: String,
    /// Error or warning.
    pub level: SarifLevel,
    /// What is wrong, in plain text.
    pub message: String,
    /// Where.
    pub location: SarifLocation,
}

/// A complete SARIF 2.1.0 log with one run of `policy-check`. `rules[]` lists every rule id
/// that occurs in `results`, and each result points at its rule with `ruleIndex`.
pub fn log(results: &[SarifResult]) -> Value {
    let mut rule_index: BTreeMap<&str, usize> = BTreeMap::new();
    for r in results {
        let next = rule_index.len();
        rule_index.entry(r.rule_id.as_str()).or_insert(next);
    }
    let mut rules: Vec<(&str, usize)> = rule_index.iter().map(|(k, v)| (*k, *v)).collect();
    rules.sort_by_key(|(_, i)| *i);
    let rules: Vec<Value> = rules
        .iter()
        .map(|(id, _)| {
            json!({
                "id": id,
                "name": pascal_case(id),
                "shortDescription": { "text": describe(id) },
            })
        })
        .collect();
    let results: Vec<Value> = results
        .iter()
        .map(|r| {
            let location = match &r.location {
                SarifLocation::File {
                    uri,
                    start_line,
                    start_column,
                    end_line,
                    end_column,
                } => {
                    let mut region = json!({
                        "startLine": (*start_line).max(1),
                        "startColumn": (*start_column).max(1),
                    });
                    if let (Some(el), Some(ec), Some(obj)) =
                        (end_line, end_column, region.as_object_mut())
                    {
                        obj.insert("endLine".into(), json!((*el).max(*start_line).max(1)));
                        obj.insert("endColumn".into(), json!((*ec).max(1)));
                    }
                    json!({
                        "physicalLocation": {
                            "artifactLocation": { "uri": uri },
                            "region": region,
                        }
                    })
                }
                SarifLocation::Command { text, index } => json!({
                    "logicalLocations": [{
                        "name": format!("command {}", index + 1),
                        "fullyQualifiedName": text,
                        "kind": "command",
                    }]
                }),
            };
            json!({
                "ruleId": r.rule_id,
                "ruleIndex": rule_index.get(r.rule_id.as_str()).copied().unwrap_or(0),
                "level": r.level.as_str(),
                "message": { "text": r.message },
                "locations": [location],
            })
        })
        .collect();
    let mut driver = json!({
        "name": "policy-check",
        "fullName": "shellgate policy-check",
        "semanticVersion": env!("CARGO_PKG_VERSION"),
        "version": env!("CARGO_PKG_VERSION"),
        "rules": rules,
    });
    let homepage = option_env!("CARGO_PKG_REPOSITORY")
        .filter(|s| !s.is_empty())
        .or(option_env!("CARGO_PKG_HOMEPAGE").filter(|s| !s.is_empty()));
    if let (Some(uri), Some(obj)) = (homepage, driver.as_object_mut()) {
        obj.insert("informationUri".into(), json!(uri));
    }
    json!({
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": { "driver": driver },
            "columnKind": "unicodeCodePoints",
            "results": results,
        }]
    })
}

/// `program-not-allowed` → `ProgramNotAllowed`: the readable `name` SARIF wants beside the
/// opaque `id`.
fn pascal_case(code: &str) -> String {
    code.split('-')
        .map(|w| {
            let mut c = w.chars();
            c.next().map_or_else(String::new, |f| {
                f.to_uppercase().chain(c).collect::<String>()
            })
        })
        .collect()
}

/// A one-line description of a reason or diagnostic code, for `rules[].shortDescription`:
/// the description in `src/codes.rs`, or the code itself for an id of neither family.
pub fn describe(code: &str) -> String {
    crate::codes::describe(code).map_or_else(|| code.to_string(), str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shape_follows_2_1_0() {
        let v = log(&[
            SarifResult {
                rule_id: "program-not-allowed".into(),
                level: SarifLevel::Error,
                message: "rm is not allowed".into(),
                location: SarifLocation::File {
                    uri: "scripts/build.sh".into(),
                    start_line: 3,
                    start_column: 1,
                    end_line: Some(3),
                    end_column: Some(10),
                },
            },
            SarifResult {
                rule_id: "option-denied".into(),
                level: SarifLevel::Warning,
                message: "x".into(),
                location: SarifLocation::Command {
                    text: "sort -o x".into(),
                    index: 0,
                },
            },
            SarifResult {
                rule_id: "program-not-allowed".into(),
                level: SarifLevel::Error,
                message: "y".into(),
                location: SarifLocation::Command {
                    text: "curl x".into(),
                    index: 1,
                },
            },
        ]);
        assert_eq!(v["version"], "2.1.0");
        assert_eq!(v["$schema"], SCHEMA);
        let run = &v["runs"][0];
        assert_eq!(run["tool"]["driver"]["name"], "policy-check");
        let rules = run["tool"]["driver"]["rules"].as_array().expect("rules");
        assert_eq!(rules.len(), 2);
        assert_eq!(rules[0]["id"], "program-not-allowed");
        assert_eq!(rules[0]["name"], "ProgramNotAllowed");
        let results = run["results"].as_array().expect("results");
        assert_eq!(results.len(), 3);
        assert_eq!(results[0]["ruleIndex"], 0);
        assert_eq!(results[1]["ruleIndex"], 1);
        assert_eq!(results[2]["ruleIndex"], 0);
        assert_eq!(results[0]["level"], "error");
        assert_eq!(results[0]["message"]["text"], "rm is not allowed");
        let phys = &results[0]["locations"][0]["physicalLocation"];
        assert_eq!(phys["artifactLocation"]["uri"], "scripts/build.sh");
        assert_eq!(phys["region"]["startLine"], 3);
        assert_eq!(phys["region"]["startColumn"], 1);
        assert_eq!(phys["region"]["endColumn"], 10);
        assert_eq!(
            results[1]["locations"][0]["logicalLocations"][0]["fullyQualifiedName"],
            "sort -o x"
        );
    }
}
