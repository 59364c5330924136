//! Orders held compactly. A store of 1,000,000 orders must fit in 600 MiB (docs/BENCHMARKS.md):
//! an order's ID and `created_at` live only in its map key, the strings that repeat across
//! orders (status, channel, currency, notes, customer and item names) are shared, and the
//! contract's [`Order`] is rebuilt, or serialized straight from the row, when a tool answers.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use chataigne_contract::dataset::{Order, OrderItem};
use chataigne_contract::time::{format_timestamp, parse_timestamp};
use serde::ser::{Serialize, SerializeStruct, Serializer};

use super::Key;

/// A string shared by every row that carries it.
pub type Sym = Arc<str>;

/// Hands out one shared copy of each distinct string.
#[derive(Debug, Default)]
pub struct Interner(HashSet<Sym>);

impl Interner {
    pub fn intern(&mut self, text: &str) -> Sym {
        if let Some(sym) = self.0.get(text) {
            return sym.clone();
        }
        let sym: Sym = Arc::from(text);
        self.0.insert(sym.clone());
        sym
    }
}

/// Order ID → `created_at`, which with the ID makes the order's key. A canonical timestamp
/// (`YYYY-MM-DDTHH:MM:SSZ`, all the server writes) is kept as seconds; any other text a custom
/// dataset brings is kept as is.
#[derive(Debug, Default)]
pub struct OrderIndex {
    seconds: HashMap<Box<str>, i64>,
    text: HashMap<Box<str>, Box<str>>,
}

impl OrderIndex {
    pub fn reserve(&mut self, additional: usize) {
        self.seconds.reserve(additional);
    }

    pub fn insert(&mut self, id: &str, created_at: &str) {
        match parse_timestamp(created_at).filter(|s| format_timestamp(*s) == created_at) {
            Some(secs) => {
                self.text.remove(id);
                self.seconds.insert(id.into(), secs);
            }
            None => {
                self.seconds.remove(id);
                self.text.insert(id.into(), created_at.into());
            }
        }
    }

    /// The order's key, if the ID was ever stored.
    pub fn key(&self, id: &str) -> Option<Key> {
        let created_at = match self.seconds.get(id) {
            Some(secs) => format_timestamp(*secs),
            None => self.text.get(id)?.to_string(),
        };
        Some((created_at, id.to_owned()))
    }
}

/// An order without what its key and its restaurant's map already say.
#[derive(Debug, Clone)]
pub struct OrderRow {
    pub status: Sym,
    pub channel: Sym,
    pub customer_name: Sym,
    pub items: Box<[ItemRow]>,
    pub total_cents: u64,
    pub currency: Sym,
    pub notes: Sym,
    pub updated_at: Box<str>,
}

#[derive(Debug, Clone)]
pub struct ItemRow {
    pub name: Sym,
    pub quantity: u32,
    pub unit_price_cents: u64,
}

impl OrderRow {
    /// Splits a contract order into its key and its row. Fresh exact-size copies, not
    /// `into_boxed_str`: shrinking the generator's buffers in place would fragment the heap.
    pub fn split(order: &Order, interner: &mut Interner) -> (Key, OrderRow) {
        let items = order
            .items
            .iter()
            .map(|i| ItemRow {
                name: interner.intern(&i.name),
                quantity: i.quantity,
                unit_price_cents: i.unit_price_cents,
            })
            .collect();
        let row = OrderRow {
            status: interner.intern(&order.status),
            channel: interner.intern(&order.channel),
            customer_name: interner.intern(&order.customer_name),
            items,
            total_cents: order.total_cents,
            currency: interner.intern(&order.currency),
            notes: interner.intern(&order.notes),
            updated_at: order.updated_at.as_str().into(),
        };
        ((order.created_at.as_str().into(), order.id.as_str().into()), row)
    }
}

/// One stored order as the tools see it: its row plus what its place in the store says.
#[derive(Debug, Clone, Copy)]
pub struct OrderRef<'a> {
    pub restaurant_id: &'a str,
    pub key: &'a Key,
    pub row: &'a OrderRow,
}

impl OrderRef<'_> {
    pub fn id(&self) -> &str {
        &self.key.1
    }

    pub fn created_at(&self) -> &str {
        &self.key.0
    }

    pub fn to_order(&self) -> Order {
        let r = self.row;
        Order {
            id: self.id().to_owned(),
            restaurant_id: self.restaurant_id.to_owned(),
            status: r.status.to_string(),
            channel: r.channel.to_string(),
            customer_name: r.customer_name.to_string(),
            items: r
                .items
                .iter()
                .map(|i| OrderItem {
                    name: i.name.to_string(),
                    quantity: i.quantity,
                    unit_price_cents: i.unit_price_cents,
                })
                .collect(),
            total_cents: r.total_cents,
            currency: r.currency.to_string(),
            notes: r.notes.to_string(),
            created_at: self.created_at().to_owned(),
            updated_at: r.updated_at.to_string(),
        }
    }
}

/// The same JSON as the contract's `Order`, without building one (a test holds them equal).
impl Serialize for OrderRef<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let r = self.row;
        let mut s = serializer.serialize_struct("Order", 11)?;
        s.serialize_field("id", self.id())?;
        s.serialize_field("restaurant_id", self.restaurant_id)?;
        s.serialize_field("status", &*r.status)?;
        s.serialize_field("channel", &*r.channel)?;
        s.serialize_field("customer_name", &*r.customer_name)?;
        s.serialize_field("items", &*r.items)?;
        s.serialize_field("total_cents", &r.total_cents)?;
        s.serialize_field("currency", &*r.currency)?;
        s.serialize_field("notes", &*r.notes)?;
        s.serialize_field("created_at", self.created_at())?;
        s.serialize_field("updated_at", &*r.updated_at)?;
        s.end()
    }
}

impl Serialize for ItemRow {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut s = serializer.serialize_struct("OrderItem", 3)?;
        s.serialize_field("name", &*self.name)?;
        s.serialize_field("quantity", &self.quantity)?;
        s.serialize_field("unit_price_cents", &self.unit_price_cents)?;
        s.end()
    }
}

#[cfg(test)]
mod tests {
    use chataigne_contract::dataset::{generate, synthetic_orders};

    use super::*;

    #[test]
    fn a_row_answers_exactly_the_contract_order() {
        let mut interner = Interner::default();
        let dataset = generate();
        for order in dataset.orders.iter().cloned().chain(synthetic_orders("rst_large", 50, 7)) {
            let (key, row) = OrderRow::split(&order, &mut interner);
            let view = OrderRef { restaurant_id: &order.restaurant_id, key: &key, row: &row };
            assert_eq!(serde_json::to_value(view).unwrap(), serde_json::to_value(&order).unwrap());
            assert_eq!(view.to_order(), order);
        }
    }

    #[test]
    fn the_index_gives_back_any_timestamp_text() {
        let mut index = OrderIndex::default();
        index.insert("a", "2026-11-30T23:59:59Z");
        index.insert("b", "2026-11-30T23:59:59.250Z");
        assert_eq!(index.key("a"), Some(("2026-11-30T23:59:59Z".into(), "a".into())));
        assert_eq!(index.key("b"), Some(("2026-11-30T23:59:59.250Z".into(), "b".into())));
        assert_eq!(index.key("c"), None);
    }

    #[test]
    fn repeated_strings_are_shared() {
        let mut interner = Interner::default();
        let (a, b) = (interner.intern("received"), interner.intern("received"));
        assert!(Arc::ptr_eq(&a, &b));
    }
}
