//! What a lab's run does after its check: small files packed into one
//! (`tables::compact`), and now and then the files out of use deleted (`tables::vacuum`).
//! Neither changes what the tables hold. A failure leaves a table as it was (a Delta commit is
//! whole or absent) and is logged: the run's data is committed already.

use std::time::{Duration, Instant};

use super::Lab;
use crate::engine::tables::{TableName, compact, vacuum};

/// A lab's tables are vacuumed at most this often: a vacuum lists each table's folder.
const VACUUM_EVERY: Duration = Duration::from_secs(3600);

impl Lab {
    /// After a check, which has counted every file of the tables, their small files are
    /// compacted.
    pub(super) async fn compact(&self) {
        for name in TableName::ALL {
            let started = Instant::now();
            let ms = || started.elapsed().as_secs_f64() * 1e3;
            match compact::compact(&self.tables, name, self.config.compact_after).await {
                Ok(Some(done)) => tracing::debug!(
                    ms = ms(),
                    "compacted {name}: {} files ({} bytes) into one",
                    done.files,
                    done.bytes
                ),
                Ok(None) => tracing::debug!(ms = ms(), "{name} has no pack to compact"),
                Err(e) => tracing::warn!("could not compact {name}'s small files: {e}"),
            }
        }
    }

    /// After a check, at most once in [`VACUUM_EVERY`] for this lab: the files of `orders` and
    /// `hourly_sales` out of use for longer than the lab's `vacuum_after` are deleted. Never
    /// when that is `None`. The check has just counted both tables as they are, and no stream
    /// reads their history (silver and gold read bronze's), so no reader is owed a file gone.
    pub(super) async fn vacuum(&self) {
        let Some(keep) = self.config.vacuum_after else {
            return;
        };
        {
            let mut last = self.vacuumed_at.lock().expect("the lab's last vacuum");
            if last.is_some_and(|at| at.elapsed() < VACUUM_EVERY) {
                return;
            }
            *last = Some(Instant::now());
        }
        for name in vacuum::VACUUMED {
            let started = Instant::now();
            match vacuum::vacuum(&self.tables, name, keep).await {
                Ok(Some(done)) => tracing::info!(
                    ms = started.elapsed().as_secs_f64() * 1e3,
                    "vacuumed {name}: {} files out of use for over {} h deleted",
                    done.files,
                    keep.as_secs() / 3600
                ),
                Ok(None) => {}
                Err(e) => tracing::warn!("could not vacuum {name}: {e}"),
            }
        }
    }
}
