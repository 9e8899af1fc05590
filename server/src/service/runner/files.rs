//! A lab's files as its dashboard changes them: switching its pipeline (never under a run) and
//! landing files, each announced so open pages refresh.

use app::api::ApiError;
use app::model::{Announcement, Example, LandedFile, PipelineKind, ProjectCode};

use super::LabRunner;
use crate::service::error::{failed, refused};
use crate::service::pages::project_files;

impl LabRunner {
    /// Switches the lab's pipeline; its tables go (when `confirm`), its landed files stay.
    pub(super) async fn switch(
        &self,
        to: PipelineKind,
        example: Example,
        confirm: bool,
    ) -> Result<ProjectCode, ApiError> {
        if self.is_running() {
            return Err(ApiError::Busy(
                "a run is in progress; switch the pipeline when it ends".into(),
            ));
        }
        self.cool();
        let lab = self.lab.clone();
        // The lab's lock may wait for a run started from the command line.
        tokio::task::spawn_blocking(move || lab.switch(to, example, confirm))
            .await
            .map_err(|e| ApiError::Failed(format!("switching the pipeline: {e}")))?
            .map_err(refused)?;
        self.announce(Announcement::Reset);
        project_files::code(&self.lab)
    }

    /// The landing folder after files landed, announced.
    pub(super) async fn landed(&self) -> Result<Vec<LandedFile>, ApiError> {
        self.announce(Announcement::Landed);
        project_files::landing(&self.lab).await.map_err(failed)
    }
}
