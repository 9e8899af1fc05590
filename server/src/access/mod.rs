//! Who is asking: tokens (made, hashed with argon2, verified), browser sessions, and the rules of
//! what each role may do to which lab. Tokens are never stored or logged in plain: the database
//! keeps `<id>` and the argon2 hash of the secret; this process keeps a cache keyed by a BLAKE2
//! digest of tokens it has verified, so a request costs one argon2 verification per token, not
//! per request.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use app::api::{Access, ApiError};
use app::model::Role;
use blake2::{Blake2s256, Digest};
use tokio::sync::Semaphore;

use crate::limit::{Limit, Rate};
use registry::Registry;

pub mod registry;
mod tokens;
mod who;

pub use tokens::MadeToken;
use tokens::{make_token, random_hex, verify_secret};
pub use who::Who;

/// The cookie holding a browser's session id (HttpOnly, SameSite=Strict).
pub const SESSION_COOKIE: &str = "reckon_session";
/// The header a signed-in browser's API writes carry the session's CSRF token in.
pub const CSRF_HEADER: &str = "x-csrf-token";
/// A class viewer's token is kept under `class:<name>` where a lab's name goes (no lab's name
/// holds a `:`).
pub const CLASS_PREFIX: &str = "class:";
/// How long a browser stays signed in.
const SESSION_LIFETIME: Duration = Duration::from_secs(12 * 3600);

/// A request's caller: who, and, when a browser session says so, the CSRF token its writes need.
#[derive(Debug, Clone)]
pub struct Caller {
    pub who: Who,
    /// `Some` when the caller came by session cookie: writes must then carry this token.
    pub csrf: Option<String>,
}

impl Caller {
    /// Whether this caller may `access` lab `lab` (public: its public pages are open to all),
    /// carrying `csrf` for a write: the one check every lab's page, form and API call makes.
    pub fn may(
        &self,
        lab: &str,
        access: Access,
        public: bool,
        csrf: Option<&str>,
    ) -> Result<(), ApiError> {
        self.who.may(lab, access, public)?;
        match access {
            Access::Write | Access::Manage => self.check_csrf(csrf),
            Access::Public | Access::Read => Ok(()),
        }
    }

    /// Refuses a cookie-borne write that does not carry the session's CSRF token.
    fn check_csrf(&self, given: Option<&str>) -> Result<(), ApiError> {
        match &self.csrf {
            Some(expected) if given != Some(expected.as_str()) => Err(ApiError::Forbidden(
                "this form is stale or came from another site (its CSRF token does not match \
                 your session); reload the page and try again"
                    .into(),
            )),
            _ => Ok(()),
        }
    }
}

struct Session {
    who: Who,
    /// The token signed in with (its BLAKE2 digest): each token's sessions are bounded apart.
    credential: [u8; 32],
    csrf: String,
    started: Instant,
}

/// Browser sessions one token may have: past it, that token's oldest is signed out, never
/// another token's.
const SESSIONS_PER_TOKEN: usize = 32;
/// Browser sessions kept at most: past it, new sign-ins are refused until sessions end.
const MAX_SESSIONS: usize = 100_000;
/// Argon2 verifications of one token id's secret: guesses of a known id cost a core each.
const VERIFICATIONS_PER_ID: Rate = Rate {
    burst: 5,
    per_second: 0.2,
};
/// Tokens one lab may mint: each costs an argon2 hash and a row.
const MINTS_PER_LAB: Rate = Rate {
    burst: 20,
    per_second: 0.2,
};

fn digest(token: &str) -> [u8; 32] {
    Blake2s256::digest(token.as_bytes()).into()
}

/// Tokens and sessions of one server.
pub struct Auth {
    /// The instructor token's BLAKE2 digest (it is configuration, not stored: a guess is checked
    /// without argon2, so guesses cost the server nothing); `None`: no tokens asked.
    instructor: Option<[u8; 32]>,
    registry: Registry,
    /// Tokens verified so far, by BLAKE2 digest.
    verified: Mutex<HashMap<[u8; 32], Who>>,
    sessions: Mutex<HashMap<String, Session>>,
    /// Argon2 hashes and verifications at once: each takes ~19 MiB and a core for ~20 ms.
    hashing: Semaphore,
    /// Verifications per token id.
    verifications: Limit,
    /// Tokens minted per lab.
    mints: Limit,
    /// How many times tokens were forgotten: a verification that saw it change is done again.
    forgotten: std::sync::atomic::AtomicU64,
}

impl Auth {
    pub fn new(instructor_token: Option<&str>, registry: Registry) -> Result<Self, ApiError> {
        Ok(Self {
            instructor: instructor_token.map(|t| digest(t.trim())),
            registry,
            verified: Mutex::default(),
            sessions: Mutex::default(),
            hashing: Semaphore::new(2),
            verifications: Limit::new(VERIFICATIONS_PER_ID),
            mints: Limit::new(MINTS_PER_LAB),
            forgotten: Default::default(),
        })
    }

    /// The labs and tokens this server knows.
    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    /// Whether this server asks for tokens.
    pub fn enabled(&self) -> bool {
        self.instructor.is_some()
    }

