//! `reckon table NAME`: a table's rows, sorted by its key (a project's table: by all columns).

use crate::engine::render;
use crate::engine::tables::TableName;
use crate::service::lab::Lab;

pub async fn execute(lab: &Lab, name: &str, json: bool) -> anyhow::Result<()> {
    let batches = match TableName::parse(name) {
        Ok(course) => render::rows(&lab.tables, course).await?,
        Err(_) => render::named_rows(&lab.tables, name).await?,
    };
    if json {
        for row in render::json_rows(&batches) {
            println!("{}", serde_json::Value::Object(row));
        }
    } else {
        println!("{}", arrow::util::pretty::pretty_format_batches(&batches)?);
    }
    Ok(())
}
