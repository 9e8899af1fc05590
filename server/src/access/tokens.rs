//! Lab tokens: `<id>.<secret>` made from the system's randomness, the secret stored only as an
//! argon2 hash and verified against it.

use app::api::ApiError;
use argon2::Argon2;
use password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};

use app::model::Role;

use super::registry::StoredToken;

/// A freshly made token: the plain text (shown once) and what is stored.
pub struct MadeToken {
    pub plain: String,
    pub stored: StoredToken,
}

/// `n` random bytes from the operating system.
fn random_bytes(n: usize) -> Result<Vec<u8>, ApiError> {
    let mut buffer = vec![0u8; n];
    getrandom::fill(&mut buffer)
        .map_err(|e| ApiError::Failed(format!("no randomness from the system: {e}")))?;
    Ok(buffer)
}

/// `n` random bytes as hex.
pub(super) fn random_hex(n: usize) -> Result<String, ApiError> {
    random_bytes(n).map(hex::encode)
}

fn hash_secret(secret: &str) -> Result<String, ApiError> {
    let salt = SaltString::encode_b64(&random_bytes(16)?)
        .map_err(|e| ApiError::Failed(format!("making a salt: {e}")))?;
    Argon2::default()
        .hash_password(secret.as_bytes(), &salt)
        .map(|h| h.to_string())
        .map_err(|e| ApiError::Failed(format!("hashing a token: {e}")))
}

pub(super) fn verify_secret(secret: &str, hash: &str) -> bool {
    PasswordHash::new(hash).is_ok_and(|parsed| {
        Argon2::default()
            .verify_password(secret.as_bytes(), &parsed)
            .is_ok()
    })
}

/// Makes a token for `role` (`learner` or `viewer`): `<id>.<secret>`, 64 random bits of id and
/// 192 of secret. Hashing costs a core for ~20 ms: call it off the async workers.
pub(super) fn make_token(role: Role) -> Result<MadeToken, ApiError> {
    let (id, secret) = (random_hex(8)?, random_hex(24)?);
    let hash = hash_secret(&secret)?;
    Ok(MadeToken {
        plain: format!("{id}.{secret}"),
        stored: StoredToken { id, role, hash },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_verifies_against_its_hash_only() {
        let token = make_token(Role::Learner).unwrap();
        let (id, secret) = token.plain.split_once('.').unwrap();
        assert_eq!(id, token.stored.id);
        assert!(!token.stored.hash.contains(secret));
        assert!(verify_secret(secret, &token.stored.hash));
        assert!(!verify_secret("not-it", &token.stored.hash));
    }
}
