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

/// Parses an RFC 3339 `date-time` (RFC 3339 §5.6), the one reader of
/// timestamps for every document, payload and command line.
///
/// The `time` crate's reader accepts any one character between the date
/// and the time; the grammar has `"T"` there (case-insensitive, as every
/// ABNF string). `full-date` is always ten bytes, so byte 10 is checked
/// first: `2026-02-09X14:30:00Z` and `2026-02-09 14:30:00Z` are refused.
pub fn parse_rfc3339(s: &str) -> Option<time::OffsetDateTime> {
    if !matches!(s.as_bytes().get(10), Some(b'T' | b't')) {
        return None;
    }
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

// ---------------------------------------------------------------- typed reads
//
// Each document has two readers: the checked one above (a `Value` tree,
// every violation named with its JSON pointer) and a typed one (serde
// straight from the bytes into the document's struct, then its rules as
// plain tests). The typed read answers only when it finds nothing wrong;
// anything it refuses goes to the checked reader, which decides. So the
// typed read must never accept what the checked one refuses. serde is
// looser in four places, each closed below: it skips a field the struct
// does not know without checking its text (closed by reading the whole
// text first, [`Checked`]); a struct also reads from a JSON array of its
// fields in order ([`object`]); a unit enum also reads from
// `{"VARIANT": null}` ([`string_enum`]); a missing `Option` field reads as
// `None` ([`nullable`], for a field that must be present). Each document's
// tests, `tests/readers_agree.rs` and the fuzz targets pin the two readers
// to the same answer over damaged documents.

use serde::de::{self, Deserialize, Deserializer, MapAccess, Visitor};
use std::fmt;
use std::marker::PhantomData;

/// Reads `bytes` as `T` straight from JSON, only when it is a JSON object
/// (a struct would also read from an array).
///
/// The whole text is first read as a `Value` tree would read it, keeping
/// nothing ([`Checked`]): serde skips a field a struct does not know
/// without checking its bytes, escapes or numbers, where a `Value` tree
/// refuses a string that is not UTF-8, a lone surrogate escape and a number
/// out of range wherever they are.
pub(crate) fn typed<T: de::DeserializeOwned>(bytes: &[u8]) -> Option<T> {
    let text = std::str::from_utf8(bytes).ok()?;
    if !text
        .trim_start_matches([' ', '\t', '\n', '\r'])
        .starts_with('{')
    {
        return None;
    }
    serde_json::from_str::<Checked>(text).ok()?;
    serde_json::from_str(text).ok()
}

/// Any JSON value, read in full (every string decoded, every number
/// parsed) and dropped: what a `Value` tree accepts, without building one.
struct Checked;

impl<'de> Deserialize<'de> for Checked {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(CheckedVisitor)
    }
}

struct CheckedVisitor;

impl<'de> Visitor<'de> for CheckedVisitor {
    type Value = Checked;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Checked, E> {
        Ok(Checked)
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Checked, E> {
        Ok(Checked)
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Checked, E> {
        Ok(Checked)
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Checked, E> {
        Ok(Checked)
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<Checked, E> {
        Ok(Checked)
    }
    fn visit_unit<E: de::Error>(self) -> Result<Checked, E> {
        Ok(Checked)
    }
    fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<Checked, A::Error> {
        while seq.next_element::<Checked>()?.is_some() {}
        Ok(Checked)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Checked, A::Error> {
        while map.next_entry::<Checked, Checked>()?.is_some() {}
        Ok(Checked)
    }
}

struct ObjectVisitor<T>(PhantomData<T>);

impl<'de, T: Deserialize<'de>> Visitor<'de> for ObjectVisitor<T> {
    type Value = T;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON object")
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<T, A::Error> {
        T::deserialize(de::value::MapAccessDeserializer::new(map))
    }
}

/// `deserialize_with` for a struct field: only a JSON object.
pub(crate) fn object<'de, D: Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<T, D::Error> {
    d.deserialize_map(ObjectVisitor(PhantomData))
}

struct StringVisitor<T>(PhantomData<T>);

impl<'de, T: Deserialize<'de>> Visitor<'de> for StringVisitor<T> {
    type Value = T;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON string")
    }
    fn visit_str<E: de::Error>(self, s: &str) -> Result<T, E> {
        T::deserialize(de::value::StrDeserializer::<E>::new(s))
    }
}

/// `deserialize_with` for a unit enum field: only a JSON string.
pub(crate) fn string_enum<'de, D: Deserializer<'de>, T: Deserialize<'de>>(
    d: D,
) -> Result<T, D::Error> {
    d.deserialize_str(StringVisitor(PhantomData))
}

/// A value read by [`object`] (for an `Option` of it).
struct AsObject<T>(T);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for AsObject<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        object(d).map(AsObject)
    }
}

/// A value read by [`string_enum`] (for an `Option` of it).
struct AsString<T>(T);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for AsString<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        string_enum(d).map(AsString)
    }
}

