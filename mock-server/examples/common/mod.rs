//! The fixed answer both baselines of `bench/load.sh` return: about the size and shape of the
//! reference server's `get_order` answer, so the baselines serialize what the server does.

use serde_json::{Value, json};

pub const SUMMARY: &str = "Order ord_c0001: received, 2900 cents";

/// `structuredContent`: the envelope around one order.
pub fn envelope() -> Value {
    json!({
        "data": { "order": {
            "id": "ord_c0001", "restaurant_id": "rst_central", "status": "received", "channel": "phone",
            "customer_name": "Camille Lefebvre",
            "items": [
                { "name": "Velouté de châtaigne", "quantity": 2, "unit_price_cents": 850 },
                { "name": "Tarte fine aux pommes", "quantity": 1, "unit_price_cents": 1200 }
            ],
            "total_cents": 2900, "currency": "EUR", "notes": "Sans noix, merci",
            "created_at": "2026-11-30T20:47:13Z", "updated_at": "2026-11-30T20:47:13Z"
        }},
        "meta": { "request_id": "req_0123456789abcdef0123", "next_cursor": null, "truncated": false, "replayed": false }
    })
}
