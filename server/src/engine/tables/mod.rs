//! The lab's Delta tables: their schemas, opening and creating them, the `txn` versions streams
//! store their progress in; `writes.rs` how rows and progress are committed; `cutter.rs` is the
//! object store that lets crash tests cut a commit in half.

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;

use arrow::datatypes::{DataType, Field, Schema, SchemaRef, TimeUnit};
use deltalake::kernel::StructType;
use deltalake::kernel::engine::arrow_conversion::TryIntoKernel;
use deltalake::logstore::object_store::local::LocalFileSystem;
use deltalake::protocol::SaveMode;
use deltalake::{DeltaTable, DeltaTableBuilder, DeltaTableError, TableProperty};

use crate::crash::{CrashPoint, Moment};
use cutter::CommitCutter;

pub mod changes;
pub mod commits;
pub mod compact;
mod cutter;
mod kept;
mod named;
mod order;
mod session;
mod txns;
pub mod vacuum;
mod writes;

pub use order::{in_order, in_order_writes};
pub use session::{know, provider, query, read_files, register, session};
pub use writes::{
    CHECKPOINT_INTERVAL, append, commit_files, commit_properties, writer, writer_properties,
};

#[derive(Debug, thiserror::Error)]
pub enum TableError {
    #[error("table {table}: {source}")]
    Delta {
        table: String,
        source: DeltaTableError,
    },
    #[error("table {table}: {source}")]
    Query {
        table: String,
        source: datafusion::error::DataFusionError,
    },
    #[error("table {table}: {source}")]
    Arrow {
        table: String,
        source: arrow::error::ArrowError,
    },
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{what}: column {column}: {detail}")]
    Column {
        what: String,
        column: String,
        detail: String,
    },
    #[error(
        "no table named {0:?}: the tables are bronze_orders, bronze_rejects, orders, hourly_sales, and those a pipeline has written"
    )]
    Unknown(String),
    #[error(
        "no table can be named {0:?}: a table's name is letters, digits and _, starting with a letter or _ (it names a folder of the lab's own)"
    )]
    BadName(String),
}

/// Whether `name` can name a table: an identifier, so its folder is a child of the lab's tables
/// folder and nothing else (no `..`, no `/`, never absolute).
pub fn is_table_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// The four tables of a lab.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum TableName {
    BronzeOrders,
    BronzeRejects,
    Orders,
    HourlySales,
}

impl TableName {
    pub const ALL: [TableName; 4] = [
        TableName::BronzeOrders,
        TableName::BronzeRejects,
        TableName::Orders,
        TableName::HourlySales,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            TableName::BronzeOrders => "bronze_orders",
            TableName::BronzeRejects => "bronze_rejects",
            TableName::Orders => "orders",
            TableName::HourlySales => "hourly_sales",
        }
    }

    pub fn parse(name: &str) -> Result<Self, TableError> {
        Self::ALL
            .into_iter()
            .find(|t| t.as_str() == name)
            .ok_or_else(|| TableError::Unknown(name.to_string()))
    }

    /// The columns a listing is sorted by (SPEC §2).
    pub fn key(self) -> &'static [&'static str] {
        match self {
            TableName::BronzeOrders | TableName::BronzeRejects => &["partition", "offset"],
            TableName::Orders => &["order_id"],
            TableName::HourlySales => &["hour"],
        }
    }

    /// Which stream writes the table: a crash point names the stream.
    fn stream(self) -> &'static str {
        match self {
            TableName::BronzeOrders | TableName::BronzeRejects => "bronze",
            TableName::Orders => "silver",
            TableName::HourlySales => "gold",
        }
    }

    pub fn schema(self) -> SchemaRef {
        let ts = || DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into()));
        let money = || DataType::Decimal128(18, 2);
        let landed = || {
            vec![
                Field::new("partition", DataType::Int32, false),
                Field::new("offset", DataType::Int64, false),
                Field::new("kafka_timestamp", ts(), true),
                Field::new("ingested_at", ts(), false),
            ]
        };
        let event = || {
            vec![
                Field::new("order_id", DataType::Int64, false),
                Field::new("customer_id", DataType::Utf8, false),
                Field::new("status", DataType::Utf8, false),
                Field::new("amount", money(), false),
                Field::new("event_time", ts(), false),
            ]
        };
        let fields = match self {
            TableName::BronzeOrders => [landed(), event()].concat(),
            TableName::BronzeRejects => [
                landed(),
                vec![
                    Field::new("value", DataType::Utf8, false),
                    Field::new("reason", DataType::Utf8, false),
                ],
            ]
            .concat(),
            TableName::Orders => event(),
            TableName::HourlySales => vec![
                Field::new("hour", ts(), false),
                Field::new("orders", DataType::Int64, false),
                Field::new("revenue", money(), false),
            ],
        };
        Arc::new(Schema::new(fields))
    }
}