/// `deserialize_with` for an optional unit enum field (with
/// `#[serde(default)]`): `null` or a JSON string.
pub(crate) fn option_string_enum<'de, D: Deserializer<'de>, T: Deserialize<'de>>(
    d: D,
) -> Result<Option<T>, D::Error> {
    Ok(Option::<AsString<T>>::deserialize(d)?.map(|v| v.0))
}

/// `deserialize_with` for an optional struct field (with
/// `#[serde(default)]`): `null` or a JSON object.
pub(crate) fn option_object<'de, D: Deserializer<'de>, T: Deserialize<'de>>(
    d: D,
) -> Result<Option<T>, D::Error> {
    Ok(Option::<AsObject<T>>::deserialize(d)?.map(|v| v.0))
}

/// `deserialize_with` for a field that must be present but may be `null`
/// (serde's derive would read a missing `Option` field as `None`).
pub(crate) fn nullable<'de, D: Deserializer<'de>, T: Deserialize<'de>>(
    d: D,
) -> Result<Option<T>, D::Error> {
    Option::<T>::deserialize(d)
}

/// The checks' allowance for a timestamp: an RFC 3339 string.
pub(crate) fn is_rfc3339(s: &str) -> bool {
    parse_rfc3339(s).is_some()
}

/// One damage to a document: a value removed, or replaced.
#[cfg(test)]
#[derive(Debug, Clone)]
enum Damage {
    Remove(Vec<String>),
    Set(Vec<String>, Value),
}

#[cfg(test)]
impl Damage {
    /// Applies this damage to `root` when its path is still there.
    fn apply(&self, root: &mut Value) {
        match self {
            Damage::Remove(path) => {
                if let Some((last, parent)) = path.split_last() {
                    match value_at_mut(root, parent) {
                        Some(Value::Object(map)) => {
                            map.remove(last);
                        }
                        Some(Value::Array(items)) => {
                            if let Ok(i) = last.parse::<usize>()
                                && i < items.len()
                            {
                                items.remove(i);
                            }
                        }
                        _ => {}
                    }
                }
            }
            Damage::Set(path, with) => {
                if let Some(v) = value_at_mut(root, path) {
                    *v = with.clone();
                }
            }
        }
    }
}

/// Every damage of a good document: each value at every depth removed,
/// replaced by each of a pool of JSON values (the `extra` strings too) and,
/// for an object, by the array of its values.
#[cfg(test)]
fn damages(root: &Value, extra: &[&str]) -> Vec<Damage> {
    use serde_json::json;
    let mut pool = vec![
        json!(null),
        json!(true),
        json!(false),
        json!(0),
        json!(1),
        json!(-1),
        json!(1.5),
        json!(u64::MAX),
        json!(""),
        json!(" "),
        json!("x"),
        json!("2026-11-25T04:00:00Z"),
        json!([]),
        json!(["x"]),
        json!([" "]),
        json!([1]),
        json!({}),
        json!({"x": 1}),
        json!({"x": "y"}),
        json!({"PASS": null}),
    ];
    pool.extend(extra.iter().map(|s| json!(s)));
    // The map form serde's derive reads a unit enum from.
    pool.extend(extra.iter().map(|s| json!({ *s: null })));
    let mut paths = Vec::new();
    collect_paths(root, &mut Vec::new(), &mut paths);
    let mut out = Vec::new();
    for path in paths {
        if !path.is_empty() {
            out.push(Damage::Remove(path.clone()));
        }
        if let Some(Value::Object(map)) = value_at(root, &path) {
            out.push(Damage::Set(
                path.clone(),
                Value::Array(map.values().cloned().collect()),
            ));
        }
        for with in &pool {
            out.push(Damage::Set(path.clone(), with.clone()));
        }
    }
    out
}

/// Damaged copies of a good document: each damage of [`damages`] alone;
/// a field nobody reads holding bytes that are not UTF-8, a lone surrogate
/// escape or a number out of range; a string value that is not UTF-8;
/// every object with its first key repeated.
#[cfg(test)]
fn damaged_copies(good: &str, extra: &[&str]) -> Vec<Vec<u8>> {
    let root: Value = serde_json::from_str(good).expect("a good document");
    let mut out = Vec::new();
    for damage in damages(&root, extra) {
        let mut copy = root.clone();
        damage.apply(&mut copy);
        out.push(serde_json::to_vec(&copy).expect("json"));
    }
    let mut paths = Vec::new();
    collect_paths(&root, &mut Vec::new(), &mut paths);
    let text = serde_json::to_string(&root).expect("json");
    // Bytes that are not UTF-8: in a field nobody reads, and in the first
    // string value.
    let mut unknown = b"{\"zz-unknown\": \"\xff\", ".to_vec();
    unknown.extend_from_slice(&text.as_bytes()[1..]);
    out.push(unknown);
    // What a `Value` tree refuses and serde skips in a field it does not
    // know: lone surrogates, numbers out of range.
    let long = "9".repeat(400);
    for odd in [
        r#""\ud800""#,
        r#""\udc00x""#,
        r#""\ud800\u0041""#,
        r#"["\ud800"]"#,
        r#"{"\ud800": 1}"#,
        "1e999",
        "-1e999",
        long.as_str(),
        "[1e999]",
    ] {
        out.push(format!("{{\"zz-unknown\": {odd}, {}", &text[1..]).into_bytes());
    }
    if let Some(at) = text.find(": \"").or_else(|| text.find(":\"")) {
        let mut bytes = text.clone().into_bytes();
        if let Some(quote) = bytes[at..].iter().position(|b| *b == b'"') {
            bytes.insert(at + quote + 1, 0xfe);
            out.push(bytes);
        }
    }
    for path in paths {
        if let Some(here @ Value::Object(map)) = value_at(&root, &path)
            && let Some((key, value)) = map.iter().next()
        {
            let object = serde_json::to_string(here).expect("json");
            let repeated = format!(
                "{}, {}: {}}}",
                &object[..object.len() - 1],
                serde_json::to_string(key).expect("json"),
                serde_json::to_string(value).expect("json")
            );
            out.push(text.replacen(&object, &repeated, 1).into_bytes());
        }
    }
    out
}

