//! An order event as the shop sends it (SPEC §1): parsing and validation shared by bronze (a bad
//! message becomes a reject with its reason) and by every place a person types an event.

use std::borrow::Cow;
use std::fmt;

use serde::Deserialize;
use serde_json::value::RawValue;

/// The statuses an order goes through; anything else is refused.
pub const STATUSES: [&str; 5] = ["placed", "paid", "shipped", "delivered", "cancelled"];

mod money;
mod scan;
mod time;

pub use money::{format_cents, parse_cents};
pub use time::{format_micros, parse_time};

/// A well-formed order event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OrderEvent {
    pub order_id: i64,
    pub customer_id: String,
    pub status: String,
    /// Money in cents: the tables store `decimal(18,2)`, never a float.
    pub amount_cents: i128,
    /// Microseconds since the epoch, UTC.
    pub event_time_micros: i64,
}

/// Why a message or a typed event is not a valid order event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidEvent {
    /// The field at fault, when one is.
    pub field: Option<&'static str>,
    /// What is wrong, in words.
    pub reason: String,
}

impl fmt::Display for InvalidEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.field {
            Some(field) => write!(f, "{field}: {}", self.reason),
            None => f.write_str(&self.reason),
        }
    }
}

impl std::error::Error for InvalidEvent {}

fn invalid(field: &'static str, reason: impl Into<String>) -> InvalidEvent {
    InvalidEvent {
        field: Some(field),
        reason: reason.into(),
    }
}

/// The fields as the raw JSON text each was sent as, borrowed from the message, so each can be
/// checked on its own and named in the error. A field sent as `null` is `Some("null")`: told
/// apart from a missing one. [`scan::simple_fields`] reads them from the shape nearly every
/// message has; [`exact_fields`] from any JSON.
#[derive(Debug, Default, PartialEq, Eq)]
struct Fields<'a> {
    order_id: Option<&'a str>,
    customer_id: Option<&'a str>,
    status: Option<&'a str>,
    amount: Option<&'a str>,
    event_time: Option<&'a str>,
}

/// The fields through serde_json, which reads any JSON and words every refusal.
#[derive(Deserialize)]
struct RawEvent<'a> {
    #[serde(borrow, default, deserialize_with = "present")]
    order_id: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "present")]
    customer_id: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "present")]
    status: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "present")]
    amount: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "present")]
    event_time: Option<&'a RawValue>,
}

fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<&'de RawValue>, D::Error> {
    <&RawValue>::deserialize(d).map(Some)
}

/// Any message's fields, or why it is not a JSON object.
fn exact_fields(value: &[u8]) -> Result<Fields<'_>, InvalidEvent> {
    let raw: RawEvent = serde_json::from_slice(value).map_err(|e| InvalidEvent {
        field: None,
        reason: if std::str::from_utf8(value).is_err() {
            "not UTF-8 text".into()
        } else if e.is_data() {
            format!("not an order event object: {e}")
        } else {
            format!("not JSON: {e}")
        },
    })?;
    // serde reads a struct from an array too, its elements in field order.
    if value.trim_ascii_start().starts_with(b"[") {
        return Err(InvalidEvent {
            field: None,
            reason: "not an order event object: a JSON array".into(),
        });
    }
    fn text(v: Option<&RawValue>) -> Option<&str> {
        v.map(RawValue::get)
    }
    Ok(Fields {
        order_id: text(raw.order_id),
        customer_id: text(raw.customer_id),
        status: text(raw.status),
        amount: text(raw.amount),
        event_time: text(raw.event_time),
    })
}

/// A well-formed order event as decoded from a message, its text borrowed where the message
/// holds it unescaped: what bronze appends to its columns without a copy of its own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventRef<'a> {
    pub order_id: i64,
    pub customer_id: Cow<'a, str>,
    /// One of [`STATUSES`].
    pub status: &'static str,
    pub amount_cents: i128,
    pub event_time_micros: i64,
}

