//! The shape nearly every message has, read byte by byte: one flat JSON object whose keys are
//! the event's five fields, each at most once, each value a string without escapes, a number or
//! a literal, and nothing but ASCII. It finds where each value's text starts and ends, as
//! serde_json's `RawValue` would, and leaves the checks of each field to `EventRef::check`.
//! Anything else (an escape, a nested value, another key, a key twice, a byte out of place) is
//! `None`, for serde_json to read or refuse in words: so a message gets the same event or the
//! same reason either way (a property test holds the two to it). Bronze decodes every message
//! it lands through here, and serde_json spent most of bronze's decoding time.

use super::Fields;

/// A message's fields, if it has the shape above.
pub(super) fn simple_fields(value: &[u8]) -> Option<Fields<'_>> {
    // Checked once for the whole message, so each value's text is a slice of it.
    let text = std::str::from_utf8(value).ok()?;
    let mut c = Cursor::new(text);
    let mut fields = Fields::default();
    c.space();
    c.eat(b'{')?;
    c.space();
    if c.eat(b'}').is_none() {
        loop {
            let key = c.string()?;
            c.space();
            c.eat(b':')?;
            c.space();
            let raw = c.scalar()?;
            let slot = match key {
                b"order_id" => &mut fields.order_id,
                b"customer_id" => &mut fields.customer_id,
                b"status" => &mut fields.status,
                b"amount" => &mut fields.amount,
                b"event_time" => &mut fields.event_time,
                _ => return None,
            };
            // A key sent twice is serde's to refuse.
            if slot.replace(raw).is_some() {
                return None;
            }
            c.space();
            if c.eat(b',').is_some() {
                c.space();
                continue;
            }
            c.eat(b'}')?;
            break;
        }
    }
    c.space();
    (c.at == value.len()).then_some(fields)
}

/// The bytes a string of this reading may hold between its quotes: ASCII from the space up, but
/// the quote and the backslash.
const PLAIN: [bool; 256] = {
    let mut plain = [false; 256];
    let mut b = 0x20;
    while b < 0x80 {
        plain[b] = b != b'"' as usize && b != b'\\' as usize;
        b += 1;
    }
    plain
};

/// A place in a message, read as bytes and sliced as text.
struct Cursor<'a> {
    s: &'a str,
    b: &'a [u8],
    at: usize,
}

impl<'a> Cursor<'a> {
    fn new(s: &'a str) -> Self {
        Cursor {
            s,
            b: s.as_bytes(),
            at: 0,
        }
    }

    fn peek(&self) -> Option<u8> {
        self.b.get(self.at).copied()
    }

    /// Moves past the bytes from here that `keep` holds to.
    fn skip_while(&mut self, keep: impl Fn(u8) -> bool) -> usize {
        let rest = &self.b[self.at..];
        let n = rest.iter().position(|&b| !keep(b)).unwrap_or(rest.len());
        self.at += n;
        n
    }

    /// JSON's whitespace.
    fn space(&mut self) {
        self.skip_while(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\r'));
    }

    fn eat(&mut self, byte: u8) -> Option<()> {
        (self.peek() == Some(byte)).then(|| self.at += 1)
    }

    fn digits(&mut self) -> usize {
        self.skip_while(|b| b.is_ascii_digit())
    }

    /// A string of the bytes [`PLAIN`] allows: the text between its quotes.
    fn string(&mut self) -> Option<&'a [u8]> {
        self.eat(b'"')?;
        let from = self.at;
        self.skip_while(|b| PLAIN[usize::from(b)]);
        self.eat(b'"')?;
        Some(&self.b[from..self.at - 1])
    }

    /// A number by JSON's grammar: `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`.
    fn number(&mut self) -> Option<()> {
        let _ = self.eat(b'-');
        match self.peek()? {
            b'0' => self.at += 1,
            b'1'..=b'9' => {
                self.digits();
            }
            _ => return None,
        }
        if self.eat(b'.').is_some() && self.digits() == 0 {
            return None;
        }
        if matches!(self.peek(), Some(b'e' | b'E')) {
            self.at += 1;
            if matches!(self.peek(), Some(b'+' | b'-')) {
                self.at += 1;
            }
            if self.digits() == 0 {
                return None;
            }
        }
        Some(())
    }

    fn literal(&mut self, word: &[u8]) -> Option<()> {
        let end = self.at + word.len();
        (self.b.get(self.at..end)? == word).then(|| self.at = end)
    }

    /// A value that holds no other: its whole text, a string's quotes included.
    fn scalar(&mut self) -> Option<&'a str> {
        let from = self.at;
        match self.peek()? {
            b'"' => {
                self.string()?;
            }
            b'-' | b'0'..=b'9' => self.number()?,
            b'n' => self.literal(b"null")?,
            b't' => self.literal(b"true")?,
            b'f' => self.literal(b"false")?,
            _ => return None,
        }
        self.s.get(from..self.at)
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::super::{EventRef, OrderEvent};
    use super::simple_fields;

