//! Tables named by a pipeline's statements, beside the course's four: opened by name, created
//! with the schema of the first rows written to them.

use arrow::datatypes::Schema;
use deltalake::kernel::StructType;
use deltalake::kernel::engine::arrow_conversion::TryIntoKernel;
use deltalake::protocol::SaveMode;
use deltalake::{DeltaTable, TableProperty};

use super::{TableError, Tables};

impl Tables {
    /// Opens table `name`, or `None` if it was never created.
    pub async fn open_named(&self, name: &str) -> Result<Option<DeltaTable>, TableError> {
        self.open_at(name, name).await
    }

    /// Opens table `name` for flow `flow`: a crash test naming the flow cuts its commits.
    pub async fn open_for(&self, name: &str, flow: &str) -> Result<Option<DeltaTable>, TableError> {
        self.open_at(name, flow).await
    }

    /// Creates table `name` empty with `schema`, its change feed on (streaming reads of it read
    /// only what each commit added).
    pub async fn create_named(
        &self,
        name: &str,
        schema: &Schema,
    ) -> Result<DeltaTable, TableError> {
        self.create_for(name, schema, name).await
    }

    /// [`Tables::create_named`] for flow `flow`, whose crash test may cut the table's commits.
    pub async fn create_for(
        &self,
        name: &str,
        schema: &Schema,
        flow: &str,
    ) -> Result<DeltaTable, TableError> {
        let delta = |source| TableError::Delta {
            table: name.to_string(),
            source,
        };
        let kernel: StructType = schema.try_into_kernel().map_err(|e| delta(e.into()))?;
        self.builder_at(name, flow)?
            .build()
            .map_err(delta)?
            .create()
            .with_table_name(name)
            .with_columns(kernel.fields().cloned())
            .with_configuration_property(TableProperty::EnableChangeDataFeed, Some("true"))
            .with_configuration_property(
                TableProperty::CheckpointInterval,
                Some(super::CHECKPOINT_INTERVAL),
            )
            .with_save_mode(SaveMode::Ignore)
            .await
            .map_err(delta)
    }

    /// When table `name` was created (its first commit's time, in ms): a table removed and made
    /// again has the same versions but not the same birth.
    pub fn born(&self, name: &str) -> Option<i64> {
        let first = self
            .folder(name)
            .ok()?
            .join("_delta_log")
            .join(format!("{:020}.json", 0));
        let modified = std::fs::metadata(first).and_then(|m| m.modified()).ok()?;
        let since = modified.duration_since(std::time::UNIX_EPOCH).ok()?;
        Some(since.as_millis() as i64)
    }

    /// Removes table `name` (a full refresh); nothing if it is not there.
    pub fn remove_named(&self, name: &str) -> Result<(), TableError> {
        let path = self.folder(name)?;
        match std::fs::remove_dir_all(&path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                Err(TableError::Io { path, source: e })
            }
            _ => Ok(()),
        }
    }
}
