//! The registry of labs and the tokens that open them, kept in the history database. The access
//! code owns it: authorization reads tokens back from here, the instructor's pages make labs and
//! tokens through it.

use app::model::{DEFAULT_LAB, Role};

use crate::store::{History, HistoryError, forget_lab, now};

/// A lab made on this server, as the registry keeps it.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct LabRecord {
    pub name: String,
    pub created_at: String,
    /// Its freshness and reconciliation pages may be read without a token.
    pub public: bool,
}

/// A token as stored: its id, what it opens, and the argon2 hash of its secret (never the secret).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredToken {
    pub id: String,
    /// Learner or viewer.
    pub role: Role,
    pub hash: String,
}

#[derive(Clone)]
pub struct Registry {
    history: History,
}

impl Registry {
    pub fn new(history: History) -> Self {
        Self { history }
    }

    /// The labs recorded on this server, by name (`default` only once its settings were saved).
    pub async fn labs(&self) -> Result<Vec<LabRecord>, HistoryError> {
        Ok(
            sqlx::query_as("SELECT name, created_at, public FROM labs ORDER BY name")
                .fetch_all(self.history.pool())
                .await?,
        )
    }

    /// Records a new lab with its learner token; `false` if a lab of that name exists.
    pub async fn create_lab(
        &self,
        name: &str,
        learner: &StoredToken,
    ) -> Result<bool, HistoryError> {
        let mut tx = self.history.write().await?;
        let created = sqlx::query("INSERT OR IGNORE INTO labs (name, created_at) VALUES (?, ?)")
            .bind(name)
            .bind(now())
            .execute(&mut *tx)
            .await?
            .rows_affected()
            == 1;
        if created {
            // Tokens a lab of this name had before (a delete racing a late insert) open nothing.
            sqlx::query("DELETE FROM tokens WHERE lab = ?")
                .bind(name)
                .execute(&mut *tx)
                .await?;
            insert_token(&mut tx, name, learner).await?;
        }
        tx.commit().await?;
        Ok(created)
    }

    /// Forgets a lab: its row, its tokens and every history row of it, so a new lab of the same
    /// name starts clean.
    pub async fn delete_lab(&self, name: &str) -> Result<(), HistoryError> {
        let mut tx = self.history.write().await?;
        forget_lab(&mut tx, name).await?;
        for statement in [
            "DELETE FROM tokens WHERE lab = ?",
            "DELETE FROM labs WHERE name = ?",
        ] {
            sqlx::query(statement).bind(name).execute(&mut *tx).await?;
        }
        tx.commit().await?;
        Ok(())
    }

    /// Opens (or closes) a lab's public pages; `default` gets a row the first time. `false` if
    /// the lab is gone.
    pub async fn set_public(&self, lab: &str, public: bool) -> Result<bool, HistoryError> {
        let pool = self.history.pool();
        let done = if lab == DEFAULT_LAB {
            sqlx::query(
                "INSERT INTO labs (name, created_at, public) VALUES (?, ?, ?) \
                 ON CONFLICT (name) DO UPDATE SET public = excluded.public",
            )
            .bind(lab)
            .bind(now())
            .bind(public)
            .execute(pool)
            .await?
        } else {
            sqlx::query("UPDATE labs SET public = ? WHERE name = ?")
                .bind(public)
                .bind(lab)
                .execute(pool)
                .await?
        };
        Ok(done.rows_affected() == 1)
    }

    /// Adds a token to a lab that exists (`default` always does); `false` if the lab is gone.
    pub async fn add_token(&self, lab: &str, token: &StoredToken) -> Result<bool, HistoryError> {
        let mut tx = self.history.write().await?;
        let exists = lab == DEFAULT_LAB
            || sqlx::query("SELECT 1 FROM labs WHERE name = ?")
                .bind(lab)
                .fetch_optional(&mut *tx)
                .await?
                .is_some();
        if exists {
            insert_token(&mut tx, lab, token).await?;
        }
        tx.commit().await?;
        Ok(exists)
    }

    /// Replaces lab `lab`'s learner tokens by `token` (a lost one): the old ones open nothing
    /// from now on. `false` if the lab is gone.
    pub async fn replace_learner_token(
        &self,
        lab: &str,
        token: &StoredToken,
    ) -> Result<bool, HistoryError> {
        let mut tx = self.history.write().await?;
        let exists = sqlx::query("SELECT 1 FROM labs WHERE name = ?")
            .bind(lab)
            .fetch_optional(&mut *tx)
            .await?
            .is_some();
        if exists {
            sqlx::query("DELETE FROM tokens WHERE lab = ? AND role = 'learner'")
                .bind(lab)
                .execute(&mut *tx)
                .await?;
            insert_token(&mut tx, lab, token).await?;
        }
        tx.commit().await?;
        Ok(exists)
    }