impl fmt::Display for TableName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Where a lab's tables live, the crash point (if any) their commits obey, and the tables kept
/// open between flows (shared by every clone).
#[derive(Debug, Clone)]
pub struct Tables {
    root: PathBuf,
    crash_at: Option<CrashPoint>,
    kept: Arc<kept::Kept>,
}

impl Tables {
    pub fn new(root: impl Into<PathBuf>, crash_at: Option<CrashPoint>) -> Self {
        Self {
            root: root.into(),
            crash_at,
            kept: Default::default(),
        }
    }

    pub fn path(&self, name: TableName) -> PathBuf {
        self.root.join(name.as_str())
    }

    /// The folder of table `name`, refused unless `name` is a table name ([`is_table_name`]).
    fn folder(&self, name: &str) -> Result<PathBuf, TableError> {
        match is_table_name(name) {
            true => Ok(self.root.join(name)),
            false => Err(TableError::BadName(name.to_string())),
        }
    }

    fn builder(&self, name: TableName) -> Result<DeltaTableBuilder, TableError> {
        self.builder_at(name.as_str(), name.stream())
    }

    /// A builder for the table in folder `name`, whose commits a crash test may cut when it names
    /// `flow` at `after-write`.
    fn builder_at(&self, name: &str, flow: &str) -> Result<DeltaTableBuilder, TableError> {
        let path = self.folder(name)?;
        std::fs::create_dir_all(&path).map_err(|source| TableError::Io {
            path: path.clone(),
            source,
        })?;
        let path = std::fs::canonicalize(&path).map_err(|source| TableError::Io {
            path: path.clone(),
            source,
        })?;
        let url = url::Url::from_directory_path(&path).map_err(|_| TableError::Io {
            path: path.clone(),
            source: std::io::Error::other("not an absolute path"),
        })?;
        let store = Arc::new(CommitCutter {
            inner: Arc::new(LocalFileSystem::new()),
            cut: self
                .crash_at
                .clone()
                .filter(|c| c.stream == flow && c.moment == Moment::AfterWrite),
        });
        DeltaTableBuilder::from_url(url.clone())
            .map(|b| b.with_storage_backend(store, url))
            .map_err(|source| TableError::Delta {
                table: name.to_string(),
                source,
            })
    }

    /// Opens a table, or `None` if it was never created.
    pub async fn open(&self, name: TableName) -> Result<Option<DeltaTable>, TableError> {
        self.open_at(name.as_str(), name.stream()).await
    }

    /// Opens the table in folder `name` (its commits cut for a crash test naming `flow`).
    /// A table kept from an earlier open is brought up to date rather than opened anew.
    async fn open_at(&self, name: &str, flow: &str) -> Result<Option<DeltaTable>, TableError> {
        let folder = self.folder(name)?;
        if !folder.join("_delta_log").exists() {
            self.kept.forget(name);
            return Ok(None);
        }
        let delta = |source| TableError::Delta {
            table: name.to_string(),
            source,
        };
        // A crash test's tables cut the commits of the flow it names, so each is opened anew
        // for the flow asking, never handed over from another.
        let keep = self.crash_at.is_none();
        let table = match keep.then(|| self.kept.get(name, &folder)).flatten() {
            Some(mut table) => {
                table.update_state().await.map_err(delta)?;
                table
            }
            None => self.builder_at(name, flow)?.load().await.map_err(delta)?,
        };
        if keep {
            self.kept.keep(name, &folder, &table);
        }
        Ok(Some(table))
    }

