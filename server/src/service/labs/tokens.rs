//! A lab's tokens made after the lab: a viewer's, and a learner's that replaces a lost one.

use app::api::ApiError;
use app::model::{NewToken, Role};

use super::Labs;
use crate::service::error::failed;

impl Labs {
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
