//! The in-memory store: the dataset indexed for keyset pagination. Every list is a `BTreeMap`
//! keyed by `(timestamp, id)` and read newest first, so a page starts strictly after the cursor's
//! key and insertions never shift it (PAG-4).

mod change;
mod commit;
mod orders;

use std::collections::{BTreeMap, HashMap};

use chataigne_contract::Role;
use chataigne_contract::dataset::{
    Conversation, Dataset, Instruction, Membership, Message, Order, Organization, Restaurant, Transcript,
    synthetic_orders,
};

pub use change::Change;
pub use commit::{Failed, Planned, Position, Store};
pub use orders::{Interner, ItemRow, OrderIndex, OrderRef, OrderRow, Sym};

/// The restaurant that receives `--synthetic-orders`: the large one, so `rst_central` (which the
/// suite and the load driver read) keeps its published 137 orders whatever the count.
pub const SYNTHETIC_RESTAURANT: &str = "rst_large";
/// Seed of the synthetic orders: the same N gives the same orders, across resets and replicas.
const SYNTHETIC_SEED: u64 = 1;

/// `(timestamp, id)`: the sort key of every list, newest last in the map.
pub type Key = (String, String);

#[derive(Debug, Default)]
pub struct Data {
    pub organizations: BTreeMap<Key, Organization>,
    pub restaurants: BTreeMap<Key, Restaurant>,
    pub memberships: Vec<Membership>,
    /// Restaurant ID → its orders, compact (see `orders.rs`).
    pub orders: HashMap<String, BTreeMap<Key, OrderRow>>,
    pub conversations: HashMap<String, BTreeMap<Key, Conversation>>,
    pub messages: HashMap<String, BTreeMap<Key, Message>>,
    pub transcripts: HashMap<String, BTreeMap<Key, Transcript>>,
    pub instructions: HashMap<String, BTreeMap<Key, Instruction>>,
    /// id → key, for the lookups by ID (orders excepted).
    pub index: HashMap<String, Key>,
    /// Order ID → key; apart from `index` and smaller, because there may be a million orders.
    pub order_index: OrderIndex,
    pub interner: Interner,
    /// Where this data stands in the shared log (Redis); unused in memory.
    pub position: Position,
    /// The control API's settings shared on Redis (faults, deadlines), field by field; the app
    /// applies them (`App::sync_control`). Unused in memory.
    pub control: Vec<(String, String)>,
}

fn key(ts: &str, id: &str) -> Key {
    (ts.to_owned(), id.to_owned())
}

impl Data {
    pub fn load(dataset: &Dataset) -> Data {
        let mut data = Data { memberships: dataset.memberships.clone(), ..Data::default() };
        for o in &dataset.organizations {
            data.insert_organization(o.clone());
        }
        for r in &dataset.restaurants {
            data.insert_restaurant(r.clone());
        }
        data.load_orders(dataset.orders.iter().cloned(), dataset.orders.len());
        for c in &dataset.conversations {
            data.insert_conversation(c.clone());
        }
        for m in &dataset.messages {
            data.insert_message(m.clone());
        }
        for t in &dataset.transcripts {
            data.insert_transcript(t.clone());
        }
        for i in &dataset.instructions {
            data.insert_instruction(i.clone());
        }
        data
    }

    /// The dataset plus `synthetic` generated orders in [`SYNTHETIC_RESTAURANT`] (benchmarks).
    pub fn load_with(dataset: &Dataset, synthetic: usize) -> Data {
        let mut data = Data::load(dataset);
        data.load_orders(synthetic_orders(SYNTHETIC_RESTAURANT, synthetic, SYNTHETIC_SEED), synthetic);
        data
    }

