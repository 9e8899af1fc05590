//! A lab's tokens made after the lab: a viewer's, and a learner's that replaces a lost one; a
//! class's viewer token, which opens its board and no lab.

use app::api::ApiError;
use app::model::{NewToken, Role};

use super::Labs;
use crate::service::error::failed;

impl Labs {
    /// A token that opens class `class`'s board, names hidden or not (for all its viewers).
    pub(super) async fn new_class_token(
        &self,
        class: &str,
        hide_names: bool,
    ) -> Result<NewToken, ApiError> {
        let token = self
            .auth
            .mint(&format!("class {class}"), Role::ClassViewer)
            .await?;
        let registry = self.auth.registry();
        let made = registry
            .add_class_token(class, &token.stored, hide_names)
            .await;
        if !made.map_err(failed)? {
            return Err(ApiError::NotFound(format!("no class named {class}")));
        }
        Ok(NewToken {
            lab: class.into(),
            role: Role::ClassViewer,
            token: token.plain,
        })
    }

    /// Forgets the sessions and verified tokens of class `class`'s viewers (it is deleted).
    pub(crate) fn forget_class(&self, class: &str) {
        self.auth.forget_class(class);
    }

    /// A new token of `role` for lab `lab` (the caller was allowed): a viewer's is added; a
    /// learner's replaces the lab's learner tokens, which open nothing from now on.
    pub(super) async fn new_token(&self, lab: &str, role: Role) -> Result<NewToken, ApiError> {
        let token = self.auth.mint(lab, role).await?;
        let registry = self.auth.registry();
        let made = match role {
            Role::Learner => registry.replace_learner_token(lab, &token.stored).await,
            _ => registry.add_token(lab, &token.stored).await,
        };
        if !made.map_err(failed)? {
            return Err(ApiError::NotFound(format!("no lab {lab:?}")));
        }
        if role == Role::Learner {
            self.auth.forget_learners(lab);
        }
        Ok(NewToken {
            lab: lab.into(),
            role,
            token: token.plain,
        })
    }
}
