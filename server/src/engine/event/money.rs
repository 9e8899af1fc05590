//! Money as the shop sends it (SPEC §1): a plain decimal with at most 2 places, kept in cents
//! (the tables' `decimal(18,2)`), never a float.

use rust_decimal::Decimal;

/// Largest amount in cents that fits the tables' `decimal(18,2)`.
const MAX_CENTS: i128 = 999_999_999_999_999_999;

/// Whether `text` is a plain decimal: digits, an optional fraction, an optional exponent
/// (`18.50`, `25`, `2.5e1`). Nothing else: no sign, no `_` separators, no spaces inside, as
/// `rust_decimal` alone would accept (`"1__0.5_0"` is not 10.50).
fn is_plain_decimal(text: &str) -> bool {
    let (mantissa, exponent) = match text.split_once(['e', 'E']) {
        Some((m, e)) => (m, Some(e.strip_prefix(['+', '-']).unwrap_or(e))),
        None => (text, None),
    };
    let (whole, fraction) = match mantissa.split_once('.') {
        Some((w, f)) => (w, Some(f)),
        None => (mantissa, None),
    };
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    text.len() <= 64
        && digits(whole)
        && fraction.is_none_or(digits)
        && exponent.is_none_or(|e| digits(e) && e.len() <= 3)
}

/// Parses a decimal amount into cents; refuses more than 2 places rather than rounding money.
pub fn parse_cents(text: &str) -> Result<i128, String> {
    match simple_cents(text) {
        Some(cents) => Ok(cents),
        None => exact_cents(text),
    }
}

/// The form nearly every amount takes, read digit by digit: 1 to 16 whole digits, then
/// optionally a point and 1 or 2 places (`18.50`, `7`, `0.5`). `None` for anything else, which
/// [`exact_cents`] reads or refuses in words. Both give the same cents for every text this reads
/// (a unit test holds them to it).
fn simple_cents(text: &str) -> Option<i128> {
    let (whole, fraction) = match text.split_once('.') {
        Some((whole, fraction)) if (1..=2).contains(&fraction.len()) => (whole, fraction),
        Some(_) => return None,
        None => (text, ""),
    };
    if !(1..=16).contains(&whole.len()) {
        return None;
    }
    let mut cents: i128 = 0;
    for b in whole.bytes().chain(fraction.bytes()) {
        if !b.is_ascii_digit() {
            return None;
        }
        cents = cents * 10 + i128::from(b - b'0');
    }
    // 16 whole digits and 2 places fit decimal(18,2): no amount read here is too large.
    let scale = match fraction.len() {
        0 => 100,
        1 => 10,
        _ => 1,
    };
    Some(cents * scale)
}

/// Any amount [`is_plain_decimal`] allows, through an exact decimal; the words of every refusal.
fn exact_cents(text: &str) -> Result<i128, String> {
    if let Some(positive) = text.strip_prefix('-')
        && is_plain_decimal(positive)
    {
        return Err(format!("{text} is negative"));
    }
    if !is_plain_decimal(text) {
        return Err(format!(
            "{text:?} is not a plain decimal number (digits, an optional fraction such as 18.50)"
        ));
    }
    let parsed = if text.contains(['e', 'E']) {
        Decimal::from_scientific(text)
    } else {
        Decimal::from_str_exact(text)
    };
    let mut value = parsed.map_err(|_| format!("{text:?} is not a decimal number"))?;
    value = value.normalize();
    if value.scale() > 2 {
        return Err(format!("{text} has more than 2 decimal places"));
    }
    if value.is_sign_negative() && !value.is_zero() {
        return Err(format!("{text} is negative"));
    }
    value.rescale(2);
    let cents = value.mantissa();
    if cents > MAX_CENTS {
        return Err(format!("{text} is too large"));
    }
    Ok(cents)
}

/// Cents as money text with 2 places: `6850` -> `"68.50"`.
pub fn format_cents(cents: i128) -> String {
    let sign = if cents < 0 { "-" } else { "" };
    let abs = cents.unsigned_abs();
    format!("{sign}{}.{:02}", abs / 100, abs % 100)
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    proptest! {
        #![proptest_config(ProptestConfig { cases: 20_000, failure_persistence: None, ..ProptestConfig::default() })]

        /// The digit-by-digit reading agrees with the exact decimal wherever it reads at all.
        #[test]
        fn simple_amounts_read_as_the_exact_decimal_reads_them(
            text in "[0-9]{0,19}(\\.[0-9]{0,3})?|[0-9.eE+_ -]{0,8}"
        ) {
            if let Some(cents) = simple_cents(&text) {
                prop_assert_eq!(exact_cents(&text), Ok(cents), "{}", text);
            }
            prop_assert_eq!(parse_cents(&text).ok(), exact_cents(&text).ok(), "{}", text);
        }
    }

    #[test]
    fn the_common_forms_take_the_simple_reading() {
        for (text, cents) in [("18.50", 1850), ("7", 700), ("0.5", 50), ("007.10", 710)] {
            assert_eq!(simple_cents(text), Some(cents), "{text}");
        }
        for text in ["1.", ".5", "1.005", "1e2", "-3", "12345678901234567", ""] {
            assert_eq!(simple_cents(text), None, "{text}");
        }
        assert_eq!(simple_cents("9999999999999999.99"), Some(MAX_CENTS));
    }
}
