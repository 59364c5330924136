//! The published dataset as the proxy reads it: personas, memberships, who owns what.

use super::*;

#[derive(Clone)]
pub(crate) struct Persona {
    pub(crate) name: String,
    pub(crate) user: String,
    pub(crate) client: String,
    pub(crate) scopes: Vec<String>,
    pub(crate) audience: Option<String>,
}

#[derive(Clone)]
pub(crate) struct Membership {
    pub(crate) user: String,
    pub(crate) org: String,
    pub(crate) role: String,
    pub(crate) restaurants: Option<Vec<String>>,
    pub(crate) revoked: bool,
}

#[derive(Default)]
pub(crate) struct Dataset {
    pub(crate) personas: Vec<Persona>,
    pub(crate) memberships: Vec<Membership>,
    /// restaurant → organization
    pub(crate) restaurant_org: HashMap<String, String>,
    /// order, conversation, transcript or instruction → restaurant
    pub(crate) child_restaurant: HashMap<String, String>,
    pub(crate) transcripts: HashMap<String, Value>,
    pub(crate) orgs: HashSet<String>,
}

impl Dataset {
    pub(crate) fn load(path: &str) -> Dataset {
        let Ok(text) = std::fs::read_to_string(path) else {
            eprintln!("fault_proxy: no dataset at {path}: faults that need it do nothing");
            return Dataset::default();
        };
        let d: Value = serde_json::from_str(&text).unwrap_or_default();
        let s = |v: &Value, k: &str| v[k].as_str().unwrap_or_default().to_owned();
        let arr = |k: &str| d[k].as_array().cloned().unwrap_or_default();
        let mut out = Dataset::default();
        for p in arr("personas") {
            out.personas.push(Persona {
                name: s(&p, "persona"),
                user: s(&p, "user_id"),
                client: s(&p, "client_id"),
                scopes: p["scopes"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_str)
                    .map(String::from)
                    .collect(),
                audience: p["audience"].as_str().map(String::from),
            });
        }
        for m in arr("memberships") {
            out.memberships.push(Membership {
                user: s(&m, "user_id"),
                org: s(&m, "organization_id"),
                role: s(&m, "role"),
                restaurants: m["restaurant_ids"]
                    .as_array()
                    .map(|a| a.iter().filter_map(Value::as_str).map(String::from).collect()),
                revoked: m["revoked"].as_bool().unwrap_or(false),
            });
        }
        for o in arr("organizations") {
            out.orgs.insert(s(&o, "id"));
        }
        for r in arr("restaurants") {
            out.restaurant_org.insert(s(&r, "id"), s(&r, "organization_id"));
        }
        for kind in ["orders", "conversations", "transcripts", "instructions"] {
            for c in arr(kind) {
                out.child_restaurant.insert(s(&c, "id"), s(&c, "restaurant_id"));
                if kind == "transcripts" {
                    out.transcripts.insert(s(&c, "id"), c);
                }
            }
        }
        out
    }

    pub(crate) fn persona(&self, token: &str) -> Option<&Persona> {
        let name = token.strip_prefix(mock_server::DEV_TOKEN_PREFIX)?;
        self.personas.iter().find(|p| p.name == name)
    }

    /// Another persona of the same user and client, for this audience, holding `scope` (or the
    /// most scopes): the token a server that skips one check would effectively act on.
    pub(crate) fn sibling(&self, of: &Persona, scope: Option<&str>) -> Option<&Persona> {
        self.personas
            .iter()
            .filter(|p| p.user == of.user && p.client == of.client && p.audience.is_none())
            .filter(|p| scope.is_none_or(|s| p.scopes.iter().any(|x| x == s)))
            .max_by_key(|p| p.scopes.len())
    }

    pub(crate) fn membership(&self, user: &str, org: &str) -> Option<&Membership> {
        self.memberships.iter().find(|m| m.user == user && m.org == org)
    }

    /// A persona that owns `org` (full scopes, first client): for faults that act as someone
    /// who has access.
    pub(crate) fn owner_of_org(&self, org: &str) -> Option<&Persona> {
        let m = self.memberships.iter().find(|m| m.org == org && m.role == "owner" && !m.revoked)?;
        self.personas
            .iter()
            .filter(|p| p.user == m.user && p.audience.is_none())
            .max_by_key(|p| (p.scopes.len(), std::cmp::Reverse(p.client.clone())))
    }
}

pub(crate) fn token_header(persona: &Persona) -> String {
    format!("Bearer {}{}", mock_server::DEV_TOKEN_PREFIX, persona.name)
}
