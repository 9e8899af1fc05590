//! CSV files as `read_files` reads them: the first line names the columns; each record is a row,
//! at the line it starts on (a blank line or a quoted line break moves the next ones on). A field
//! past the header's is kept as `_c<i>` (Spark's name for an unnamed column), so it lands in
//! `_rescued_data` instead of vanishing; a record that is not text (not UTF-8) becomes a corrupt
//! row holding its line as read. Types are inferred from the values, as JSON's are.

use serde_json::{Map, Value};

use super::decode::Rows;
use super::schema::{Column, Inferred, Type};

fn reader(bytes: &[u8]) -> csv::Reader<&[u8]> {
    csv::ReaderBuilder::new().flexible(true).from_reader(bytes)
}

fn header(reader: &mut csv::Reader<&[u8]>) -> Result<Vec<String>, String> {
    Ok(reader
        .headers()
        .map_err(|e| e.to_string())?
        .iter()
        .map(String::from)
        .collect())
}

/// A field's name: the header's, or `_c<i>` past it.
fn name(header: &[String], i: usize) -> String {
    header.get(i).cloned().unwrap_or_else(|| format!("_c{i}"))
}

/// What a field's text is, for inference and for its column: empty is NULL; then an integer, a
/// number, `true` or `false`, or text.
fn value(text: &str, kind: Option<Type>) -> Value {
    let number = |t: &str| t.parse::<f64>().ok().filter(|f| f.is_finite());
    match (text, kind) {
        ("", _) => Value::Null,
        (t, None | Some(Type::Int | Type::BigInt | Type::Double | Type::Boolean)) => {
            if let Ok(i) = t.parse::<i64>() {
                Value::from(i)
            } else if let Some(f) = number(t) {
                Value::from(f)
            } else if let Ok(b) = t.parse::<bool>() {
                Value::from(b)
            } else {
                Value::String(t.into())
            }
        }
        (t, _) => Value::String(t.into()),
    }
}

/// A record as named values, typed for `columns` (or for inference, with no columns).
fn record(header: &[String], row: &csv::StringRecord, columns: &[Column]) -> Map<String, Value> {
    row.iter()
        .enumerate()
        .map(|(i, text)| {
            let name = name(header, i);
            let kind = columns.iter().find(|c| c.name == name).map(|c| c.kind);
            let kind = kind.or((!columns.is_empty()).then_some(Type::String));
            (name, value(text, kind))
        })
        .collect()
}

/// Sees every record of a file for the columns' types: the header's names only.
pub fn infer(bytes: &[u8], inferred: &mut Inferred) -> Result<(), String> {
    let mut reader = reader(bytes);
    let header = header(&mut reader)?;
    inferred.see_header(&header);
    for row in reader.records().flatten() {
        let mut seen = record(&header, &row, &[]);
        seen.retain(|name, _| header.contains(name));
        inferred.see(&seen);
    }
    Ok(())
}

/// The line and byte a record starts at. The reader's position is where it began reading the
/// record, before the blank lines it skipped on the way.
fn start(bytes: &[u8], at: &csv::Position) -> (i64, usize) {
    let mut byte = (at.byte() as usize).min(bytes.len());
    let mut line = at.line() as i64;
    while let Some(&b) = bytes.get(byte).filter(|b| matches!(b, b'\n' | b'\r')) {
        line += i64::from(b == b'\n');
        byte += 1;
    }
    (line, byte)
}

/// Reads a file's records into `rows`, each at the line it starts on.
pub fn read(bytes: &[u8], path: &str, columns: &[Column], rows: &mut Rows) -> Result<(), String> {
    let mut reader = reader(bytes);
    let header = header(&mut reader)?;
    for row in reader.records() {
        match row {
            Ok(row) => {
                let line = row.position().map_or(0, |p| start(bytes, p).0);
                rows.record(&record(&header, &row, columns), path, line);
            }
            Err(e) => {
                let Some(at) = e.position() else {
                    return Err(e.to_string());
                };
                let (line, byte) = start(bytes, at);
                let text = bytes[byte..]
                    .split(|&b| b == b'\n')
                    .next()
                    .unwrap_or_default();
                let text = String::from_utf8_lossy(text);
                rows.corrupt(text.trim_end_matches('\r'), path, line);
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use arrow::array::{Array, AsArray};
    use arrow::datatypes::Int64Type;

    use super::*;

    const FILE: &[u8] =
        b"id,note,score\n1,fine,2.5\n\n2,\"two\nlines\",3\n3,late, again,60\n4,x,\xff\xfe\n";

    #[test]
    fn types_are_inferred_from_the_values() {
        let mut inferred = Inferred::default();
        infer(
            b"id,score,ok,note\n1,2,true,a\n2,2.5,false,\n",
            &mut inferred,
        )
        .unwrap();
        let kinds: Vec<(String, Type)> = inferred
            .columns()
            .into_iter()
            .map(|c| (c.name, c.kind))
            .collect();
        let expected = [
            ("id", Type::BigInt),
            ("score", Type::Double),
            ("ok", Type::Boolean),
            ("note", Type::String),
        ];
        let expected: Vec<(String, Type)> =
            expected.iter().map(|(n, k)| (n.to_string(), *k)).collect();
        assert_eq!(kinds, expected);
    }

    #[test]
    fn each_row_keeps_its_line_and_nothing_is_lost() {
        let mut inferred = Inferred::default();
        infer(FILE, &mut inferred).unwrap();
        let columns = inferred.columns();
        let mut rows = Rows::new(&columns);
        read(FILE, "landing/a.csv", &columns, &mut rows).unwrap();
        let batch = rows.finish().unwrap();
        let line = batch
            .column_by_name("__line")
            .unwrap()
            .as_primitive::<Int64Type>();
        let lines: Vec<i64> = (0..line.len()).map(|i| line.value(i)).collect();
        // The blank line 3 is no row; the quoted line break makes row 2 span lines 4 and 5.
        assert_eq!(lines, [2, 4, 6, 7]);
        let rescued = batch
            .column_by_name("_rescued_data")
            .unwrap()
            .as_string::<i32>();
        assert!(rescued.is_null(0) && rescued.is_null(1));
        let extra: Value = serde_json::from_str(rescued.value(2)).unwrap();
        assert_eq!(extra["_c3"], "60", "{extra}");
        let corrupt: Value = serde_json::from_str(rescued.value(3)).unwrap();
        assert_eq!(
            corrupt["_corrupt_record"], "4,x,\u{fffd}\u{fffd}",
            "{corrupt}"
        );
        assert_eq!(corrupt["_file_path"], "landing/a.csv");
    }
}
