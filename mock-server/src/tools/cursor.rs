//! Opaque, tamper-proof cursors (PAG-5, PAG-6): the position `(timestamp, id)` plus a binding of
//! tool + filters + client + user, sealed with HMAC-SHA256. Any change to the text, or any reuse
//! under another binding, fails the MAC or the binding check: MCP_CURSOR_INVALID.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, Mac};
use serde::{Deserialize, Serialize};
use sha2::Sha256;

use crate::state::store::Key;

type HmacSha256 = Hmac<Sha256>;

/// What a cursor is bound to.
pub struct Binding<'a> {
    pub tool: &'a str,
    /// SHA-256 of the canonical filters (arguments without limit and cursor).
    pub filters: [u8; 32],
    pub client_id: &'a str,
    pub user_id: &'a str,
}

#[derive(Serialize, Deserialize)]
struct Payload {
    v: u8,
    /// Binding digest, hex: the cursor says nothing readable about who or what.
    b: String,
    ts: String,
    id: String,
}

pub struct CursorCodec {
    key: Vec<u8>,
}

impl std::fmt::Debug for CursorCodec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CursorCodec")
    }
}

fn binding_digest(b: &Binding<'_>) -> String {
    use sha2::Digest;
    let mut h = Sha256::new();
    for part in [b.tool.as_bytes(), &b.filters, b.client_id.as_bytes(), b.user_id.as_bytes()] {
        h.update((part.len() as u64).to_be_bytes());
        h.update(part);
    }
    h.finalize()[..16].iter().map(|b| format!("{b:02x}")).collect()
}

impl CursorCodec {
    pub fn new(key: &[u8]) -> Self {
        CursorCodec { key: key.to_vec() }
    }

    fn mac(&self) -> HmacSha256 {
        HmacSha256::new_from_slice(&self.key).expect("HMAC takes keys of any length")
    }

    pub fn encode(&self, binding: &Binding<'_>, position: &Key) -> String {
        let payload =
            Payload { v: 1, b: binding_digest(binding), ts: position.0.clone(), id: position.1.clone() };
        let body = serde_json::to_vec(&payload).expect("a payload of strings serializes");
        let mut mac = self.mac();
        mac.update(&body);
        let tag = mac.finalize().into_bytes();
        format!("{}.{}", URL_SAFE_NO_PAD.encode(&body), URL_SAFE_NO_PAD.encode(tag))
    }

    /// The position, if the cursor is intact and bound to `binding`; `None` otherwise.
    pub fn decode(&self, binding: &Binding<'_>, cursor: &str) -> Option<Key> {
        let (body, tag) = cursor.split_once('.')?;
        let body = URL_SAFE_NO_PAD.decode(body).ok()?;
        let tag = URL_SAFE_NO_PAD.decode(tag).ok()?;
        let mut mac = self.mac();
        mac.update(&body);
        mac.verify_slice(&tag).ok()?;
        let payload: Payload = serde_json::from_slice(&body).ok()?;
        (payload.v == 1 && payload.b == binding_digest(binding)).then_some((payload.ts, payload.id))
    }
}

#[cfg(test)]
mod tests;
