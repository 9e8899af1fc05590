//! What a lab's run does after its check: small files packed into one
//! (`tables::compact`), and now and then the files out of use deleted (`tables::vacuum`).
//! Neither changes what the tables hold. A failure leaves a table as it was (a Delta commit is
//! whole or absent) and is logged: the run's data is committed already.

use std::time::{Duration, Instant};

use super::Lab;
use crate::engine::tables::{TableName, compact, vacuum};

/// A lab's tables are vacuumed at most this often: a vacuum lists each table's folder, and
/// one that deletes files adds two commits to the table.
const VACUUM_EVERY: Duration = Duration::from_secs(3600);

/// The file in a lab's `state/` folder whose time is that of the lab's last vacuum (by any
/// process: the server's, or a command's).
const VACUUMED: &str = "vacuumed";

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

    /// After a check that found no PROBLEM, at most once in [`VACUUM_EVERY`] for this lab: the
    /// files of `orders` and `hourly_sales` out of use for longer than the lab's `vacuum_after`
    /// are deleted. Never when that is `None`. The check has just counted both tables as they
    /// are, and no stream reads their history (silver and gold read bronze's), so no reader is
    /// owed a file gone.
    pub(super) async fn vacuum(&self) {
        let Some(keep) = self.config.vacuum_after else {
            return;
        };
        let marker = self.config.state_dir().join(VACUUMED);
        let last = std::fs::metadata(&marker).and_then(|m| m.modified());
        if last.is_ok_and(|at| at.elapsed().is_ok_and(|since| since < VACUUM_EVERY)) {
            return;
        }
        let now = chrono::Utc::now().to_rfc3339();
        let noted = std::fs::create_dir_all(marker.parent().expect("state/"))
            .and_then(|()| std::fs::write(&marker, now));
        if let Err(e) = noted {
            tracing::warn!(
                "not vacuuming: cannot note the time in {}: {e}",
                marker.display()
            );
            return;
        }
        for name in vacuum::VACUUMED {
            let started = Instant::now();
            match vacuum::vacuum(&self.tables, name, keep).await {
                Ok(Some(done)) => tracing::info!(
                    ms = started.elapsed().as_secs_f64() * 1e3,
                    "vacuumed {name}: {} files out of use for over {} deleted",
                    done.files,
                    crate::config::hours_text(keep)
                ),
                Ok(None) => {}
                Err(e) => tracing::warn!("could not vacuum {name}: {e}"),
            }
        }
    }
}