impl<'a> EventRef<'a> {
    /// Decodes and checks a Kafka message value (SPEC §1).
    pub fn parse(value: &'a [u8]) -> Result<Self, InvalidEvent> {
        match scan::simple_fields(value) {
            Some(raw) => Self::check(raw),
            None => Self::check(exact_fields(value)?),
        }
    }

    /// [`EventRef::parse`] through serde_json alone: what the fast reading is held to.
    #[cfg(test)]
    fn parse_exact(value: &'a [u8]) -> Result<Self, InvalidEvent> {
        Self::check(exact_fields(value)?)
    }

    /// Checks each field's raw text (SPEC §1), naming the first that is wrong.
    fn check(raw: Fields<'a>) -> Result<Self, InvalidEvent> {
        let order_id = required("order_id", raw.order_id)?;
        let order_id = order_id
            .parse::<i64>()
            .map_err(|_| invalid("order_id", format!("must be an integer, got {order_id}")))?;
        let customer_id = text("customer_id", required("customer_id", raw.customer_id)?)?;
        if customer_id.trim().is_empty() {
            return Err(invalid("customer_id", "must not be empty"));
        }
        let status = text("status", required("status", raw.status)?)?;
        let status = STATUSES.into_iter().find(|s| *s == status).ok_or_else(|| {
            invalid(
                "status",
                format!("must be one of {}, got {status:?}", STATUSES.join(", ")),
            )
        })?;
        let amount_cents = amount(required("amount", raw.amount)?)?;
        let event_time = text("event_time", required("event_time", raw.event_time)?)?;
        let event_time_micros = parse_time(&event_time).map_err(|r| invalid("event_time", r))?;
        Ok(Self {
            order_id,
            customer_id,
            status,
            amount_cents,
            event_time_micros,
        })
    }
}

impl OrderEvent {
    /// Parses a Kafka message value.
    pub fn parse(value: &[u8]) -> Result<Self, InvalidEvent> {
        let e = EventRef::parse(value)?;
        Ok(Self {
            order_id: e.order_id,
            customer_id: e.customer_id.into_owned(),
            status: e.status.to_owned(),
            amount_cents: e.amount_cents,
            event_time_micros: e.event_time_micros,
        })
    }

    /// The event as the JSON the shop sends (SPEC §1).
    pub fn to_json(&self) -> String {
        serde_json::json!({
            "order_id": self.order_id,
            "customer_id": self.customer_id,
            "status": self.status,
            "amount": format_cents(self.amount_cents),
            "event_time": format_micros(self.event_time_micros),
        })
        .to_string()
    }
}

fn required<'a>(field: &'static str, value: Option<&'a str>) -> Result<&'a str, InvalidEvent> {
    match value {
        Some("null") => Err(invalid(field, "must not be null")),
        Some(v) => Ok(v),
        None => Err(invalid(field, "missing")),
    }
}

/// A JSON string's text: borrowed when it holds no escape, unescaped into a copy when it does.
fn text<'a>(field: &'static str, raw: &'a str) -> Result<Cow<'a, str>, InvalidEvent> {
    match raw.strip_prefix('"').and_then(|s| s.strip_suffix('"')) {
        Some(inner) if !inner.as_bytes().contains(&b'\\') => Ok(Cow::Borrowed(inner)),
        Some(_) => serde_json::from_str::<String>(raw)
            .map(Cow::Owned)
            .map_err(|e| invalid(field, format!("{raw} is not valid text ({e})"))),
        None => Err(invalid(field, format!("must be text, got {raw}"))),
    }
}

