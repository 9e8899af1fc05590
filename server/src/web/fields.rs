//! What a JSON API request's fields mean: every route reads its query and its body through
//! these, so a field is read one way everywhere and each refusal names the field (a 400, nothing
//! written). A typed text (a whole number, a run id) is read by `app::fields`, the same function
//! the server functions use for the pages' forms.

use std::collections::HashMap;

use app::api::ApiError;
use app::fields;
use axum::body::Bytes;
use serde_json::{Map, Value};

/// A query's parameters.
pub type Query = HashMap<String, String>;

/// A whole-number query parameter, if given.
pub fn whole(query: &Query, name: &str) -> Result<Option<i64>, ApiError> {
    query
        .get(name)
        .map(|v| fields::whole_number(name, v))
        .transpose()
}

/// A true/false query parameter: absent is false; `?wait` alone is true.
pub fn flag(query: &Query, name: &str) -> Result<bool, ApiError> {
    match query.get(name).map(String::as_str) {
        None | Some("false") | Some("0") => Ok(false),
        Some("true") | Some("1") | Some("") => Ok(true),
        Some(other) => Err(ApiError::field(
            name,
            format!("must be true or false, got {other:?}"),
        )),
    }
}

/// A query parameter that must be given; `expected` says what it holds.
pub fn required<'q>(query: &'q Query, name: &str, expected: &str) -> Result<&'q str, ApiError> {
    query
        .get(name)
        .map(String::as_str)
        .ok_or_else(|| ApiError::field(name, format!("required: {expected}")))
}

/// A request's body: a JSON object.
pub struct Body(Map<String, Value>);

impl Body {
    /// The body as a JSON object, or a 400 saying what is wrong with it.
    pub fn parse(bytes: &Bytes) -> Result<Self, ApiError> {
        match serde_json::from_slice(bytes) {
            Ok(Value::Object(map)) => Ok(Self(map)),
            Ok(_) => Err(ApiError::field("body", "must be a JSON object")),
            Err(e) => Err(ApiError::field("body", format!("not JSON: {e}"))),
        }
    }

    pub fn has(&self, name: &str) -> bool {
        self.0.contains_key(name)
    }

    /// The body's fields, in order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &Value)> {
        self.0.iter().map(|(k, v)| (k.as_str(), v))
    }

    /// A field given as text (a number is taken as its digits), `None` when absent or null.
    pub fn optional_text(&self, name: &str, expected: &str) -> Result<Option<String>, ApiError> {
        match self.0.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(value) => text_of(name, value, expected).map(Some),
        }
    }

    /// A field that must be given as text.
    pub fn text(&self, name: &str) -> Result<String, ApiError> {
        self.optional_text(name, "required, as text")?
            .ok_or_else(|| ApiError::field(name, "required, as text"))
    }

    /// A true/false field, `None` when absent or null.
    pub fn flag(&self, name: &str) -> Result<Option<bool>, ApiError> {
        match self.0.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(value) => flag_of(name, value).map(Some),
        }
    }

    /// A count (a whole number, 0 or more) field, `None` when absent or null; `expected` says
    /// what it counts.
    pub fn count(&self, name: &str, expected: &str) -> Result<Option<u64>, ApiError> {
        match self.0.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(value) => count_of(name, value, expected).map(Some),
        }
    }
}

/// A value given as text: a string, or a number as its digits.
pub fn text_of(name: &str, value: &Value, expected: &str) -> Result<String, ApiError> {
    match value {
        Value::String(s) => Ok(s.clone()),
        Value::Number(n) => Ok(n.to_string()),
        _ => Err(ApiError::field(name, expected)),
    }
}

/// A value that must be true or false.
pub fn flag_of(name: &str, value: &Value) -> Result<bool, ApiError> {
    value
        .as_bool()
        .ok_or_else(|| ApiError::field(name, "true or false"))
}

/// A value that must be a whole number, 0 or more.
pub fn count_of(name: &str, value: &Value, expected: &str) -> Result<u64, ApiError> {
    value
        .as_u64()
        .ok_or_else(|| ApiError::field(name, expected))
}

#[cfg(test)]
mod tests {
    use super::*;

    trait Named {
        fn field(&self) -> Option<&str>;
    }

    impl Named for ApiError {
        fn field(&self) -> Option<&str> {
            match self {
                ApiError::Field { field, .. } => Some(field),
                _ => None,
            }
        }
    }

    #[test]
    fn each_field_is_read_one_way_and_refused_by_its_name() {
        let body = Body::parse(&Bytes::from(
            r#"{"group": "g", "n": 7, "max": -1, "on": true, "off": "yes", "gone": null}"#,
        ))
        .unwrap();
        assert_eq!(body.text("group").unwrap(), "g");
        assert_eq!(body.text("n").unwrap(), "7");
        assert_eq!(body.text("missing").unwrap_err().field(), Some("missing"));
        assert_eq!(body.optional_text("gone", "text").unwrap(), None);
        assert_eq!(body.flag("on").unwrap(), Some(true));
        assert_eq!(body.flag("gone").unwrap(), None);
        assert_eq!(body.flag("off").unwrap_err().field(), Some("off"));
        assert_eq!(body.count("n", "a count").unwrap(), Some(7));
        assert_eq!(
            body.count("max", "a count").unwrap_err().field(),
            Some("max")
        );
        for bad in ["[1]", "not json", "\"text\""] {
            let refused = Body::parse(&Bytes::from(bad)).err().unwrap();
            assert_eq!(refused.field(), Some("body"), "{bad}");
        }
        let query: Query = [("wait", ""), ("n", "x"), ("maybe", "yes")]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        assert!(flag(&query, "wait").unwrap());
        assert!(!flag(&query, "absent").unwrap());
        assert_eq!(flag(&query, "maybe").unwrap_err().field(), Some("maybe"));
        assert_eq!(whole(&query, "n").unwrap_err().field(), Some("n"));
        assert_eq!(whole(&query, "absent").unwrap(), None);
        assert!(required(&query, "key", "a key").is_err());
    }
}
