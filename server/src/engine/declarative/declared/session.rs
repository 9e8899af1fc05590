//! Where a declared flow's query runs: a learner's SQL shares the server with every lab, so it
//! runs within [`Bounds`]. Its operators (joins, sorts, aggregates) hold so many bytes at most:
//! DataFusion spills a sort to disk, and refuses a join or aggregate that would pass it, naming
//! the operator. The rows it gives, which the flow holds to write, take so many bytes at most,
//! and it runs so long at most (the lab's lock and a run slot are held meanwhile). Past any of
//! them the flow fails saying which, and nothing is written.
//!
//! The bound on the rows is there to catch a query that makes far more than it reads (a join
//! without a condition), not a big input: it is [`Bounds::DEFAULT`]'s 1 GiB or four times the
//! bytes the flow read this run, whichever is more ([`Bounds::reading`]). A first load of 10 M
//! changes passes; what it costs is memory: the flow holds its rows until it writes them.
//!
//! The time bound stops a query where it yields, which DataFusion's operators do as they read
//! their inputs: a join that makes billions of rows out of each batch it reads is stopped only
//! at its next read, not within one.

use std::time::Duration;

use arrow::array::RecordBatch;
use arrow::datatypes::DataType;
use datafusion::dataframe::DataFrame;
use datafusion::execution::runtime_env::RuntimeEnvBuilder;
use datafusion::prelude::{SessionConfig, SessionContext};
use futures::StreamExt;

use crate::engine::flow::{FlowError, Refusal};
use crate::engine::tables::TableError;

/// What one flow's query may take.
#[derive(Debug, Clone, Copy)]
pub struct Bounds {
    /// Bytes its operators may hold.
    pub memory: usize,
    /// Bytes its rows may take.
    pub result: usize,
    /// How long it may run.
    pub time: Duration,
}

impl Bounds {
    pub const DEFAULT: Bounds = Bounds {
        memory: 1 << 30,
        result: 1 << 30,
        time: Duration::from_secs(300),
    };

    /// These bounds for a flow that read `bytes` this run: its rows may take four times that.
    pub fn reading(bytes: usize) -> Bounds {
        Bounds {
            result: Self::DEFAULT.result.max(bytes.saturating_mul(4)),
            ..Self::DEFAULT
        }
    }

    /// A session whose queries' operators hold `memory` bytes at most, on one partition.
    pub fn session(&self) -> SessionContext {
        let runtime = RuntimeEnvBuilder::new()
            .with_memory_limit(self.memory, 1.0)
            .build_arc()
            .expect("a runtime with a memory pool and the default disk manager");
        let ctx = SessionContext::new_with_config_rt(
            SessionConfig::new().with_target_partitions(1),
            runtime,
        );
        crate::engine::declarative::sql::functions::register(&ctx);
        ctx
    }

    /// The rows of `df`, the query of `table`, refused once they pass `result` bytes or the
    /// query runs past `time`.
    pub async fn collect(&self, df: DataFrame, table: &str) -> Result<Vec<RecordBatch>, FlowError> {
        match tokio::time::timeout(self.time, self.rows(df, table)).await {
            Ok(rows) => rows,
            Err(_) => Err(FlowError::from(Refusal::Bound(format!(
                "{table}: the query ran past {} s, the most one flow may take (a join without a \
                 condition, or one that matches too much?)",
                self.time.as_secs_f64()
            )))),
        }
    }

    async fn rows(&self, df: DataFrame, table: &str) -> Result<Vec<RecordBatch>, FlowError> {
        let query = |source| TableError::Query {
            table: table.to_string(),
            source,
        };
        let mut stream = df.execute_stream().await.map_err(query)?;
        let (mut rows, mut bytes) = (vec![], 0);
        while let Some(batch) = stream.next().await {
            let batch = batch.map_err(query)?;
            bytes += size(&batch);
            if bytes > self.result {
                return Err(FlowError::from(Refusal::Bound(format!(
                    "{table}: the query's rows pass {} MiB, the most one flow may write at once \
                     (a join without a condition, or one that matches too much?)",
                    self.result >> 20
                ))));
            }
            rows.push(batch);
        }
        Ok(rows)
    }
}

/// The bytes a batch's rows take: of each column, the part its rows use. (Arrow's
/// `get_array_memory_size` counts every buffer whole, so slices of one big buffer, as a scan of
/// one file gives them, would each count the whole file.)
pub fn size(batch: &RecordBatch) -> usize {
    batch
        .columns()
        .iter()
        .map(|c| match c.data_type() {
            // A view's slice size counts its views, not the strings they point into.
            DataType::Utf8View | DataType::BinaryView => c.get_array_memory_size(),
            _ => c
                .to_data()
                .get_slice_memory_size()
                .unwrap_or_else(|_| c.get_array_memory_size()),
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_query_past_its_bounds_is_refused_naming_the_table() {
        // A hash join's build side of 200,000 rows holds more than 1 MiB.
        let small = Bounds {
            memory: 1 << 20,
            ..Bounds::DEFAULT
        };
        let sql = "SELECT a.value FROM range(200000) a JOIN range(200000) b ON a.value = b.value";
        let df = small.session().sql(sql).await.unwrap();
        let error = small.collect(df, "joined").await.unwrap_err().to_string();
        assert!(
            error.contains("joined") && error.contains("Resources exhausted"),
            "{error}"
        );
        // Rows past the result's bound.
        let narrow = Bounds {
            result: 1 << 20,
            ..Bounds::DEFAULT
        };
        let df = narrow
            .session()
            .sql("SELECT value FROM range(1000000)")
            .await
            .unwrap();
        let error = narrow.collect(df, "many").await.unwrap_err().to_string();
        assert!(
            error.contains("many: the query's rows pass 1 MiB"),
            "{error}"
        );
        // A query past its time.
        let brief = Bounds {
            time: Duration::from_millis(200),
            ..Bounds::DEFAULT
        };
        let sql = "SELECT sum(value) FROM range(10000000000)";
        let df = brief.session().sql(sql).await.unwrap();
        let error = brief.collect(df, "slow").await.unwrap_err().to_string();
        assert!(error.contains("slow: the query ran past 0.2 s"), "{error}");
        // Slices of one buffer count their own rows, not the buffer: 200 slices of 1 M numbers.
        let df = narrow
            .session()
            .sql("SELECT value FROM range(1000000)")
            .await
            .unwrap();
        let whole = arrow::compute::concat_batches(
            &df.schema().as_arrow().clone().into(),
            &df.collect().await.unwrap(),
        )
        .unwrap();
        let slices: Vec<RecordBatch> = (0..200).map(|i| whole.slice(i * 5_000, 5_000)).collect();
        let counted: usize = slices.iter().map(size).sum();
        assert!(
            counted < 2 * size(&whole),
            "{counted} bytes counted for {}",
            size(&whole)
        );
        // A flow that read much may write as much.
        assert_eq!(Bounds::reading(1 << 30).result, 4 << 30);
        assert_eq!(Bounds::reading(1 << 20).result, Bounds::DEFAULT.result);
        // Within all three, the rows.
        let df = Bounds::DEFAULT
            .session()
            .sql("SELECT value FROM range(1000)")
            .await
            .unwrap();
        let rows = Bounds::DEFAULT.collect(df, "few").await.unwrap();
        assert_eq!(rows.iter().map(|b| b.num_rows()).sum::<usize>(), 1000);
    }
}
