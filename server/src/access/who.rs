//! Who a request comes from, and what each may do to which lab.

use app::api::{Access, ApiError};
use app::model::Role;

/// Who a request comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Who {
    /// No instructor token is configured: a single-user tool on loopback, asking nobody.
    Local,
    Instructor,
    /// Produces, runs and resets one lab.
    Learner(String),
    /// Reads one lab's pages.
    Viewer(String),
    /// Reads one class's board (with names, or without, as the instructor chose), no lab.
    ClassViewer(String),
    /// No token, or one that opens nothing.
    Anonymous,
}

impl Who {
    pub fn role(&self) -> Role {
        match self {
            Who::Local => Role::Local,
            Who::Instructor => Role::Instructor,
            Who::Learner(_) => Role::Learner,
            Who::Viewer(_) => Role::Viewer,
            Who::ClassViewer(_) => Role::ClassViewer,
            Who::Anonymous => Role::Anonymous,
        }
    }

    /// The lab a learner's or viewer's token opens.
    pub fn lab(&self) -> Option<&str> {
        match self {
            Who::Learner(lab) | Who::Viewer(lab) => Some(lab),
            _ => None,
        }
    }

    /// Whether this person may `access` lab `lab` (public: its public pages are open to all).
    pub fn may(&self, lab: &str, access: Access, public: bool) -> Result<(), ApiError> {
        let sign_in = || {
            ApiError::Unauthorized(
                "this server asks for a token: send `Authorization: Bearer <token>`, or sign in at /login"
                    .into(),
            )
        };
        match (self, access) {
            (Who::Local | Who::Instructor, _) => Ok(()),
            (_, Access::Public) if public => Ok(()),
            (Who::Anonymous, _) => Err(sign_in()),
            (Who::ClassViewer(class), _) => Err(ApiError::Forbidden(format!(
                "your token opens class {class}'s board, not a lab"
            ))),
            (_, Access::Manage) => Err(ApiError::Forbidden(format!(
                "only the instructor may do this (make or delete labs, price a cluster); your token \
                 is {}'s {}",
                self.lab().unwrap_or_default(),
                self.role()
            ))),
            (Who::Learner(own) | Who::Viewer(own), _) if own != lab => Err(ApiError::Forbidden(
                format!("your token opens lab {own}, not lab {lab}"),
            )),
            (Who::Viewer(_), Access::Write) => Err(ApiError::Forbidden(format!(
                "a viewer token may only read lab {lab}; producing, running, resetting and \
                 changing settings need the lab's learner token"
            ))),
            _ => Ok(()),
        }
    }
}