    #[test]
    fn what_the_shop_and_a_person_send_takes_the_fast_reading() {
        let event = OrderEvent {
            order_id: 1001,
            customer_id: "C01".into(),
            status: "placed".into(),
            amount_cents: 2500,
            event_time_micros: 1_790_000_000_000_000,
        };
        let typed = r#" { "order_id": 1001, "customer_id": "C01", "status": "placed",
            "amount": "25.00", "event_time": "2026-10-01T09:05:00Z" } "#;
        for text in [event.to_json(), typed.to_string(), "{}".into()] {
            assert!(simple_fields(text.as_bytes()).is_some(), "{text}");
        }
        let parsed = OrderEvent::parse(event.to_json().as_bytes()).unwrap();
        assert_eq!(parsed, event);
        for text in [
            r#"{"order_id": 1, "customer_id": "C\"7"}"#,
            r#"{"order_id": 1, "customer_id": "Cé"}"#,
            r#"{"order_id": 1, "order_id": 2}"#,
            r#"{"order_id": 1, "note": 2}"#,
            r#"{"order_id": 01}"#,
            r#"{"order_id": 1,}"#,
            r#"{"order_id": {"id": 1}}"#,
            r#"{"order_id": 1} x"#,
            r#"[{"order_id": 1}]"#,
        ] {
            assert!(simple_fields(text.as_bytes()).is_none(), "{text}");
        }
    }

    /// Values of every kind a field may be sent as, well and badly formed.
    fn value() -> BoxedStrategy<String> {
        prop_oneof![
            any::<i64>().prop_map(|n| n.to_string()),
            "-?[0-9]{1,4}(\\.[0-9]{0,3})?([eE][-+]?[0-9]{0,2})?",
            "\"[ -~]{0,8}\"",
            "\"-?[0-9]{1,3}(\\.[0-9]{1,3})?\"",
            prop_oneof![
                Just("placed"),
                Just("paid"),
                Just("lost"),
                Just("2026-10-01T09:05:00Z"),
                Just("2026-10-01T11:05:00+02:00"),
                Just(""),
                Just(" "),
                Just("C\\u00e97"),
                Just("Cé"),
            ]
            .prop_map(|s| format!("\"{s}\"")),
            prop_oneof![
                Just("null"),
                Just("true"),
                Just("false"),
                Just("nul"),
                Just("{\"id\": 1}"),
                Just("[1]"),
                Just("01"),
                Just("-"),
                Just("1."),
                Just("99999999999999999999"),
            ]
            .prop_map(String::from),
        ]
        .boxed()
    }

    fn key() -> impl Strategy<Value = String> {
        prop_oneof![
            Just("order_id"),
            Just("customer_id"),
            Just("status"),
            Just("amount"),
            Just("event_time"),
            Just("note"),
            Just("order\\u005fid"),
        ]
        .prop_map(|k| format!("\"{k}\""))
    }

    /// The five fields in any order, each with a value that is mostly right.
    fn event_pairs() -> BoxedStrategy<Vec<(String, String)>> {
        let pick =
            |values: &'static [&'static str]| prop::sample::select(values).prop_map(String::from);
        (
            prop_oneof![any::<u32>().prop_map(|n| n.to_string()), value()],
            prop_oneof![Just("\"C01\"".to_string()), value()],
            prop_oneof![pick(&["\"placed\"", "\"paid\"", "\"shipped\""]), value()],
            prop_oneof![pick(&["25.00", "\"18.5\"", "7", "0.10", "1E2"]), value()],
            prop_oneof![
                pick(&[
                    "\"2026-10-01T09:05:00Z\"",
                    "\"2026-10-01T11:05:00.25+02:00\""
                ]),
                value()
            ],
        )
            .prop_map(|(o, c, s, a, t)| {
                let keys = ["order_id", "customer_id", "status", "amount", "event_time"];
                keys.iter()
                    .map(|k| format!("\"{k}\""))
                    .zip([o, c, s, a, t])
                    .collect()
            })
            .prop_shuffle()
            .boxed()
    }

    /// A message: pairs with JSON's whitespace around every token, then maybe one byte changed,
    /// put in or cut off.
    fn message() -> impl Strategy<Value = Vec<u8>> {
        let space = || "[ \t\r\n]{0,2}";
        let pairs = prop_oneof![
            event_pairs(),
            prop::collection::vec((key(), value()), 0..7).boxed()
        ];
        let spaced = prop::collection::vec((space(), space(), space(), space()), 7);
        let body = (pairs, spaced).prop_map(|(pairs, spaces)| {
            let pairs: Vec<String> = pairs
                .into_iter()
                .zip(spaces)
                .map(|((k, v), (a, b, c, d))| format!("{a}{k}{b}:{c}{v}{d}"))
                .collect();
            format!("{{{}}}", pairs.join(",")).into_bytes()
        });
        let edit = (0..6u8, any::<prop::sample::Index>(), any::<u8>());
        (space(), body, space(), edit).prop_map(|(a, body, b, (kind, at, byte))| {
            let mut m = [a.as_bytes(), &body, b.as_bytes()].concat();
            let i = at.index(m.len() + 1);
            match kind {
                0 => m.insert(i, byte),
                1 if i < m.len() => m[i] = byte,
                2 => m.truncate(i),
                _ => {}
            }
            m
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(4000))]

        /// The fast reading gives what serde_json's gives, event or reason, for every message.
        #[test]
        fn both_readings_agree(m in message()) {
            prop_assert_eq!(EventRef::parse(&m), EventRef::parse_exact(&m));
        }
    }
}
