//! The lab's writing tasks (week 14's note to a director, the check's questions, the
//! teach-back): each save kept in the history with its time, the newest shown and counted.
//! A text is bounded before anything reads it: at most [`MAX_WRITING`] bytes, of a known task.

use app::api::ApiError;
use app::model::{MAX_WRITING, TASKS, Writing, prompt};

use crate::service::error::failed;
use crate::service::lab::Lab;
use crate::service::pages::history;

/// Every task, with its newest text (empty when never saved).
pub async fn all(lab: &Lab) -> Result<Vec<Writing>, ApiError> {
    let saved = history(lab)?
        .writings(&lab.config.lab)
        .await
        .map_err(failed)?;
    Ok(TASKS
        .iter()
        .map(|(task, prompt)| {
            let newest = saved.iter().find(|(t, _, _)| t == task);
            Writing {
                task: task.to_string(),
                prompt: prompt.to_string(),
                text: newest.map(|(_, text, _)| text.clone()).unwrap_or_default(),
                at: newest.map(|(_, _, at)| at.clone()),
            }
        })
        .collect())
}

/// Saves `text` as task `task`'s newest.
pub async fn save(lab: &Lab, task: &str, text: &str) -> Result<Writing, ApiError> {
    let Some(prompt) = prompt(task) else {
        let known: Vec<&str> = TASKS.iter().map(|(t, _)| *t).collect();
        return Err(ApiError::field(
            "task",
            format!("{task:?} is no writing task; they are {}", known.join(", ")),
        ));
    };
    if text.len() > MAX_WRITING {
        return Err(ApiError::field(
            "text",
            format!(
                "{} bytes: a writing task holds at most {MAX_WRITING}",
                text.len()
            ),
        ));
    }
    let at = (history(lab)?
        .record_writing(&lab.config.lab, task, text)
        .await)
        .map_err(failed)?;
    Ok(Writing {
        task: task.to_string(),
        prompt: prompt.to_string(),
        text: text.to_string(),
        at: Some(at),
    })
}
