//! The dataset's IDs, as the server knows them, by the argument that takes them: a generated
//! `order_id` is an order of the generated `restaurant_id` when it has one, so calls reach real
//! records instead of stopping at "not found".

use std::collections::{BTreeMap, BTreeSet};

use chataigne_contract::dataset::Dataset;

use crate::profile::IdMap;

/// What kind of record an argument names, read from its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum IdKind {
    Organization,
    Restaurant,
    Order,
    Conversation,
    Transcript,
}

impl IdKind {
    pub fn of_field(name: &str) -> Option<IdKind> {
        Some(match name {
            "organization_id" => IdKind::Organization,
            "restaurant_id" => IdKind::Restaurant,
            "order_id" => IdKind::Order,
            "conversation_id" => IdKind::Conversation,
            "transcript_id" => IdKind::Transcript,
            _ => return None,
        })
    }
}

/// Server IDs by kind; child records also by restaurant.
#[derive(Debug, Clone, Default)]
pub struct Pools {
    all: BTreeMap<IdKind, Vec<String>>,
    by_restaurant: BTreeMap<(IdKind, String), Vec<String>>,
    /// Orders of the busy restaurant the dataset starts in `received`, as (restaurant, order)
    /// (the PRE-2 sequence moves them).
    pub received: Vec<(String, String)>,
    /// Orders of the busy restaurant in a final status, as (restaurant, order, status): completed,
    /// cancelled, rejected (PRE-3).
    pub terminal: Vec<(String, String, String)>,
    /// Each order, conversation and transcript's restaurant (AUTH-5).
    pub restaurant_of: BTreeMap<String, String>,
    /// Restaurants and organizations outside the fuzzing persona's memberships (AUTH-4).
    pub foreign: BTreeSet<String>,
}

impl Pools {
    /// `home` first: index 0, where proptest shrinks to, is the busy home restaurant, whose
    /// records answer; the foreign tenant comes last.
    pub fn new(dataset: &Dataset, ids: &IdMap, persona: &str) -> Pools {
        let mut pools = Pools::default();
        // The persona's organizations: every other one, and its restaurants, are foreign.
        let user = dataset.persona(persona).map(|p| p.user_id.as_str()).unwrap_or_default();
        let mine: BTreeSet<&str> = dataset
            .memberships
            .iter()
            .filter(|m| m.user_id == user && !m.revoked && m.restaurant_ids.is_none())
            .map(|m| m.organization_id.as_str())
            .collect();
        for o in &dataset.organizations {
            if !mine.contains(o.id.as_str()) {
                pools.foreign.insert(ids.to_server(&o.id));
            }
        }
        for r in &dataset.restaurants {
            if !mine.contains(r.organization_id.as_str()) {
                pools.foreign.insert(ids.to_server(&r.id));
            }
        }
        let home = &dataset.landmarks.home_organization;
        let busy = &dataset.landmarks.busy_restaurant;
        let mut restaurants: Vec<_> = dataset.restaurants.iter().collect();
        restaurants.sort_by_key(|r| (&r.id != busy, &r.organization_id != home, r.id.clone()));
        let mut organizations: Vec<_> = dataset.organizations.iter().map(|o| &o.id).collect();
        organizations.sort_by_key(|o| (*o != home, (*o).clone()));
        let put = |pools: &mut Pools, kind: IdKind, restaurant: Option<&str>, id: &str| {
            let id = ids.to_server(id);
            pools.all.entry(kind).or_default().push(id.clone());
            if let Some(r) = restaurant {
                pools.restaurant_of.insert(id.clone(), ids.to_server(r));
                pools.by_restaurant.entry((kind, ids.to_server(r))).or_default().push(id);
            }
        };
        for o in organizations {
            put(&mut pools, IdKind::Organization, None, o);
        }
        for r in restaurants {
            put(&mut pools, IdKind::Restaurant, None, &r.id);
        }
        for o in &dataset.orders {
            put(&mut pools, IdKind::Order, Some(&o.restaurant_id), &o.id);
            let pair = || (ids.to_server(&o.restaurant_id), ids.to_server(&o.id));
            if &o.restaurant_id == busy {
                match o.status.as_str() {
                    "received" => pools.received.push(pair()),
                    "completed" | "cancelled" | "rejected" => {
                        let (r, id) = pair();
                        pools.terminal.push((r, id, o.status.clone()));
                    }
                    _ => {}
                }
            }
        }
        for c in &dataset.conversations {
            put(&mut pools, IdKind::Conversation, Some(&c.restaurant_id), &c.id);
        }
        for t in &dataset.transcripts {
            put(&mut pools, IdKind::Transcript, Some(&t.restaurant_id), &t.id);
        }
        pools
    }

    /// The first ID of `kind`: the busy home restaurant for restaurants.
    pub fn first(&self, kind: IdKind) -> Option<String> {
        self.all.get(&kind)?.first().cloned()
    }

    /// The `pick`th ID of `kind`, among the records of `restaurant` if it has any.
    pub fn pick(
        &self,
        kind: IdKind,
        restaurant: Option<&str>,
        pick: &proptest::sample::Index,
    ) -> Option<String> {
        let local = restaurant.and_then(|r| self.by_restaurant.get(&(kind, r.to_owned())));
        let list = local.filter(|l| !l.is_empty()).or_else(|| self.all.get(&kind))?;
        (!list.is_empty()).then(|| list[pick.index(list.len())].clone())
    }
}
