//! SQL as the code page shows it: keywords, strings, numbers and comments each in their own
//! colour. A small scanner for display only; the server parses the project for real.

use leptos::prelude::*;

const KEYWORDS: [&str; 64] = [
    "AND",
    "APPLY",
    "AS",
    "AUTO",
    "BY",
    "CASE",
    "CAST",
    "CDC",
    "COLUMNS",
    "COMMENT",
    "CONSTRAINT",
    "COUNT",
    "CREATE",
    "DELAY",
    "DELETE",
    "DISTINCT",
    "DROP",
    "ELSE",
    "END",
    "EXCEPT",
    "EXPECT",
    "FAIL",
    "FLOW",
    "FROM",
    "GROUP",
    "HAVING",
    "HISTORY",
    "IGNORE",
    "IN",
    "INSERT",
    "INTERVAL",
    "INTO",
    "IS",
    "JOIN",
    "KEYS",
    "LEFT",
    "MATERIALIZED",
    "NAME",
    "NOT",
    "NULL",
    "NULLS",
    "OF",
    "ON",
    "OR",
    "ORDER",
    "REFRESH",
    "ROW",
    "SCD",
    "SELECT",
    "SEQUENCE",
    "STORED",
    "STREAM",
    "STREAMING",
    "TABLE",
    "TBLPROPERTIES",
    "THEN",
    "TRACK",
    "TYPE",
    "UPDATE",
    "VIEW",
    "WATERMARK",
    "WHEN",
    "WHERE",
    "WINDOW",
];

/// What a stretch of text is.
#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Plain,
    Keyword,
    Text,
    Number,
    Comment,
}

/// Splits `text` into stretches of one kind each.
fn scan(text: &str) -> Vec<(Kind, &str)> {
    let bytes = text.as_bytes();
    let mut parts = vec![];
    let mut i = 0;
    while i < bytes.len() {
        let start = i;
        let c = bytes[i];
        let kind = if c == b'-' && bytes.get(i + 1) == Some(&b'-') {
            while i < bytes.len() && bytes[i] != b'\n' {
                i += 1;
            }
            Kind::Comment
        } else if c == b'\'' {
            i += 1;
            while i < bytes.len() && bytes[i] != b'\'' {
                i += 1;
            }
            i = (i + 1).min(bytes.len());
            Kind::Text
        } else if c.is_ascii_digit() {
            while i < bytes.len() && (bytes[i].is_ascii_digit() || bytes[i] == b'.') {
                i += 1;
            }
            Kind::Number
        } else if c.is_ascii_alphabetic() || c == b'_' {
            while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_') {
                i += 1;
            }
            let word = text[start..i].to_ascii_uppercase();
            match KEYWORDS.binary_search(&word.as_str()) {
                Ok(_) => Kind::Keyword,
                Err(_) => Kind::Plain,
            }
        } else {
            // Up to the next character that may start something else; whole UTF-8 characters.
            i += 1;
            while i < bytes.len()
                && !bytes[i].is_ascii_alphanumeric()
                && !matches!(bytes[i], b'\'' | b'-' | b'_')
            {
                i += 1;
            }
            while !text.is_char_boundary(i) {
                i += 1;
            }
            Kind::Plain
        };
        parts.push((kind, &text[start..i]));
    }
    parts
}

/// `text` as spans to put in a `<pre>`; YAML (not `sql`) with its comments only.
pub fn highlighted(text: &str, sql: bool) -> impl IntoView + use<> {
    let parts: Vec<(Kind, String)> = match sql {
        true => scan(text)
            .into_iter()
            .map(|(k, t)| (k, t.to_string()))
            .collect(),
        false => text
            .split_inclusive('\n')
            .map(|line| match line.trim_start().starts_with('#') {
                true => (Kind::Comment, line.to_string()),
                false => (Kind::Plain, line.to_string()),
            })
            .collect(),
    };
    parts
        .into_iter()
        .map(|(kind, text)| match kind {
            Kind::Plain => text.into_any(),
            Kind::Keyword => view! { <span class="kw">{text}</span> }.into_any(),
            Kind::Text => view! { <span class="str">{text}</span> }.into_any(),
            Kind::Number => view! { <span class="num">{text}</span> }.into_any(),
            Kind::Comment => view! { <span class="comment">{text}</span> }.into_any(),
        })
        .collect_view()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keywords_are_sorted_for_the_search() {
        let mut sorted = KEYWORDS;
        sorted.sort();
        assert_eq!(sorted, KEYWORDS);
    }

    #[test]
    fn a_line_is_split_into_its_kinds_and_nothing_is_lost() {
        let line = "SELECT id, 'a b' -- note\nFROM t WHERE n >= 10.5 AND é";
        let parts = scan(line);
        let whole: String = parts.iter().map(|(_, t)| *t).collect();
        assert_eq!(whole, line);
        assert!(parts.contains(&(Kind::Keyword, "SELECT")));
        assert!(parts.contains(&(Kind::Text, "'a b'")));
        assert!(parts.contains(&(Kind::Comment, "-- note")));
        assert!(parts.contains(&(Kind::Number, "10.5")));
        assert!(parts.contains(&(Kind::Plain, "id")));
    }
}