    /// Keeps `table` as just committed by a flow, so the next flow opening it (silver after
    /// bronze, the check after all) finds it up to date instead of replaying that commit again.
    pub fn keep_committed(&self, table: &DeltaTable) {
        if self.crash_at.is_none() {
            let name = table_name(table);
            self.kept.keep(&name, &self.root.join(&name), table);
        }
    }

    /// Opens a table, creating it empty (version 0) on first use.
    pub async fn open_or_create(&self, name: TableName) -> Result<DeltaTable, TableError> {
        if let Some(table) = self.open(name).await? {
            return Ok(table);
        }
        let delta = |source| TableError::Delta {
            table: name.to_string(),
            source,
        };
        let schema: StructType = name
            .schema()
            .as_ref()
            .try_into_kernel()
            .map_err(|e| delta(e.into()))?;
        let mut create = self
            .builder(name)?
            .build()
            .map_err(delta)?
            .create()
            .with_table_name(name.as_str())
            .with_columns(schema.fields().cloned())
            .with_configuration_property(
                TableProperty::CheckpointInterval,
                Some(CHECKPOINT_INTERVAL),
            )
            .with_save_mode(SaveMode::Ignore);
        if name == TableName::BronzeOrders {
            // Silver and gold read only what each bronze commit added.
            create = create
                .with_configuration_property(TableProperty::EnableChangeDataFeed, Some("true"));
        }
        create.await.map_err(delta)
    }

    /// The version a stream stored under `app_id` in the table's `txn` actions (answers kept
    /// with the lab's tables, brought up to date by the commits since).
    pub async fn txn_version(
        &self,
        table: &DeltaTable,
        app_id: &str,
    ) -> Result<Option<i64>, TableError> {
        let delta = |source| TableError::Delta {
            table: table_name(table),
            source,
        };
        txns::version(&self.kept.txns, table, app_id)
            .await
            .map_err(delta)
    }

    /// The state flow `flow` keeps in memory beside its tables (gold's open hours), if it is a
    /// `T`; `take` removes it (the run will change it). What it holds at is the flow's to check.
    pub fn kept_state<T: std::any::Any + Send + Sync>(
        &self,
        flow: &str,
        take: bool,
    ) -> Option<Arc<T>> {
        self.kept.state(flow, take)
    }

    /// Keeps `state` for flow `flow` until it is taken or replaced, or the tables removed.
    pub fn keep_state<T: std::any::Any + Send + Sync>(&self, flow: &str, state: Arc<T>) {
        self.kept.keep_state(flow, state)
    }

    /// The folder holding every table.
    pub fn root(&self) -> &std::path::Path {
        &self.root
    }

    /// Removes every table of the lab.
    pub fn remove_all(&self) -> Result<(), TableError> {
        self.kept.forget_all();
        match std::fs::remove_dir_all(&self.root) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(source) => Err(TableError::Io {
                path: self.root.clone(),
                source,
            }),
        }
    }
}

/// The table's name: the last part of its folder.
pub fn table_name(table: &DeltaTable) -> String {
    table
        .table_url()
        .path_segments()
        .and_then(|s| s.filter(|p| !p.is_empty()).last())
        .unwrap_or("table")
        .to_string()
}

/// The table's columns as Arrow has them.
pub fn arrow_schema(table: &DeltaTable) -> Result<SchemaRef, TableError> {
    let snapshot = table.snapshot().map_err(|source| TableError::Delta {
        table: table_name(table),
        source,
    })?;
    Ok(snapshot.snapshot().arrow_schema())
}

/// The table's version, 0 for a new table.
pub fn version(table: &DeltaTable) -> i64 {
    table.version().map_or(0, |v| v as i64)
}
