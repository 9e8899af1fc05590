//! A class's board and its deletion, over the server's labs (issue "The classroom").

use app::api::{ApiError, Backend, Server};
use app::model::{ClassProgress, ClassRow};

use super::Labs;
use crate::service::error::failed;

impl Labs {
    /// Class `class`'s board: each of its labs' milestones (the caller was found to be the
    /// instructor or the class's viewer). A lab of the class deleted since is left off. For a
    /// viewer of a class whose board hides names, each lab is `learner N` and its line is not said.
    pub(super) async fn class_board(
        &self,
        class: &str,
        viewer: bool,
    ) -> Result<ClassProgress, ApiError> {
        let labs = self;
        let registry = labs.registry();
        let lines = registry.class_lines(class).await.map_err(failed)?;
        if lines.is_empty() {
            return Err(ApiError::NotFound(format!("no class named {class}")));
        }
        let hide = viewer && registry.hides_names(class).await.map_err(failed)?;
        labs.adopt().await?;
        let mut board = ClassProgress {
            class: class.to_string(),
            labs: vec![],
        };
        for (n, (line, lab)) in lines.into_iter().enumerate() {
            let Some(runner) = labs.get(&lab).filter(|r| !r.lab().is_retired()) else {
                continue;
            };
            let mut progress = runner.progress().await?;
            let line = match hide {
                true => {
                    progress.lab = format!("learner {}", n + 1);
                    progress.project = None;
                    String::new()
                }
                false => line,
            };
            board.labs.push(ClassRow { line, progress });
        }
        Ok(board)
    }

    /// Deletes every lab of class `class` and the class (the caller was found to manage labs);
    /// without `confirm`, refuses saying what it would delete. The labs deleted.
    pub(super) async fn delete_class_labs(
        &self,
        headers: &http::HeaderMap,
        class: &str,
        confirm: bool,
        csrf: Option<&str>,
    ) -> Result<Vec<String>, ApiError> {
        let server = self;
        let registry = server.registry();
        // Labs made by `reckon class create` and not opened yet are deleted as the others.
        server.adopt().await?;
        let labs: Vec<String> = (registry.class_lines(class).await.map_err(failed)?)
            .into_iter()
            .map(|(_, lab)| lab)
            .collect();
        if labs.is_empty() {
            return Err(ApiError::NotFound(format!("no class named {class}")));
        }
        if !confirm {
            return Err(ApiError::Busy(format!(
                "deleting class {class} deletes its {} lab(s) ({}) with their topics, tables and \
             history; ask again with confirm",
                labs.len(),
                labs.join(", ")
            )));
        }
        let mut deleted = vec![];
        for lab in labs {
            match server.delete_lab(headers, &lab, csrf).await {
                Ok(()) => deleted.push(lab),
                // Deleted already (by hand): nothing left of it to delete.
                Err(ApiError::NotFound(_)) => {}
                Err(e) => return Err(e),
            }
        }
        registry.remove_class(class).await.map_err(failed)?;
        server.forget_class(class);
        Ok(deleted)
    }
}
