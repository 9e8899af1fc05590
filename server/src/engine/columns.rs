//! Columns of a query's result, looked up by name with their type checked: a query that changes
//! its columns fails with an error naming the column, instead of reading the wrong one.

use arrow::array::{Array, ArrayRef, AsArray, PrimitiveArray, RecordBatch, StringArray};
use arrow::datatypes::{ArrowPrimitiveType, DataType};
use arrow::util::display::{ArrayFormatter, FormatOptions};

use super::tables::TableError;

/// The rows of one query, for reading columns by name; `what` names the query in errors.
#[derive(Clone, Copy)]
pub struct Columns<'a> {
    pub batch: &'a RecordBatch,
    pub what: &'a str,
}

impl<'a> Columns<'a> {
    pub fn of(batch: &'a RecordBatch, what: &'a str) -> Self {
        Self { batch, what }
    }

    fn find(&self, name: &str) -> Result<&'a dyn Array, TableError> {
        self.batch
            .column_by_name(name)
            .map(|c| c.as_ref())
            .ok_or_else(|| self.error(name, "not in the result".into()))
    }

    fn error(&self, column: &str, detail: String) -> TableError {
        TableError::Column {
            what: self.what.to_string(),
            column: column.to_string(),
            detail,
        }
    }

    /// A column of numbers or times of type `T`.
    pub fn primitive<T: ArrowPrimitiveType>(
        &self,
        name: &str,
    ) -> Result<&'a PrimitiveArray<T>, TableError> {
        let column = self.find(name)?;
        column.as_primitive_opt::<T>().ok_or_else(|| {
            self.error(
                name,
                format!("is {}, not {}", column.data_type(), T::DATA_TYPE),
            )
        })
    }

    /// A column of text, whichever way it is stored (Utf8, a string view, a dictionary).
    pub fn strings(&self, name: &str) -> Result<StringArray, TableError> {
        let column = self.find(name)?;
        if let Some(strings) = column.as_string_opt::<i32>() {
            return Ok(strings.clone());
        }
        let cast = arrow::compute::cast(column, &DataType::Utf8)
            .map_err(|e| self.error(name, format!("is {}, not text: {e}", column.data_type())))?;
        Ok(cast.as_string::<i32>().clone())
    }
}

/// Each row's values in `columns` (of one batch of `table`) as one text, to tell rows apart by
/// them: the values apart by U+0001, a NULL apart from the text "NULL". `reckon.dropDuplicates`
/// keeps these texts in its state, so their form stays.
pub fn row_keys(columns: &[ArrayRef], table: &str) -> Result<Vec<String>, TableError> {
    let arrow = |source| TableError::Arrow {
        table: table.to_string(),
        source,
    };
    let options = FormatOptions::default().with_null("\u{0}NULL");
    let formatters = columns
        .iter()
        .map(|c| ArrayFormatter::try_new(c.as_ref(), &options))
        .collect::<Result<Vec<_>, _>>()
        .map_err(arrow)?;
    let rows = columns.first().map_or(0, |c| c.len());
    Ok((0..rows)
        .map(|row| {
            let values: Vec<String> = formatters
                .iter()
                .map(|f| f.value(row).to_string())
                .collect();
            values.join("\u{1}")
        })
        .collect())
}
