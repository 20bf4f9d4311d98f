//! Field readers that collect every violation instead of stopping at the first
//! (parse, don't validate). Paths are JSON pointers.

use crate::Violation;
use serde_json::{Map, Value};

/// Decodes `bytes` as one JSON value; a syntax error becomes a single
/// `<doc>.json_syntax` violation with its line number.
pub(crate) fn parse_value(doc: &str, bytes: &[u8]) -> Result<Value, Vec<Violation>> {
    serde_json::from_slice::<Value>(bytes).map_err(|err| {
        let line = u32::try_from(err.line()).unwrap_or(u32::MAX);
        vec![
            Violation::new(
                &format!("{doc}.json_syntax"),
                "",
                format!("not valid JSON: {err}"),
            )
            .at_line(line),
        ]
    })
}

pub(crate) fn pointer(base: &str, key: &str) -> String {
    let escaped = key.replace('~', "~0").replace('/', "~1");
    format!("{base}/{escaped}")
}

/// Collects violations while reading one document.
pub(crate) struct Reader {
    pub doc: &'static str,
    pub violations: Vec<Violation>,
}

impl Reader {
    pub fn new(doc: &'static str) -> Self {
        Self {
            doc,
            violations: Vec::new(),
        }
    }

    pub fn violate(&mut self, rule: &str, path: impl Into<String>, message: impl Into<String>) {
        self.violations.push(Violation::new(rule, path, message));
    }

    pub fn root<'v>(&mut self, value: &'v Value) -> Option<&'v Map<String, Value>> {
        let doc = self.doc;
        self.object(value, "", &format!("{doc}.object"))
    }

    pub fn object<'v>(
        &mut self,
        value: &'v Value,
        path: &str,
        rule: &str,
    ) -> Option<&'v Map<String, Value>> {
        match value.as_object() {
            Some(map) => Some(map),
            None => {
                self.violate(
                    rule,
                    path,
                    format!("must be a JSON object, found {}", kind(value)),
                );
                None
            }
        }
    }

    /// A required key; a missing key is a `<rule>` violation.
    pub fn required<'v>(
        &mut self,
        map: &'v Map<String, Value>,
        base: &str,
        key: &str,
        rule: &str,
    ) -> Option<&'v Value> {
        let value = map.get(key);
        if value.is_none() {
            self.violate(
                rule,
                pointer(base, key),
                format!("required field `{key}` is missing"),
            );
        }
        value
    }

    pub fn string(&mut self, value: &Value, path: &str, rule: &str) -> Option<String> {
        match value.as_str() {
            Some(s) => Some(s.to_owned()),
            None => {
                self.violate(
                    rule,
                    path,
                    format!("must be a string, found {}", kind(value)),
                );
                None
            }
        }
    }

    pub fn non_empty_string(&mut self, value: &Value, path: &str, rule: &str) -> Option<String> {
        let s = self.string(value, path, rule)?;
        if s.trim().is_empty() {
            self.violate(rule, path, "must not be empty");
            return None;
        }
        Some(s)
    }

    pub fn bool(&mut self, value: &Value, path: &str, rule: &str) -> Option<bool> {
        match value.as_bool() {
            Some(b) => Some(b),
            None => {
                self.violate(
                    rule,
                    path,
                    format!("must be a boolean, found {}", kind(value)),
                );
                None
            }
        }
    }

    pub fn integer(&mut self, value: &Value, path: &str, rule: &str) -> Option<i64> {
        match value.as_i64() {
            Some(i) => Some(i),
            None => {
                self.violate(
                    rule,
                    path,
                    format!("must be an integer, found {}", kind(value)),
                );
                None
            }
        }
    }

    pub fn string_array(&mut self, value: &Value, path: &str, rule: &str) -> Option<Vec<String>> {
        let Some(items) = value.as_array() else {
            self.violate(
                rule,
                path,
                format!("must be an array of strings, found {}", kind(value)),
            );
            return None;
        };
        let mut out = Vec::with_capacity(items.len());
        let mut ok = true;
        for (i, item) in items.iter().enumerate() {
            match item.as_str() {
                Some(s) => out.push(s.to_owned()),
                None => {
                    ok = false;
                    self.violate(
                        rule,
                        format!("{path}/{i}"),
                        format!("must be a string, found {}", kind(item)),
                    );
                }
            }
        }
        ok.then_some(out)
    }

    /// An RFC 3339 timestamp string.
    pub fn timestamp(
        &mut self,
        value: &Value,
        path: &str,
        rule: &str,
    ) -> Option<time::OffsetDateTime> {
        let s = self.string(value, path, rule)?;
        match parse_rfc3339(&s) {
            Some(t) => Some(t),
            None => {
                self.violate(rule, path, format!("{s:?} is not an RFC 3339 timestamp"));
                None
            }
        }
    }
}

pub(crate) fn parse_rfc3339(s: &str) -> Option<time::OffsetDateTime> {
    time::OffsetDateTime::parse(s, &time::format_description::well_known::Rfc3339).ok()
}

pub(crate) fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}