/// Pins a document's typed reader (`parse`) to its checked one: the same
/// answer for every damaged copy of each good document, and for random
/// combinations of two to four damages (proptest). Good documents must be
/// read by the typed reader; at least a few damaged copies must still be
/// valid, so the test reaches the typed reader's acceptance.
#[cfg(test)]
pub(crate) fn assert_readers_agree<T: PartialEq + fmt::Debug>(
    goods: &[&str],
    extra: &[&str],
    typed_read: impl Fn(&[u8]) -> bool,
    parse: impl Fn(&[u8]) -> Result<T, Vec<Violation>>,
    parse_checked: impl Fn(&[u8]) -> Result<T, Vec<Violation>>,
) {
    use proptest::prelude::*;
    use proptest::test_runner::{Config, TestRunner};
    let mut valid = 0;
    for good in goods {
        assert!(
            typed_read(good.as_bytes()),
            "the typed reader refuses {good}"
        );
        for doc in damaged_copies(good, extra) {
            let checked = parse_checked(&doc);
            assert_eq!(parse(&doc), checked, "{}", String::from_utf8_lossy(&doc));
            valid += usize::from(checked.is_ok());
        }
    }
    assert!(valid > 10, "only {valid} damaged copies were valid");
    let roots: Vec<Value> = goods
        .iter()
        .map(|g| serde_json::from_str(g).expect("a good document"))
        .collect();
    let all: Vec<Vec<Damage>> = roots.iter().map(|r| damages(r, extra)).collect();
    let mut runner = TestRunner::new(Config {
        cases: 512,
        failure_persistence: None,
        ..Config::default()
    });
    let picks = (0..roots.len()).prop_flat_map(|doc| {
        (
            Just(doc),
            proptest::collection::vec(any::<proptest::sample::Index>(), 2..=4),
        )
    });
    runner
        .run(&picks, |(doc, which)| {
            let mut copy = roots[doc].clone();
            for w in which {
                w.get(&all[doc]).apply(&mut copy);
            }
            let bytes = serde_json::to_vec(&copy).expect("json");
            prop_assert_eq!(parse(&bytes), parse_checked(&bytes), "{}", copy);
            Ok(())
        })
        .expect("the two readers agree");
}

#[cfg(test)]
fn collect_paths(value: &Value, at: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
    out.push(at.clone());
    match value {
        Value::Object(map) => {
            for (k, v) in map {
                at.push(k.clone());
                collect_paths(v, at, out);
                at.pop();
            }
        }
        Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                at.push(i.to_string());
                collect_paths(v, at, out);
                at.pop();
            }
        }
        _ => {}
    }
}

#[cfg(test)]
fn value_at<'v>(value: &'v Value, path: &[String]) -> Option<&'v Value> {
    path.iter().try_fold(value, |v, k| match v {
        Value::Object(map) => map.get(k),
        Value::Array(items) => items.get(k.parse::<usize>().ok()?),
        _ => None,
    })
}

#[cfg(test)]
fn value_at_mut<'v>(value: &'v mut Value, path: &[String]) -> Option<&'v mut Value> {
    path.iter().try_fold(value, |v, k| match v {
        Value::Object(map) => map.get_mut(k),
        Value::Array(items) => items.get_mut(k.parse::<usize>().ok()?),
        _ => None,
    })
}

#[cfg(test)]
mod timestamp_tests {
    use super::parse_rfc3339;

    #[test]
    fn only_t_separates_date_and_time() {
        for ok in [
            "2026-02-09T14:30:00Z",
            "2026-02-09t14:30:00z",
            "2026-02-09T14:30:00.123456789+01:00",
        ] {
            assert!(parse_rfc3339(ok).is_some(), "{ok} is RFC 3339");
        }
        for refused in [
            "2026-02-09X14:30:00Z",
            "2026-02-09 14:30:00Z",
            "2026-02-09_14:30:00Z",
            "2026-02-09",
            "",
            "2026-02-09T14:30:00",
        ] {
            assert!(parse_rfc3339(refused).is_none(), "{refused:?} is not");
        }
    }
}
