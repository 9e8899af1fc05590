//! What a typed field means, read the same way from a page's form (the server functions) and from
//! a JSON API call (`server/src/web/fields.rs`): each refusal names the field, and nothing is
//! written.

use crate::error::ApiError;

/// A whole number typed in a field, a query or a form.
pub fn whole_number(field: &str, text: &str) -> Result<i64, ApiError> {
    text.trim()
        .parse()
        .map_err(|_| ApiError::field(field, format!("must be a whole number, got {text:?}")))
}

/// A run's id.
pub fn run_id(text: &str) -> Result<i64, ApiError> {
    text.trim()
        .parse()
        .map_err(|_| ApiError::field("id", format!("a run id is a whole number, not {text:?}")))
}

/// A page of rows, counted from 0; empty is the first.
pub fn page(text: Option<&str>) -> Result<usize, ApiError> {
    match text.map(str::trim) {
        None | Some("") => Ok(0),
        Some(p) => usize::try_from(whole_number("page", p)?)
            .map_err(|_| ApiError::field("page", "must be 0 or more")),
    }
}

/// A schedule's seconds as typed in the settings form: empty or 0 is no schedule.
pub fn schedule_seconds(text: &str) -> Result<Option<u64>, ApiError> {
    match text.trim() {
        "" | "0" => Ok(None),
        text => text.parse::<u64>().map(Some).map_err(|_| {
            ApiError::field(
                "schedule_seconds",
                "a whole number of seconds, or empty for no schedule",
            )
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typed_fields_are_read_or_refused_by_name() {
        assert_eq!(whole_number("n", " 12 ").unwrap(), 12);
        assert!(
            matches!(whole_number("n", "1.5"), Err(ApiError::Field { field, .. }) if field == "n")
        );
        assert_eq!(run_id("7").unwrap(), 7);
        assert!(matches!(run_id("x"), Err(ApiError::Field { field, .. }) if field == "id"));
        assert_eq!(page(None).unwrap(), 0);
        assert_eq!(page(Some("")).unwrap(), 0);
        assert_eq!(page(Some("3")).unwrap(), 3);
        assert!(matches!(page(Some("-1")), Err(ApiError::Field { field, .. }) if field == "page"));
        assert_eq!(schedule_seconds("").unwrap(), None);
        assert_eq!(schedule_seconds("0").unwrap(), None);
        assert_eq!(schedule_seconds("60").unwrap(), Some(60));
        assert!(schedule_seconds("soon").is_err());
    }
}