    /// Bulk load: rows are built into full B-tree nodes, a chunk at a time. One by one, mostly
    /// in descending order, nodes would stay about half full; one `collect` of everything would
    /// hold a second copy of every row (the sorted `Vec`) next to the finished tree, and an
    /// allocator that keeps its peak (mimalloc) would keep that too. `append` merges into full
    /// nodes again, freeing the old tree's nodes as it goes, so the peak is the tree plus a chunk.
    fn load_orders(&mut self, orders: impl Iterator<Item = Order>, count: usize) {
        const CHUNK: usize = 1 << 16;
        let mut pending: HashMap<String, Vec<(Key, OrderRow)>> = HashMap::new();
        self.order_index.reserve(count);
        for o in orders {
            let (key, row) = OrderRow::split(&o, &mut self.interner);
            self.order_index.insert(&o.id, &o.created_at);
            let rows = match pending.get_mut(o.restaurant_id.as_str()) {
                Some(rows) => rows,
                None => pending
                    .entry(o.restaurant_id.clone())
                    .or_insert_with(|| Vec::with_capacity(count.min(CHUNK))),
            };
            rows.push((key, row));
            if rows.len() == CHUNK {
                let rows = std::mem::replace(rows, Vec::with_capacity(CHUNK));
                merge_rows(self.orders.entry(o.restaurant_id).or_default(), rows);
            }
        }
        for (rid, rows) in pending {
            merge_rows(self.orders.entry(rid).or_default(), rows);
        }
    }

    pub fn insert_organization(&mut self, o: Organization) {
        let k = key(&o.created_at, &o.id);
        self.index.insert(o.id.clone(), k.clone());
        self.organizations.insert(k, o);
    }

    pub fn insert_restaurant(&mut self, r: Restaurant) {
        let k = key(&r.created_at, &r.id);
        self.index.insert(r.id.clone(), k.clone());
        self.restaurants.insert(k, r);
    }

    pub fn insert_order(&mut self, o: Order) {
        let (k, row) = OrderRow::split(&o, &mut self.interner);
        self.order_index.insert(&o.id, &o.created_at);
        self.orders.entry(o.restaurant_id).or_default().insert(k, row);
    }

    pub fn insert_conversation(&mut self, c: Conversation) {
        let k = key(&c.created_at, &c.id);
        self.index.insert(c.id.clone(), k.clone());
        self.conversations.entry(c.restaurant_id.clone()).or_default().insert(k, c);
    }

    pub fn insert_message(&mut self, m: Message) {
        let k = key(&m.sent_at, &m.id);
        self.messages.entry(m.conversation_id.clone()).or_default().insert(k, m);
    }

    pub fn insert_transcript(&mut self, t: Transcript) {
        let k = key(&t.call_started_at, &t.id);
        self.index.insert(t.id.clone(), k.clone());
        self.transcripts.entry(t.restaurant_id.clone()).or_default().insert(k, t);
    }

    pub fn insert_instruction(&mut self, i: Instruction) {
        let k = key(&i.created_at, &i.id);
        self.index.insert(i.id.clone(), k.clone());
        self.instructions.entry(i.restaurant_id.clone()).or_default().insert(k, i);
    }

    pub fn organization(&self, id: &str) -> Option<&Organization> {
        self.organizations.get(self.index.get(id)?)
    }

    pub fn restaurant(&self, id: &str) -> Option<&Restaurant> {
        self.restaurants.get(self.index.get(id)?).filter(|r| r.id == id)
    }

    pub fn restaurant_mut(&mut self, id: &str) -> Option<&mut Restaurant> {
        let k = self.index.get(id)?.clone();
        self.restaurants.get_mut(&k).filter(|r| r.id == id)
    }

    /// A child looked up through its restaurant: another restaurant's child is simply absent
    /// (AUTH-5).
    pub fn order<'a>(&'a self, restaurant_id: &'a str, id: &str) -> Option<OrderRef<'a>> {
        let (key, row) = self.orders.get(restaurant_id)?.get_key_value(&self.order_index.key(id)?)?;
        Some(OrderRef { restaurant_id, key, row })
    }

    pub fn order_mut(&mut self, restaurant_id: &str, id: &str) -> Option<(&Key, &mut OrderRow)> {
        let k = self.order_index.key(id)?;
        self.orders.get_mut(restaurant_id)?.range_mut(k.clone()..=k).next()
    }