    /// The lines of class `class` made into labs so far, with their labs.
    pub async fn class_lines(&self, class: &str) -> Result<Vec<(String, String)>, HistoryError> {
        Ok(
            sqlx::query_as("SELECT line, lab FROM class_members WHERE class = ? ORDER BY lab")
                .bind(class)
                .fetch_all(self.history.pool())
                .await?,
        )
    }

    /// Adds a class viewer's token to class `class`, whose board it shows with names hidden or
    /// not (for every viewer of the class); `false` if there is no such class.
    pub async fn add_class_token(
        &self,
        class: &str,
        token: &StoredToken,
        hide_names: bool,
    ) -> Result<bool, HistoryError> {
        let mut tx = self.history.write().await?;
        let done = sqlx::query("UPDATE classes SET hide_names = ? WHERE name = ?")
            .bind(hide_names)
            .bind(class)
            .execute(&mut *tx)
            .await?;
        if done.rows_affected() == 1 {
            insert_token(&mut tx, &format!("{}{class}", super::CLASS_PREFIX), token).await?;
        }
        tx.commit().await?;
        Ok(done.rows_affected() == 1)
    }

    /// Whether class `class`'s board hides names from its viewers.
    pub async fn hides_names(&self, class: &str) -> Result<bool, HistoryError> {
        let hide: Option<bool> =
            sqlx::query_scalar("SELECT hide_names FROM classes WHERE name = ?")
                .bind(class)
                .fetch_optional(self.history.pool())
                .await?;
        Ok(hide.unwrap_or(false))
    }

    /// Forgets class `class` (its labs deleted first, one by one).
    pub async fn remove_class(&self, class: &str) -> Result<(), HistoryError> {
        let mut tx = self.history.write().await?;
        for statement in [
            "DELETE FROM class_members WHERE class = ?",
            "DELETE FROM classes WHERE name = ?",
            "DELETE FROM tokens WHERE lab = 'class:' || ?",
        ] {
            sqlx::query(statement).bind(class).execute(&mut *tx).await?;
        }
        tx.commit().await?;
        Ok(())
    }

    /// Records that `line` of class `class` became lab `lab` (the class is made at its first).
    pub async fn add_to_class(
        &self,
        class: &str,
        line: &str,
        lab: &str,
    ) -> Result<(), HistoryError> {
        let mut tx = self.history.write().await?;
        sqlx::query("INSERT OR IGNORE INTO classes (name, created_at) VALUES (?, ?)")
            .bind(class)
            .bind(now())
            .execute(&mut *tx)
            .await?;
        sqlx::query("INSERT OR REPLACE INTO class_members (class, line, lab) VALUES (?, ?, ?)")
            .bind(class)
            .bind(line)
            .bind(lab)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(())
    }

    /// The token with this id and the lab it opens, if any.
    pub async fn token(&self, id: &str) -> Result<Option<(String, StoredToken)>, HistoryError> {
        let row: Option<(String, String, String)> =
            sqlx::query_as("SELECT lab, role, hash FROM tokens WHERE id = ?")
                .bind(id)
                .fetch_optional(self.history.pool())
                .await?;
        let Some((lab, role, hash)) = row else {
            return Ok(None);
        };
        let role = Role::parse(&role)
            .filter(|r| matches!(r, Role::Learner | Role::Viewer | Role::ClassViewer))
            .ok_or_else(|| {
                HistoryError::unreadable(
                    format!("token {id}"),
                    format!("role {role:?} is not learner or viewer"),
                )
            })?;
        let stored = StoredToken {
            id: id.to_string(),
            role,
            hash,
        };
        Ok(Some((lab, stored)))
    }
}

async fn insert_token(
    tx: &mut sqlx::Transaction<'_, sqlx::Sqlite>,
    lab: &str,
    token: &StoredToken,
) -> Result<(), HistoryError> {
    sqlx::query("INSERT INTO tokens (id, lab, role, hash, created_at) VALUES (?, ?, ?, ?, ?)")
        .bind(&token.id)
        .bind(lab)
        .bind(token.role.as_str())
        .bind(&token.hash)
        .bind(now())
        .execute(&mut **tx)
        .await?;
    Ok(())
}