    /// Who a token belongs to (`Anonymous` if nobody's); too many tries of one token id's
    /// secret answer [`ApiError::TooMany`].
    pub async fn who(&self, token: &str) -> Result<Who, ApiError> {
        if !self.enabled() {
            return Ok(Who::Local);
        }
        let digest = digest(token);
        if self.instructor == Some(digest) {
            return Ok(Who::Instructor);
        }
        if let Some(who) = lock(&self.verified).get(&digest) {
            return Ok(who.clone());
        }
        let forgotten = self.forgotten.load(std::sync::atomic::Ordering::SeqCst);
        let mut who = self.verify(token, &digest).await?;
        // Tokens forgotten while this one was verified (replaced, their lab or class deleted):
        // verified again against the registry as it is now, never cached from before.
        if self.forgotten.load(std::sync::atomic::Ordering::SeqCst) != forgotten {
            who = self.verify(token, &digest).await?;
        }
        if who != Who::Anonymous {
            lock(&self.verified).insert(digest, who.clone());
        }
        Ok(who)
    }

    /// A key for the client sending these headers if it proved who it is (a token this server
    /// verified, or a live session); `None` otherwise. Costs no lookup and no hash.
    pub fn known_client(&self, headers: &http::HeaderMap) -> Option<Vec<u8>> {
        if let Some(token) = bearer(headers) {
            let digest = digest(token);
            let known =
                self.instructor == Some(digest) || lock(&self.verified).contains_key(&digest);
            return known.then(|| digest.to_vec());
        }
        let id = cookie(headers, SESSION_COOKIE)?;
        let sessions = lock(&self.sessions);
        let session = sessions.get(id)?;
        (session.started.elapsed() < SESSION_LIFETIME).then(|| digest(id).to_vec())
    }

    /// A lab token, by its id's stored hash. A token whose id is unknown costs no argon2; one
    /// whose id is known costs one, a few times per id and minute at most.
    async fn verify(&self, token: &str, digest: &[u8; 32]) -> Result<Who, ApiError> {
        let Some((id, secret)) = token.split_once('.') else {
            return Ok(Who::Anonymous);
        };
        let stored = match self.registry.token(id).await {
            Ok(Some(stored)) => stored,
            Ok(None) => return Ok(Who::Anonymous),
            Err(e) => {
                tracing::warn!("reading a token from the history: {e}");
                return Ok(Who::Anonymous);
            }
        };
        let Ok(_permit) = self.hashing.acquire().await else {
            return Ok(Who::Anonymous);
        };
        // Verified while this waited (the same token sent by many requests at once): done.
        if let Some(who) = lock(&self.verified).get(digest) {
            return Ok(who.clone());
        }
        if let Err(wait) = self.verifications.take(&[id.as_bytes()]) {
            return Err(ApiError::TooMany(format!(
                "too many tries of token {id}; try again in {} s",
                wait.as_secs().max(1)
            )));
        }
        let secret = secret.to_string();
        Ok(tokio::task::spawn_blocking(move || {
            let (lab, stored) = stored;
            match (verify_secret(&secret, &stored.hash), stored.role) {
                (true, Role::Learner) => Who::Learner(lab),
                (true, Role::Viewer) => Who::Viewer(lab),
                (true, Role::ClassViewer) => match lab.strip_prefix(CLASS_PREFIX) {
                    Some(class) => Who::ClassViewer(class.to_string()),
                    None => Who::Anonymous,
                },
                _ => Who::Anonymous,
            }
        })
        .await
        .unwrap_or(Who::Anonymous))
    }

    /// Makes a token of `role` for lab `lab`, hashed off the async workers; at most a few per
    /// lab and minute after a first handful.
    pub async fn mint(&self, lab: &str, role: Role) -> Result<MadeToken, ApiError> {
        if let Err(wait) = self.mints.take(&[lab.as_bytes()]) {
            return Err(ApiError::TooMany(format!(
                "too many tokens made for lab {lab}; try again in {} s",
                wait.as_secs().max(1)
            )));
        }
        let _permit = self
            .hashing
            .acquire()
            .await
            .map_err(|_| ApiError::Failed("the server is stopping".into()))?;
        tokio::task::spawn_blocking(move || make_token(role))
            .await
            .map_err(|e| ApiError::Failed(format!("making a token: {e}")))?
    }

    /// Who sent a request: its bearer token, else its session cookie.
    pub async fn caller(&self, headers: &http::HeaderMap) -> Result<Caller, ApiError> {
        if !self.enabled() {
            return Ok(Caller {
                who: Who::Local,
                csrf: None,
            });
        }
        if let Some(token) = bearer(headers) {
            return Ok(Caller {
                who: self.who(token).await?,
                csrf: None,
            });
        }
        if let Some(id) = cookie(headers, SESSION_COOKIE) {
            let mut sessions = lock(&self.sessions);
            sessions.retain(|_, s| s.started.elapsed() < SESSION_LIFETIME);
            if let Some(session) = sessions.get(id) {
                return Ok(Caller {
                    who: session.who.clone(),
                    csrf: Some(session.csrf.clone()),
                });
            }
        }
        Ok(Caller {
            who: Who::Anonymous,
            csrf: None,
        })
    }

