//! Labs made by another process on the same data folder (`reckon class create`): a running
//! server opens them when first asked, without a restart.

use app::api::ApiError;

use super::Labs;
use crate::service::error::failed;
use crate::service::lab::Lab;
use crate::service::runner::LabRunner;

impl Labs {
    /// Opens the labs the registry holds that this server has not: made by another process on
    /// the same data folder (`reckon class create`), served from now on without a restart.
    pub(crate) async fn adopt(&self) -> Result<(), ApiError> {
        let records = self.auth.registry().labs().await.map_err(failed)?;
        if records.iter().all(|r| self.get(&r.name).is_some()) {
            return Ok(());
        }
        // Not beside a lab being made or deleted, and from the registry as it is once neither
        // is under way: a lab deleted meanwhile is not brought back.
        let _managing = self.managing.lock().await;
        let records = self.auth.registry().labs().await.map_err(failed)?;
        for record in records {
            if self.get(&record.name).is_some() {
                continue;
            }
            let config = self.root.for_lab(&record.name);
            let lab = Lab::with_history(config, self.history.clone()).sharing(self.kafka.clone());
            let dashboard = LabRunner::new(
                lab,
                self.auth.registry().clone(),
                (self.run_slots.clone(), self.run_limits),
                record.public,
            );
            if self.scheduling.load(std::sync::atomic::Ordering::Relaxed) {
                dashboard.start_schedule();
            }
            tracing::info!("lab {} made elsewhere, served from now on", record.name);
            self.dashboards().insert(record.name, dashboard);
        }
        Ok(())
    }
}