/// An amount is a JSON number or a string holding a decimal, with at most 2 places. A number is
/// read from the digits as sent, never through a float.
fn amount(raw: &str) -> Result<i128, InvalidEvent> {
    let digits = match raw.as_bytes().first() {
        Some(b'"') => text("amount", raw)?,
        Some(b'-' | b'0'..=b'9') => Cow::Borrowed(raw),
        _ => {
            return Err(invalid(
                "amount",
                format!("must be a number or a decimal string, got {raw}"),
            ));
        }
    };
    parse_cents(digits.trim()).map_err(|r| invalid("amount", r))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> Result<OrderEvent, InvalidEvent> {
        OrderEvent::parse(s.as_bytes())
    }

    #[test]
    fn the_spec_example_parses() {
        let e = parse(r#"{"order_id": 1001, "customer_id": "C01", "status": "placed", "amount": 25.00, "event_time": "2026-10-01T09:05:00Z"}"#).unwrap();
        assert_eq!(e.order_id, 1001);
        assert_eq!(e.amount_cents, 2500);
        assert_eq!(format_micros(e.event_time_micros), "2026-10-01T09:05:00Z");
        assert_eq!(OrderEvent::parse(e.to_json().as_bytes()).unwrap(), e);
    }

    #[test]
    fn amounts_may_be_strings_and_offsets_become_utc() {
        let e = parse(r#"{"order_id": 1, "customer_id": "C", "status": "paid", "amount": "18.5", "event_time": "2026-10-01T11:05:00+02:00"}"#).unwrap();
        assert_eq!(e.amount_cents, 1850);
        assert_eq!(format_micros(e.event_time_micros), "2026-10-01T09:05:00Z");
    }

    #[test]
    fn each_bad_field_is_named() {
        let cases = [
            (
                r#"{"customer_id": "C", "status": "placed", "amount": 1, "event_time": "2026-10-01T09:05:00Z"}"#,
                Some("order_id"),
            ),
            (
                r#"{"order_id": "1", "customer_id": "C", "status": "placed", "amount": 1, "event_time": "2026-10-01T09:05:00Z"}"#,
                Some("order_id"),
            ),
            (
                r#"{"order_id": 1.5, "customer_id": "C", "status": "placed", "amount": 1, "event_time": "2026-10-01T09:05:00Z"}"#,
                Some("order_id"),
            ),
            (
                r#"{"order_id": 1, "customer_id": 7, "status": "placed", "amount": 1, "event_time": "2026-10-01T09:05:00Z"}"#,
                Some("customer_id"),
            ),
            (
                r#"{"order_id": 1, "customer_id": "C", "status": "lost", "amount": 1, "event_time": "2026-10-01T09:05:00Z"}"#,
                Some("status"),
            ),
            (
                r#"{"order_id": 1, "customer_id": "C", "status": "placed", "amount": "1.005", "event_time": "2026-10-01T09:05:00Z"}"#,
                Some("amount"),
            ),
            (
                r#"{"order_id": 1, "customer_id": "C", "status": "placed", "amount": true, "event_time": "2026-10-01T09:05:00Z"}"#,
                Some("amount"),
            ),
            (
                r#"{"order_id": 1, "customer_id": "C", "status": "placed", "amount": -3, "event_time": "2026-10-01T09:05:00Z"}"#,
                Some("amount"),
            ),
            (
                r#"{"order_id": 1, "customer_id": "C", "status": "placed", "amount": 1, "event_time": "yesterday"}"#,
                Some("event_time"),
            ),
            (
                r#"{"order_id": 1, "customer_id": "C", "status": "placed", "amount": 1, "event_time": null}"#,
                Some("event_time"),
            ),
            ("not json", None),
            ("[1,2]", None),
        ];
        for (input, field) in cases {
            let err = parse(input).unwrap_err();
            assert_eq!(err.field, field, "{input}: {err}");
            assert!(!err.reason.is_empty());
        }
        let err = OrderEvent::parse(&[0xff, 0xfe]).unwrap_err();
        assert_eq!(err.reason, "not UTF-8 text");
    }

    #[test]
    fn null_is_told_from_missing_and_text_may_be_escaped() {
        let base = r#""status": "placed", "amount": 1, "event_time": "2026-10-01T09:05:00Z""#;
        let err = parse(&format!(
            r#"{{"order_id": 1, "customer_id": null, {base}}}"#
        ))
        .unwrap_err();
        assert_eq!(err.to_string(), "customer_id: must not be null");
        let err = parse(&format!(r#"{{"order_id": 1, {base}}}"#)).unwrap_err();
        assert_eq!(err.to_string(), "customer_id: missing");
        let e = parse(&format!(
            r#"{{"order_id": 1, "customer_id": "C\"7\u00e9", {base}}}"#
        ))
        .unwrap();
        assert_eq!(e.customer_id, "C\"7\u{e9}");
        let e = EventRef::parse(br#"{"order_id": 1, "customer_id": "C7", "status": "paid", "amount": 2, "event_time": "2026-10-01T09:05:00Z"}"#).unwrap();
        assert!(matches!(e.customer_id, Cow::Borrowed("C7")));
        assert_eq!(e.status, "paid");
        let err = parse(&format!(
            r#"{{"order_id": {{"id": 1}}, "customer_id": "C", {base}}}"#
        ))
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            r#"order_id: must be an integer, got {"id": 1}"#
        );
    }

    #[test]
    fn amounts_sent_as_numbers_are_read_from_their_digits() {
        let event = |amount: &str| {
            parse(&format!(
                r#"{{"order_id": 1, "customer_id": "C", "status": "placed", "amount": {amount}, "event_time": "2026-10-01T09:05:00Z"}}"#
            ))
        };
        assert_eq!(event("25.00").unwrap().amount_cents, 2500);
        assert_eq!(event("0.10").unwrap().amount_cents, 10);
        // A float would read 9007199254740993 as ...992.
        assert_eq!(
            event("9007199254740993").unwrap().amount_cents,
            900_719_925_474_099_300
        );
        assert_eq!(event("1.005").unwrap_err().field, Some("amount"));
        assert_eq!(event("-0.5").unwrap_err().reason, "-0.5 is negative");
    }

    #[test]
    fn times_outside_1970_to_2261_in_utc_are_refused() {
        for text in [
            "0000-01-01T00:00:00Z",
            "0000-01-01T00:00:00+23:59",
            "9999-12-31T23:59:59-23:59",
            "1969-12-31T23:59:59Z",
            "1970-01-01T00:30:00+01:00",
            "2262-01-01T00:00:00Z",
            "9999-12-31T23:59:59Z",
        ] {
            let err = parse_time(text).unwrap_err();
            assert!(err.contains("outside the years"), "{text}: {err}");
        }
        for text in [
            "1970-01-01T00:00:00Z",
            "2261-12-31T23:59:59Z",
            "2261-12-31T23:59:59+05:00",
        ] {
            let micros = parse_time(text).unwrap();
            assert_eq!(parse_time(&format_micros(micros)), Ok(micros), "{text}");
        }
    }

    #[test]
    fn amounts_are_plain_decimals_only() {
        for text in [
            "1__0.5_0", "1_0", "+5", "1.", ".5", "1e", "1e1000", "0x10", "1 0", "NaN", "", "-",
        ] {
            assert!(parse_cents(text).is_err(), "{text}");
        }
        assert!(parse_cents("-3").unwrap_err().contains("negative"));
        assert_eq!(parse_cents("10.50").unwrap(), 1050);
        assert_eq!(parse_cents("7").unwrap(), 700);
        assert_eq!(parse_cents("1E2").unwrap(), 10000);
    }

    #[test]
    fn money_formats_with_two_places() {
        assert_eq!(format_cents(6850), "68.50");
        assert_eq!(format_cents(5), "0.05");
        assert_eq!(parse_cents("2.5e1").unwrap(), 2500);
        assert_eq!(parse_cents("25.000").unwrap(), 2500);
    }
}