    /// Starts a browser session for `who`, signed in with `token`; returns its id (the cookie's
    /// value). A token's sessions beyond [`SESSIONS_PER_TOKEN`] sign out its own oldest.
    pub fn start_session(&self, who: Who, token: &str) -> Result<String, ApiError> {
        let credential = digest(token);
        let id = random_hex(32)?;
        let session = Session {
            who,
            credential,
            csrf: random_hex(32)?,
            started: Instant::now(),
        };
        let mut sessions = lock(&self.sessions);
        sessions.retain(|_, s| s.started.elapsed() < SESSION_LIFETIME);
        let mut own: Vec<(&String, Instant)> = sessions
            .iter()
            .filter(|(_, s)| s.credential == credential)
            .map(|(id, s)| (id, s.started))
            .collect();
        if own.len() >= SESSIONS_PER_TOKEN {
            own.sort_by_key(|(_, started)| *started);
            let oldest: Vec<String> = own[..=own.len() - SESSIONS_PER_TOKEN]
                .iter()
                .map(|(id, _)| (*id).clone())
                .collect();
            for id in oldest {
                sessions.remove(&id);
            }
        }
        if sessions.len() >= MAX_SESSIONS {
            return Err(ApiError::TooMany(
                "too many browsers are signed in; try again when some sign out".into(),
            ));
        }
        sessions.insert(id.clone(), session);
        Ok(id)
    }

    pub fn end_session(&self, headers: &http::HeaderMap) {
        if let Some(id) = cookie(headers, SESSION_COOKIE) {
            lock(&self.sessions).remove(id);
        }
    }

    /// Forgets the learner tokens and sessions of lab `lab` (its token was replaced).
    pub fn forget_learners(&self, lab: &str) {
        self.forgotten
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let learner = |who: &Who| matches!(who, Who::Learner(l) if l == lab);
        lock(&self.verified).retain(|_, who| !learner(who));
        lock(&self.sessions).retain(|_, s| !learner(&s.who));
    }

    /// Forgets the viewer tokens and sessions of a deleted class.
    pub fn forget_class(&self, class: &str) {
        self.forgotten
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let viewer = |who: &Who| matches!(who, Who::ClassViewer(c) if c == class);
        lock(&self.verified).retain(|_, who| !viewer(who));
        lock(&self.sessions).retain(|_, s| !viewer(&s.who));
    }

    /// Forgets every token and session of a deleted lab.
    pub fn forget_lab(&self, lab: &str) {
        self.forgotten
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        lock(&self.verified).retain(|_, who| who.lab() != Some(lab));
        lock(&self.sessions).retain(|_, s| s.who.lab() != Some(lab));
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

/// The token of an `Authorization: Bearer <token>` header.
pub fn bearer(headers: &http::HeaderMap) -> Option<&str> {
    headers
        .get(http::header::AUTHORIZATION)?
        .to_str()
        .ok()?
        .strip_prefix("Bearer ")
        .map(str::trim)
}

/// The CSRF token an API write of a signed-in browser carries in its header.
pub fn csrf_header(headers: &http::HeaderMap) -> Option<&str> {
    headers.get(CSRF_HEADER)?.to_str().ok()
}

/// A cookie's value.
pub fn cookie<'a>(headers: &'a http::HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get_all(http::header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(key, _)| *key == name)
        .map(|(_, value)| value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_role_may_do_what_it_is_for_and_nothing_else() {
        let ann = |who: &Who, access| who.may("ann", access, false);
        let learner = Who::Learner("ann".into());
        let viewer = Who::Viewer("ann".into());
        assert!(ann(&Who::Instructor, Access::Manage).is_ok());
        assert!(ann(&learner, Access::Write).is_ok());
        assert!(ann(&viewer, Access::Read).is_ok());
        assert!(matches!(
            ann(&viewer, Access::Write),
            Err(ApiError::Forbidden(_))
        ));
        assert!(matches!(
            ann(&learner, Access::Manage),
            Err(ApiError::Forbidden(_))
        ));
        let other = Who::Learner("bob".into()).may("ann", Access::Read, false);
        assert!(matches!(other, Err(ApiError::Forbidden(m)) if m.contains("lab bob, not lab ann")));
        assert!(matches!(
            ann(&Who::Anonymous, Access::Public),
            Err(ApiError::Unauthorized(_))
        ));
        assert!(Who::Anonymous.may("ann", Access::Public, true).is_ok());
        assert!(Who::Anonymous.may("ann", Access::Read, true).is_err());
    }

    #[test]
    fn a_session_cookie_is_found_among_others() {
        let mut headers = http::HeaderMap::new();
        headers.insert(
            http::header::COOKIE,
            "a=1; reckon_session=abc; b=2".parse().unwrap(),
        );
        assert_eq!(cookie(&headers, SESSION_COOKIE), Some("abc"));
        assert_eq!(cookie(&headers, "c"), None);
    }
}
