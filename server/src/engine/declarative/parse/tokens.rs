//! The words of a pipeline's statements: statements split at `;`, their tokens, and where each
//! sits in its file.

use std::fmt;

/// Where something is in a project: a file (relative to the project) and a 1-based line and column.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Place {
    pub file: String,
    pub line: usize,
    pub column: usize,
}

impl fmt::Display for Place {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}", self.file, self.line, self.column)
    }
}

#[derive(Debug, thiserror::Error)]
#[error("{place}: {message}")]
pub struct ParseError {
    pub place: Place,
    pub message: String,
}

#[derive(Debug, Clone, PartialEq)]
pub(super) enum Token {
    Word(String),
    Text(String),
    Symbol(char),
}

/// A token and the byte where it starts in the file.
pub(super) type Spanned = (Token, usize);

/// 1-based line and column of byte `at`.
pub fn place(file: &str, text: &str, at: usize) -> Place {
    let before = &text[..at.min(text.len())];
    let line_start = before.rfind('\n').map_or(0, |n| n + 1);
    Place {
        file: file.to_string(),
        line: before.matches('\n').count() + 1,
        column: before[line_start..].chars().count() + 1,
    }
}

/// The statements' byte ranges: split at `;` outside strings, quoted names and comments.
pub(super) fn split(file: &str, text: &str) -> Result<Vec<(usize, usize)>, ParseError> {
    let bytes = text.as_bytes();
    let (mut ranges, mut start, mut i) = (vec![], None, 0);
    while i < bytes.len() {
        let c = bytes[i];
        match c {
            b'-' if bytes.get(i + 1) == Some(&b'-') => {
                i = text[i..].find('\n').map_or(bytes.len(), |n| i + n);
                continue;
            }
            b'/' if bytes.get(i + 1) == Some(&b'*') => {
                let end = text[i + 2..].find("*/").ok_or_else(|| ParseError {
                    place: place(file, text, i),
                    message: "a comment that never ends (expected `*/`)".into(),
                })?;
                i += end + 4;
                continue;
            }
            b'\'' | b'"' | b'`' => {
                start.get_or_insert(i);
                i = closing(file, text, i)?;
            }
            b';' => {
                if let Some(s) = start.take() {
                    ranges.push((s, i));
                }
            }
            c if c.is_ascii_whitespace() => {}
            _ => {
                start.get_or_insert(i);
            }
        }
        i += 1;
    }
    match start {
        Some(_) => Err(ParseError {
            place: place(file, text, text.trim_end().len()),
            message: "expected `;` at the end of the statement".into(),
        }),
        None => Ok(ranges),
    }
}

/// The byte of the quote closing the one at `open` (a doubled quote is part of the text).
fn closing(file: &str, text: &str, open: usize) -> Result<usize, ParseError> {
    let bytes = text.as_bytes();
    let quote = bytes[open];
    let mut i = open + 1;
    while i < bytes.len() {
        if bytes[i] == quote {
            if bytes.get(i + 1) == Some(&quote) {
                i += 2;
                continue;
            }
            return Ok(i);
        }
        i += 1;
    }
    Err(ParseError {
        place: place(file, text, open),
        message: format!("a quoted text that never ends (expected {})", quote as char),
    })
}

/// The tokens of the statement in bytes `start..end`.
pub(super) fn tokens(
    file: &str,
    text: &str,
    start: usize,
    end: usize,
) -> Result<Vec<Spanned>, ParseError> {
    let mut tokens = vec![];
    let bytes = text.as_bytes();
    let mut i = start;
    while i < end {
        let c = bytes[i];
        if c.is_ascii_whitespace() {
            i += 1;
        } else if c == b'-' && bytes.get(i + 1) == Some(&b'-') {
            i = text[i..end].find('\n').map_or(end, |n| i + n);
        } else if c == b'/' && bytes.get(i + 1) == Some(&b'*') {
            i = text[i + 2..end].find("*/").map_or(end, |n| i + n + 4);
        } else if c == b'\'' || c == b'`' || c == b'"' {
            let close = closing(file, text, i)?;
            let inner = &text[i + 1..close];
            let token = match c {
                b'\'' => Token::Text(inner.replace("''", "'")),
                _ => Token::Word(inner.to_string()),
            };
            tokens.push((token, i));
            i = close + 1;
        } else if c.is_ascii_alphanumeric() || c == b'_' || c >= 0x80 {
            let len = text[i..end]
                .find(|ch: char| !(ch.is_alphanumeric() || ch == '_' || ch == '.'))
                .unwrap_or(end - i);
            tokens.push((Token::Word(text[i..i + len].to_string()), i));
            i += len;
        } else {
            let ch = text[i..].chars().next().unwrap_or(' ');
            tokens.push((Token::Symbol(ch), i));
            i += ch.len_utf8();
        }
    }
    Ok(tokens)
}