    /// Every order of a restaurant, oldest first.
    pub fn orders_of<'a>(&'a self, restaurant_id: &'a str) -> impl Iterator<Item = OrderRef<'a>> + 'a {
        self.orders
            .get(restaurant_id)
            .into_iter()
            .flat_map(move |m| m.iter().map(move |(key, row)| OrderRef { restaurant_id, key, row }))
    }

    pub fn conversation(&self, restaurant_id: &str, id: &str) -> Option<&Conversation> {
        self.conversations.get(restaurant_id)?.get(self.index.get(id)?)
    }

    pub fn transcript(&self, restaurant_id: &str, id: &str) -> Option<&Transcript> {
        self.transcripts.get(restaurant_id)?.get(self.index.get(id)?)
    }

    /// The user's current role for a restaurant: an active membership of its organization that
    /// covers it. Read at call time, so a revocation applies at once (AUTH-7).
    pub fn role_for_restaurant(&self, user_id: &str, restaurant_id: &str) -> Option<Role> {
        let restaurant = self.restaurant(restaurant_id)?;
        self.active_memberships(user_id)
            .filter(|m| m.organization_id == restaurant.organization_id)
            .filter(|m| m.restaurant_ids.as_ref().is_none_or(|ids| ids.iter().any(|r| r == restaurant_id)))
            .map(|m| m.role)
            .max()
    }

    /// The user's role in an organization, for organization-level tools. A membership limited
    /// to some restaurants does not make the user a member of the whole organization's admin.
    pub fn role_for_organization(&self, user_id: &str, organization_id: &str) -> Option<Role> {
        self.organization(organization_id)?;
        self.active_memberships(user_id)
            .filter(|m| m.organization_id == organization_id)
            .map(|m| m.role)
            .max()
    }

    pub fn active_memberships<'a>(&'a self, user_id: &'a str) -> impl Iterator<Item = &'a Membership> + 'a {
        self.memberships.iter().filter(move |m| m.user_id == user_id && !m.revoked)
    }

    pub fn message_count(&self, conversation_id: &str) -> usize {
        self.messages.get(conversation_id).map_or(0, BTreeMap::len)
    }

    pub fn last_message_at(&self, c: &Conversation) -> String {
        self.messages
            .get(&c.id)
            .and_then(|m| m.keys().next_back())
            .map_or_else(|| c.created_at.clone(), |k| k.0.clone())
    }
}

/// Adds sorted-into-full-nodes rows to a map; a later row replaces an earlier one, as `insert`.
fn merge_rows(map: &mut BTreeMap<Key, OrderRow>, rows: Vec<(Key, OrderRow)>) {
    let mut chunk: BTreeMap<Key, OrderRow> = rows.into_iter().collect();
    map.append(&mut chunk);
}

#[cfg(test)]
mod tests {
    use chataigne_contract::dataset::generate;

    use super::*;

    /// The chunked bulk load (several chunks, on top of the published orders) holds exactly
    /// what inserting the same orders one by one holds, and finds every one by ID.
    #[test]
    fn bulk_load_equals_one_by_one_inserts() {
        let n = (1 << 16) * 2 + 123;
        let dataset = generate();
        let bulk = Data::load_with(&dataset, n);
        let mut single = Data::load(&dataset);
        for o in synthetic_orders(SYNTHETIC_RESTAURANT, n, SYNTHETIC_SEED) {
            single.insert_order(o);
        }
        let all = |d: &Data| d.orders_of(SYNTHETIC_RESTAURANT).map(|o| o.to_order()).collect::<Vec<_>>();
        let orders = all(&bulk);
        assert!(orders.len() > n);
        assert_eq!(orders, all(&single));
        for o in [&orders[0], &orders[orders.len() / 2], &orders[orders.len() - 1]] {
            assert_eq!(bulk.order(SYNTHETIC_RESTAURANT, &o.id).map(|r| r.to_order()).as_ref(), Some(o));
        }
    }
}
