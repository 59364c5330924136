//! The deterministic generator of the conformance dataset (§12), whose output is committed as
//! `fixtures/dataset.json`, and of synthetic orders for load benchmarks.
//!
//! Everything derives from fixed seeds through a tiny SplitMix64, so the output is byte-for-byte
//! reproducible without an RNG dependency. Each section has its own seed so that editing one
//! section does not reshuffle the others. Any change here changes the published fixture:
//! regenerate it with `UPDATE_FIXTURES=1 cargo test -p chataigne-contract dataset`.
//!
//! All names and texts are invented; none is real personal data.

use super::{
    Client, Conversation, Dataset, Instruction, Landmarks, Membership, Message, Order, OrderItem,
    Organization, Persona, Restaurant, Transcript, User,
};
use crate::Role;
use crate::time::{days_from_civil, format_timestamp};
use crate::tools::{CONVERSATION_CHANNELS, ORDER_CHANNELS, ORDER_STATUSES, SCOPES};

const HOME_ORG: &str = "org_maison";
const FOREIGN_ORG: &str = "org_rival";
const BUSY: &str = "rst_central";
const SMALL: &str = "rst_small";
/// The small restaurant's children other than orders: a sibling's records, in the busy
/// restaurant's organization (AUTH-5 within one tenant).
const SIBLING_CONVERSATION: &str = "cnv_s01";
const SIBLING_TRANSCRIPT: &str = "trs_s01";
const SIBLING_INSTRUCTION: &str = "ins_s1";
const LARGE: &str = "rst_large";
const FOREIGN: &str = "rst_rival";

/// How many orders each restaurant holds; §12 and the suite depend on these exact numbers.
pub(super) const BUSY_ORDERS: usize = 137;
pub(super) const SMALL_ORDERS: usize = 3;
pub(super) const LARGE_ORDERS: usize = 50;
pub(super) const FOREIGN_ORDERS: usize = 12;
pub(super) const LONG_CONVERSATION_MESSAGES: usize = 150;

/// SplitMix64: a few lines, good enough statistically for test data, and any seed (even 0) works.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// In `0..n`; the modulo bias is irrelevant for test data.
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    /// In `lo..=hi`.
    fn between(&mut self, lo: i64, hi: i64) -> i64 {
        lo + (self.next() % (hi - lo + 1) as u64) as i64
    }

    fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.below(items.len())]
    }

    /// True with probability `percent` / 100.
    fn chance(&mut self, percent: usize) -> bool {
        self.below(100) < percent
    }
}

/// Seconds since the epoch for a UTC civil time.
fn at(y: i64, mo: u32, d: u32, h: i64, mi: i64, s: i64) -> i64 {
    days_from_civil(y, mo, d) * 86_400 + h * 3600 + mi * 60 + s
}

const MENU: [(&str, u64); 20] = [
    ("Velouté de châtaigne", 850),
    ("Soupe à l'oignon gratinée", 900),
    ("Salade de chèvre chaud", 1250),
    ("Oeufs mayonnaise", 650),
    ("Terrine de campagne", 950),
    ("Boeuf bourguignon", 2150),
    ("Confit de canard", 2290),
    ("Blanquette de veau", 2050),
    ("Croque-monsieur", 1150),
    ("Quiche lorraine", 1190),
    ("Ratatouille", 1450),
    ("Steak frites", 2390),
    ("Gratin dauphinois", 750),
    ("Tarte Tatin", 850),
    ("Mousse au chocolat", 750),
    ("Crème brûlée", 800),
    ("Mont-Blanc aux marrons", 950),
    ("Café gourmand", 890),
    ("Carafe de cidre", 1400),
    ("Limonade artisanale", 450),
];

/// First names and initials only: the combinations stay fictional, and repeat across orders so
/// that the new/repeat customer metrics have something to count.
const FIRST_NAMES: [&str; 20] = [
    "Camille", "Léa", "Hugo", "Louis", "Chloé", "Inès", "Jules", "Manon", "Arthur", "Zoé", "Nathan", "Emma",
    "Gabriel", "Alice", "Raphaël", "Lina", "Tom", "Sarah", "Noah", "Jade",
];
const INITIALS: [char; 8] = ['B', 'D', 'F', 'L', 'M', 'R', 'S', 'V'];

const SHORT_NOTES: [&str; 12] = [
    "",
    "",
    "",
    "Sans oignons, merci.",
    "Allergie aux fruits à coque.",
    "Please ring twice, the bell is weak.",
    "Couverts en plus, s'il vous plaît.",
    "Sauce on the side.",
    "Livraison côté cour, code 4B.",
    "Birthday: a candle if possible.",
    "Viande bien cuite.",
    "Leave it at the front desk.",
];

fn customer(rng: &mut Rng) -> String {
    format!("{} {}.", rng.pick(&FIRST_NAMES), rng.pick(&INITIALS))
}

/// 1..=`max_lines` distinct dishes: stepping by 7 through 20 dishes never repeats one in 4 steps.
fn items(rng: &mut Rng, max_lines: i64, quantity: (i64, i64)) -> Vec<OrderItem> {
    let lines = rng.between(1, max_lines) as usize;
    let start = rng.below(MENU.len());
    (0..lines)
        .map(|k| {
            let (name, price) = MENU[(start + 7 * k) % MENU.len()];
            OrderItem {
                name: name.to_owned(),
                quantity: rng.between(quantity.0, quantity.1) as u32,
                unit_price_cents: price,
            }
        })
        .collect()
}

fn total(items: &[OrderItem]) -> u64 {
    items.iter().map(|i| u64::from(i.quantity) * i.unit_price_cents).sum()
}

/// How long after creation the order last changed: later lifecycle steps took longer. Never
/// negative, so `updated_at >= created_at` always holds.
fn update_delay(rng: &mut Rng, status: &str) -> i64 {
    let (lo, hi) = match status {
        "received" => (0, 0),
        "accepted" => (1, 6),
        "preparing" => (5, 15),
        "ready" => (15, 35),
        "completed" => (25, 90),
        "cancelled" => (1, 30),
        _ => (0, 5),
    };
    rng.between(lo * 60, hi * 60)
}

/// One ordinary order: 1..4 lines, a short note, a random channel.
fn order(rng: &mut Rng, id: String, restaurant_id: &str, status: &str, created: i64) -> Order {
    let channel = rng.pick(&ORDER_CHANNELS);
    let items = items(rng, 4, (1, 3));
    let customer_name = customer(rng);
    let notes = rng.pick(&SHORT_NOTES).to_owned();
    let updated = created + update_delay(rng, status);
    Order {
        id,
        restaurant_id: restaurant_id.to_owned(),
        status: status.to_owned(),
        channel: channel.to_owned(),
        customer_name,
        total_cents: total(&items),
        items,
        currency: "EUR".to_owned(),
        notes,
        created_at: format_timestamp(created),
        updated_at: format_timestamp(updated),
    }
}

/// The busy restaurant's orders that share the previous order's `created_at` exactly, making
/// groups of 2 and 3. The groups at 20/21 and 50/51 straddle the default and maximal page
/// boundaries, so a cursor that ignores the `id desc` tie-break skips or repeats an order.
const BUSY_TIES: [usize; 7] = [21, 34, 35, 51, 89, 90, 120];

/// `ord_c0001` is the newest and IDs grow into the past, so within a tie the `id desc` order is
/// the reverse of the file's order: a server must sort explicitly, not rely on insertion order.
fn busy_orders() -> Vec<Order> {
    let mut rng = Rng(0xC4A7_A16E_0000_0001);
    let mut created = at(2026, 11, 30, 20, 47, 13);
    (1..=BUSY_ORDERS)
        .map(|i| {
            if i > 1 && !BUSY_TIES.contains(&i) {
                // Mostly minutes to hours apart, sometimes an overnight gap.
                created -= if rng.chance(10) {
                    rng.between(8 * 3600, 15 * 3600)
                } else {
                    rng.between(3 * 60, 4 * 3600)
                };
            }
            // The newest orders are in progress. Older ones have mostly reached an end state,
            // but a backlog was never accepted: the orders re-runs move forward (`RERUNS`).
            let status = if i <= 24 {
                rng.pick(&["received", "received", "accepted", "preparing", "ready"])
            } else {
                match rng.below(100) {
                    0..72 => "received",
                    72..90 => "completed",
                    90..96 => "cancelled",
                    _ => "rejected",
                }
            };
            order(&mut rng, format!("ord_c{i:04}"), BUSY, status, created)
        })
        .collect()
}

fn small_orders() -> Vec<Order> {
    let mut rng = Rng(0xC4A7_A16E_0000_0002);
    let statuses = ["received", "completed", "cancelled"];
    let times = [at(2026, 11, 21, 12, 5, 40), at(2026, 11, 19, 19, 32, 7), at(2026, 11, 14, 13, 1, 55)];
    (0..SMALL_ORDERS)
        .map(|k| order(&mut rng, format!("ord_s{:04}", k + 1), SMALL, statuses[k], times[k]))
        .collect()
}

/// Catering instructions: each large order's notes run through these from a random start until
/// they reach `LARGE_NOTES_BYTES`.
const CATERING_NOTES: [&str; 24] = [
    "Delivery to the second floor of the venue; the service lift is at the back of the building and must be booked with the caretaker at least one hour ahead.",
    "Les plats chauds arrivent en caissons isothermes fermés ; merci de ne pas les ouvrir avant l'arrivée de notre chef de rang, qui s'occupe du dressage.",
    "Two guests are vegetarian and one is vegan: their plates are labelled with their table number and a green sticker on the lid, please keep them separate.",
    "Une personne est allergique aux fruits à coque : aucune noisette ni amande dans son assiette, et un dessert de remplacement est prévu dans une boîte rouge.",
    "The client asked for the cheese course to be served after the main course and before dessert, in the French way, with bread from the bakery next door.",
    "Prévoir des nappes blanches pour les douze tables rondes, des serviettes en tissu couleur châtaigne et deux tables rectangulaires pour le buffet des desserts.",
    "The speeches start at eight thirty; hot food must not leave the warming cabinets before the end of the speeches, even if the guests look hungry.",
    "Le vin est fourni par le client : notre équipe assure le service au verre mais ne fournit ni tire-bouchons ni seaux à glace, à vérifier la veille au téléphone.",
    "Children's menus are served first at a separate table near the garden door, with plastic cups, no glass, and the chocolate mousse in small jars.",
    "Merci d'appeler la coordinatrice de l'événement à l'arrivée plutôt que le client ; son numéro est dans le dossier papier remis au chauffeur avec le bon de livraison.",
    "Parking is tight: the van may stop in the courtyard for twenty minutes to unload, then must move to the public car park two streets away on the left.",
    "Le gâteau d'anniversaire est livré séparément par un pâtissier à dix-neuf heures ; il faut lui laisser de la place dans la chambre froide du traiteur.",
    "All dishes that contain dairy are marked with a blue dot on the tray; the client wants a printed card next to each dish listing the main ingredients.",
    "Le service se termine à vingt-trois heures trente ; la vaisselle sale repart dans les caisses grises numérotées, à compter avant le départ du camion.",
    "The venue has no gas: only electric plates are allowed, so the soup is reheated in the two induction pots we bring, with their own extension cords.",
    "Prévoir trois serveurs pour le cocktail debout puis deux pour le dîner assis ; le maître d'hôtel arrive une heure avant les autres pour la mise en place.",
    "The client paid a deposit; the balance is settled by bank transfer after the event, so the driver must not accept any payment on site, only signatures.",
    "Les restes peuvent être laissés au client dans des boîtes compostables étiquetées avec la date et l'heure de préparation, conformément aux règles d'hygiène.",
    "Music is loud after ten: bring the spare radios so that the kitchen and the floor team can talk without shouting across the room during the service.",
    "Le plan de table est affiché à l'entrée ; les plats spéciaux suivent les numéros de table, pas les prénoms, pour éviter les erreurs au moment du service.",
    "If the weather is fine the aperitif moves to the terrace; the canapés then go on the two high tables by the fountain, covered until the guests arrive.",
    "Le café et les mignardises sont servis au salon ; prévoir quarante tasses, deux thermos de déca et du lait d'avoine pour les invités qui le demandent.",
    "The photographer eats with the staff at nine; keep one main course and one dessert aside for them in the warming cabinet, labelled with their name.",
    "Le chauffeur rapporte le bon de livraison signé et les remarques du client sur la qualité du service, à transmettre au responsable le lendemain matin.",
];

/// About 3 KB per order: 50 of them make a page over 128 KiB (LIM-5) while one order stays far
/// under the limit.
const LARGE_NOTES_BYTES: usize = 3000;

fn catering_notes(rng: &mut Rng, guests: i64, event: i64) -> String {
    let mut notes = format!("Event for {guests} guests on {}. ", &format_timestamp(event)[..10]);
    let mut k = rng.below(CATERING_NOTES.len());
    while notes.len() < LARGE_NOTES_BYTES {
        notes.push_str(CATERING_NOTES[k % CATERING_NOTES.len()]);
        notes.push(' ');
        k += 1;
    }
    notes.truncate(notes.trim_end().len());
    notes
}

fn large_orders() -> Vec<Order> {
    let mut rng = Rng(0xC4A7_A16E_0000_0003);
    let mut created = at(2026, 11, 29, 17, 12, 44);
    (1..=LARGE_ORDERS)
        .map(|i| {
            if i > 1 {
                created -= rng.between(3 * 3600, 30 * 3600);
            }
            let status = if i <= 4 {
                rng.pick(&["received", "accepted"])
            } else if rng.chance(90) {
                "completed"
            } else {
                "cancelled"
            };
            let mut o = order(&mut rng, format!("ord_l{i:04}"), LARGE, status, created);
            // Catering: larger quantities, and the event a few days after the order.
            o.items = items(&mut rng, 4, (8, 40));
            o.total_cents = total(&o.items);
            let guests = rng.between(20, 120);
            let event = created + rng.between(3, 20) * 86_400;
            o.notes = catering_notes(&mut rng, guests, event);
            o
        })
        .collect()
}

fn rival_orders() -> Vec<Order> {
    let mut rng = Rng(0xC4A7_A16E_0000_0004);
    let mut created = at(2026, 11, 30, 19, 3, 26);
    (1..=FOREIGN_ORDERS)
        .map(|i| {
            if i > 1 {
                created -= rng.between(20 * 60, 9 * 3600);
            }
            let status = ORDER_STATUSES[(i - 1) % ORDER_STATUSES.len()];
            order(&mut rng, format!("ord_r{i:04}"), FOREIGN, status, created)
        })
        .collect()
}

/// `n` valid orders of one restaurant, newest first, for load benchmarks (e.g. a million orders
/// behind a keyset cursor). IDs are unique per (`seed`, index), so two calls with different seeds
/// can share a store. `created_at` goes back from 2026-11-30 by 0..=60 s per order (a year for a
/// million orders); the 0 s steps make ties for the `id desc` tie-break. Lazy, so a store can
/// take a million orders one at a time instead of holding them twice.
pub fn synthetic_orders(restaurant_id: &str, n: usize, seed: u64) -> impl Iterator<Item = Order> + '_ {
    let mut rng = Rng(seed);
    let mut created = at(2026, 11, 30, 23, 59, 59);
    (0..n).map(move |i| {
        created -= rng.between(0, 60);
        let status = rng.pick(&ORDER_STATUSES);
        order(&mut rng, format!("ord_x{seed:x}_{i:08}"), restaurant_id, status, created)
    })
}

fn organizations() -> Vec<Organization> {
    vec![
        Organization {
            id: HOME_ORG.to_owned(),
            name: "Maison Chataigne".to_owned(),
            created_at: format_timestamp(at(2025, 3, 3, 9, 15, 0)),
        },
        Organization {
            id: FOREIGN_ORG.to_owned(),
            name: "Rival Bistro Group".to_owned(),
            created_at: format_timestamp(at(2025, 6, 16, 14, 40, 0)),
        },
    ]
}

fn restaurants() -> Vec<Restaurant> {
    let r = |id: &str, org: &str, name: &str, status: &str, timezone: &str, created: i64| Restaurant {
        id: id.to_owned(),
        organization_id: org.to_owned(),
        name: name.to_owned(),
        status: status.to_owned(),
        timezone: timezone.to_owned(),
        created_at: format_timestamp(created),
    };
    vec![
        r(BUSY, HOME_ORG, "Chataigne Central", "open", "Europe/Paris", at(2025, 3, 3, 9, 30, 0)),
        r(SMALL, HOME_ORG, "Chataigne Petit Comptoir", "paused", "Europe/Paris", at(2025, 9, 8, 10, 0, 0)),
        r(LARGE, HOME_ORG, "Chataigne Traiteur", "open", "Europe/Paris", at(2025, 5, 12, 8, 45, 0)),
        r(
            FOREIGN,
            FOREIGN_ORG,
            "Rival Bistro Bruxelles",
            "open",
            "Europe/Brussels",
            at(2025, 6, 16, 15, 0, 0),
        ),
    ]
}

fn users() -> Vec<User> {
    [
        ("usr_owner", "Élise Marchal"),
        ("usr_manager", "Bastien Roux"),
        ("usr_staff", "Noémie Caron"),
        ("usr_viewer", "Théo Lambert"),
        ("usr_revoked", "Karim Desmet"),
        ("usr_outsider", "Ines Rivaud"),
    ]
    .into_iter()
    .map(|(id, name)| User { id: id.to_owned(), name: name.to_owned() })
    .collect()
}

fn memberships() -> Vec<Membership> {
    let m = |user: &str, org: &str, role: Role| Membership {
        user_id: user.to_owned(),
        organization_id: org.to_owned(),
        role,
        restaurant_ids: None,
        revoked: false,
    };
    vec![
        m("usr_owner", HOME_ORG, Role::Owner),
        m("usr_manager", HOME_ORG, Role::Manager),
        Membership { restaurant_ids: Some(vec![BUSY.to_owned()]), ..m("usr_staff", HOME_ORG, Role::Staff) },
        m("usr_viewer", HOME_ORG, Role::Viewer),
        Membership { revoked: true, ..m("usr_revoked", HOME_ORG, Role::Staff) },
        m("usr_outsider", FOREIGN_ORG, Role::Owner),
    ]
}

fn clients() -> Vec<Client> {
    vec![
        Client { id: "cli_console".to_owned(), name: "Chataigne Console".to_owned() },
        Client { id: "cli_second".to_owned(), name: "Second Client".to_owned() },
    ]
}

fn personas() -> Vec<Persona> {
    let all: Vec<String> = SCOPES.iter().map(|s| (*s).to_owned()).collect();
    let p = |persona: &str, user: &str, client: &str, description: &str| Persona {
        persona: persona.to_owned(),
        user_id: user.to_owned(),
        client_id: client.to_owned(),
        scopes: all.clone(),
        audience: None,
        description: description.to_owned(),
    };
    vec![
        p(
            "owner",
            "usr_owner",
            "cli_console",
            "Owner of the home organization: every tool on its restaurants.",
        ),
        p(
            "manager",
            "usr_manager",
            "cli_console",
            "Manager of the home organization: can pause restaurants and add instructions, not create restaurants.",
        ),
        p(
            "staff",
            "usr_staff",
            "cli_console",
            "Staff limited to rst_central: can move orders and send messages there, and nothing in the other restaurants.",
        ),
        p("viewer", "usr_viewer", "cli_console", "Viewer of the home organization: every read, no write."),
        p(
            "revoked",
            "usr_revoked",
            "cli_console",
            "Former staff whose membership is revoked: refused everywhere though the token is valid (AUTH-7).",
        ),
        p(
            "outsider",
            "usr_outsider",
            "cli_console",
            "Owner of the foreign tenant only: must never see or touch the home organization (AUTH-4, AUTH-5).",
        ),
        Persona {
            scopes: Vec::new(),
            ..p(
                "noscope",
                "usr_owner",
                "cli_console",
                "The owner with a token granting no scope: every tool answers MCP_SCOPE_REQUIRED (AUTH-3).",
            )
        },
        Persona {
            audience: Some("https://other.example.com/mcp".to_owned()),
            ..p(
                "other_audience",
                "usr_owner",
                "cli_console",
                "The owner with a token issued for another resource: HTTP 401 (AUTH-2).",
            )
        },
        p(
            "owner_second_client",
            "usr_owner",
            "cli_second",
            "The owner through a second OAuth client: cursors and idempotency keys are not shared across clients (PAG-6, IDEM-5).",
        ),
    ]
}

/// The long conversation's lines: a customer planning a private dinner with the staff. They
/// cycle, which is fine: the conversation exists to test message paging (PAG-8), not prose.
const LONG_INBOUND: [&str; 10] = [
    "Bonjour, je voudrais privatiser la salle pour un dîner le mois prochain.",
    "We would be around thirty people, maybe thirty-five.",
    "Is it possible to have a set menu with two choices of main course?",
    "Pouvez-vous m'envoyer les options de desserts ?",
    "Two of my guests do not eat meat, is that a problem?",
    "Quel est l'acompte demandé pour confirmer la date ?",
    "Could we arrive at seven for drinks and sit down at eight?",
    "Est-ce qu'il y a un vestiaire pour les manteaux ?",
    "Perfect, I will confirm the exact number of guests on Friday.",
    "Merci beaucoup, c'est très clair.",
];
const LONG_OUTBOUND: [&str; 10] = [
    "Bonjour ! Avec plaisir, quelle date avez-vous en tête ?",
    "The main room seats up to forty people, so thirty-five is fine.",
    "Yes: we suggest the boeuf bourguignon or the ratatouille as main courses.",
    "Tarte Tatin, crème brûlée ou Mont-Blanc aux marrons, au choix.",
    "Not at all, the kitchen will prepare vegetarian plates for them.",
    "Nous demandons un acompte de trente pour cent à la réservation.",
    "Of course, the bar opens at seven for your group.",
    "Oui, le vestiaire est surveillé pendant toute la soirée.",
    "Thank you, we keep the date for you until Friday evening.",
    "Avec plaisir, à bientôt chez Chataigne !",
];

const SHORT_INBOUND: [&str; 10] = [
    "Bonjour, ma commande est-elle partie ?",
    "Hi, do you deliver to the station area tonight?",
    "Can I still add a dessert to my order?",
    "Vous êtes ouverts le dimanche midi ?",
    "The delivery person cannot find the entrance.",
    "Est-il possible de réserver une table pour quatre ce soir ?",
    "I think a drink is missing from my bag.",
    "Merci pour la livraison, tout était parfait.",
    "Do you have a children's menu?",
    "Je voudrais changer l'heure de retrait à 19h30.",
];
const SHORT_OUTBOUND: [&str; 10] = [
    "Bonjour, oui, elle est en route et arrive dans dix minutes.",
    "Yes, we deliver there until ten thirty.",
    "Of course, we have added it to your order.",
    "Oui, de midi à quinze heures.",
    "We are calling the driver to guide them, sorry for the wait.",
    "C'est noté, une table pour quatre à vingt heures.",
    "Sorry about that, we will refund the drink on your next order.",
    "Merci à vous, à bientôt !",
    "Yes, a children's menu is available at nine euros.",
    "C'est modifié, votre commande sera prête à 19h30.",
];

const MORE_CONVERSATIONS: usize = 20;

/// Conversations and their messages, each conversation's messages oldest first. Message IDs grow
/// with `sent_at`, so `sent_at desc, id desc` is one order; a conversation's `created_at` is its
/// first message's `sent_at`.
fn conversations() -> (Vec<Conversation>, Vec<Message>) {
    let mut rng = Rng(0xC4A7_A16E_0000_0005);
    let mut conversations = Vec::new();
    let mut messages = Vec::new();
    let mut message = |id: String, cnv: &str, k: usize, text: &str, sent: i64| {
        messages.push(Message {
            id,
            conversation_id: cnv.to_owned(),
            // Customers write first, then the restaurant answers.
            direction: if k.is_multiple_of(2) { "inbound" } else { "outbound" }.to_owned(),
            text: text.to_owned(),
            sent_at: format_timestamp(sent),
        });
    };
    let conversation =
        |id: &str, rst: &str, status: &str, channel: &str, customer: String, created: i64| Conversation {
            id: id.to_owned(),
            restaurant_id: rst.to_owned(),
            status: status.to_owned(),
            channel: channel.to_owned(),
            customer_name: customer,
            created_at: format_timestamp(created),
        };

    let start = at(2026, 11, 28, 18, 0, 0);
    conversations.push(conversation("cnv_long", BUSY, "open", "whatsapp", "Margaux T.".to_owned(), start));
    for k in 0..LONG_CONVERSATION_MESSAGES {
        let text = if k.is_multiple_of(2) { LONG_INBOUND[(k / 2) % 10] } else { LONG_OUTBOUND[(k / 2) % 10] };
        message(format!("msg_long_{:03}", k + 1), "cnv_long", k, text, start + 60 * k as i64);
    }

    let mut begin = at(2026, 11, 30, 19, 10, 31);
    for c in 1..=MORE_CONVERSATIONS {
        begin -= rng.between(3 * 3600, 30 * 3600);
        let id = format!("cnv_c{c:02}");
        // The most recent ones are still open.
        let status = if c <= 6 || rng.chance(15) { "open" } else { "closed" };
        let channel = rng.pick(&CONVERSATION_CHANNELS);
        conversations.push(conversation(&id, BUSY, status, channel, customer(&mut rng), begin));
        let count = rng.between(1, 6) as usize;
        let topic = rng.below(SHORT_INBOUND.len());
        let mut sent = begin;
        for k in 0..count {
            let text = if k.is_multiple_of(2) {
                SHORT_INBOUND[(topic + k / 2) % 10]
            } else {
                SHORT_OUTBOUND[(topic + k / 2) % 10]
            };
            message(format!("msg_c{c:02}_{}", k + 1), &id, k, text, sent);
            sent += rng.between(40, 15 * 60);
        }
    }

    // The small restaurant's one conversation: a sibling's child, for AUTH-5 within a tenant.
    let start = at(2026, 11, 25, 17, 42, 11);
    conversations.push(conversation(
        SIBLING_CONVERSATION,
        SMALL,
        "closed",
        "sms",
        "Inès R.".to_owned(),
        start,
    ));
    let sibling =
        ["Bonsoir, vous êtes ouverts dimanche ?", "Bonsoir, non, le comptoir est fermé le dimanche."];
    for (k, text) in sibling.into_iter().enumerate() {
        message(format!("msg_s{}", k + 1), SIBLING_CONVERSATION, k, text, start + 240 * k as i64);
    }

    let start = at(2026, 11, 27, 11, 20, 5);
    conversations.push(conversation("cnv_rival", FOREIGN, "open", "sms", "Victor P.".to_owned(), start));
    let rival = [
        "Bonjour, avez-vous une table en terrasse ce midi ?",
        "Bonjour, oui, une table pour combien de personnes ?",
        "Pour deux, vers 12h45.",
        "C'est réservé au nom de Victor, à tout à l'heure.",
        "Merci !",
    ];
    for (k, text) in rival.into_iter().enumerate() {
        message(format!("msg_rival_{}", k + 1), "cnv_rival", k, text, start + 180 * k as i64);
    }
    (conversations, messages)
}

/// The phrase the search scenarios look for (`landmarks.transcript_phrase`). Only the English
/// small transcripts below, the sibling's and the foreign one contain it; no other text mentions
/// "gluten". So a search scoped to the organization or the tenant, not the restaurant, shows.
const PHRASE: &str = "gluten-free";

/// A small transcript of the busy restaurant, its call on 2026-11-`day` at `hour`:`minute` UTC.
struct SmallTranscript {
    id: &'static str,
    day: u32,
    hour: i64,
    minute: i64,
    duration_s: u64,
    language: &'static str,
    text: &'static str,
}

const SMALL_TRANSCRIPTS: [SmallTranscript; 10] = [
    SmallTranscript {
        id: "trs_c01",
        day: 29,
        hour: 18,
        minute: 4,
        duration_s: 95,
        language: "fr",
        text: "Agent : Chataigne Central, bonsoir.\nClient : Bonsoir, je voudrais commander deux boeufs bourguignons à emporter.\nAgent : Très bien, ce sera prêt dans vingt minutes.\nClient : Parfait, merci.",
    },
    SmallTranscript {
        id: "trs_c02",
        day: 28,
        hour: 12,
        minute: 31,
        duration_s: 140,
        language: "en",
        text: "Agent: Chataigne Central, good afternoon.\nCaller: Hello, do you have gluten-free options on the lunch menu?\nAgent: Yes, the ratatouille and the confit de canard are gluten-free, and we have a gluten-free bread.\nCaller: Great, I will come by at one.",
    },
    SmallTranscript {
        id: "trs_c03",
        day: 27,
        hour: 19,
        minute: 12,
        duration_s: 210,
        language: "en",
        text: "Agent: Chataigne Central, good evening.\nCaller: Hi, I'd like to book a table for six tomorrow at eight.\nAgent: Certainly. Any dietary requirements?\nCaller: One of us needs a gluten-free meal, is that possible?\nAgent: Of course, I will note it on the booking and tell the kitchen.\nCaller: Thank you so much.",
    },
    SmallTranscript {
        id: "trs_c04",
        day: 26,
        hour: 11,
        minute: 47,
        duration_s: 75,
        language: "fr",
        text: "Agent : Chataigne Central, bonjour.\nClient : Bonjour, vous êtes ouverts ce soir ?\nAgent : Oui, jusqu'à vingt-trois heures.\nClient : Merci, au revoir.",
    },
    SmallTranscript {
        id: "trs_c05",
        day: 25,
        hour: 20,
        minute: 2,
        duration_s: 160,
        language: "fr",
        text: "Agent : Chataigne Central, bonsoir.\nClient : Bonsoir, ma livraison a trente minutes de retard.\nAgent : Je suis désolé, je vérifie avec le livreur.\nAgent : Il arrive dans cinq minutes, nous vous offrons le dessert.\nClient : D'accord, merci.",
    },
    SmallTranscript {
        id: "trs_c06",
        day: 24,
        hour: 13,
        minute: 15,
        duration_s: 185,
        language: "en",
        text: "Agent: Chataigne Central, hello.\nCaller: Hi, is the chocolate mousse gluten-free?\nAgent: It is, and so is the crème brûlée. The Tarte Tatin is not.\nCaller: Then two mousses with my order, please.\nAgent: Added, thank you.",
    },
    SmallTranscript {
        id: "trs_c07",
        day: 22,
        hour: 17,
        minute: 40,
        duration_s: 120,
        language: "fr",
        text: "Agent : Chataigne Central, bonjour.\nClient : Bonjour, je voudrais savoir si vous faites des plateaux pour un bureau.\nAgent : Oui, notre service traiteur s'en occupe, je vous envoie la brochure.\nClient : Très bien, merci.",
    },
    SmallTranscript {
        id: "trs_c08",
        day: 20,
        hour: 12,
        minute: 8,
        duration_s: 65,
        language: "fr",
        text: "Agent : Chataigne Central, bonjour.\nClient : J'ai oublié mon écharpe hier soir, une écharpe verte.\nAgent : Nous l'avons, elle vous attend au vestiaire.\nClient : Merci beaucoup.",
    },
    SmallTranscript {
        id: "trs_c09",
        day: 18,
        hour: 18,
        minute: 55,
        duration_s: 230,
        language: "en",
        text: "Agent: Chataigne Central, good evening.\nCaller: Hello, I am organising a birthday dinner for ten people next Saturday.\nAgent: Lovely, we can seat you in the back room.\nCaller: Could the cake be gluten-free?\nAgent: Our pastry chef makes a gluten-free chestnut cake, I will reserve one.\nCaller: Wonderful, thank you.",
    },
    SmallTranscript {
        id: "trs_c10",
        day: 15,
        hour: 9,
        minute: 58,
        duration_s: 55,
        language: "fr",
        text: "Agent : Chataigne Central, bonjour.\nClient : Bonjour, vous acceptez les chèques-restaurant ?\nAgent : Oui, en salle comme à emporter.\nClient : Merci.",
    },
];

/// The small transcript named by `landmarks.small_transcript`; it contains `PHRASE`.
const SMALL_TRANSCRIPT: &str = "trs_c03";

/// The huge transcript's dialogue: a long call planning a wedding reception. It cycles with
/// advancing time codes, like a real long call, until the text is over 140 KiB (LIM-6).
const HUGE_LINES: [&str; 16] = [
    "Agent: So, shall we go through the menu course by course once more?",
    "Caller: Yes please, I want to be sure my parents agree with everything before we sign.",
    "Agent: For the starter we have the velouté de châtaigne or the terrine de campagne.",
    "Caller: My mother prefers the velouté, but my father will want the terrine, I think.",
    "Agent: That is no problem, guests can choose on the evening, we only need the totals a week before.",
    "Caller: And the main course, was it the confit de canard or the blanquette?",
    "Agent: Both are possible, and the ratatouille for the vegetarian guests.",
    "Caller: How many vegetarians did I tell you last time, was it eight or nine?",
    "Agent: I have nine on my notes, including two children.",
    "Caller: Right, nine. And the children eat at the same time as the adults?",
    "Agent: We usually serve them first so they can play in the garden afterwards.",
    "Caller: That sounds good. Let me write that down for my sister.",
    "Agent: Then for dessert, the wedding cake replaces the usual dessert, and we add coffee and mignardises.",
    "Caller: Can the coffee be served outside if the weather is nice?",
    "Agent: Yes, we can set up the coffee station on the terrace with heaters just in case.",
    "Caller: Perfect. Sorry, can you repeat the part about the deposit?",
];
const HUGE_MIN_BYTES: usize = 140 * 1024;

fn transcripts() -> Vec<Transcript> {
    let t = |id: &str, rst: &str, start: i64, duration_s: u64, language: &str, text: String| Transcript {
        id: id.to_owned(),
        restaurant_id: rst.to_owned(),
        call_started_at: format_timestamp(start),
        duration_s,
        language: language.to_owned(),
        text,
    };
    let mut out: Vec<Transcript> = SMALL_TRANSCRIPTS
        .iter()
        .map(|x| {
            let start = at(2026, 11, x.day, x.hour, x.minute, 17);
            t(x.id, BUSY, start, x.duration_s, x.language, x.text.to_owned())
        })
        .collect();

    let mut rng = Rng(0xC4A7_A16E_0000_0006);
    let mut text = String::new();
    let mut offset = 0i64;
    let mut k = 0;
    while text.len() <= HUGE_MIN_BYTES {
        let line = HUGE_LINES[k % HUGE_LINES.len()];
        text.push_str(&format!("[{:02}:{:02}:{:02}] {line}\n", offset / 3600, offset / 60 % 60, offset % 60));
        offset += rng.between(4, 14);
        k += 1;
    }
    out.push(t("trs_huge", BUSY, at(2026, 11, 20, 14, 0, 9), offset as u64, "en", text));

    out.push(t(
        SIBLING_TRANSCRIPT,
        SMALL,
        at(2026, 11, 24, 11, 3, 40),
        95,
        "en",
        "Agent: Chataigne Petit Comptoir, good morning.\nCaller: Is your lunch menu gluten-free?\nAgent: Two of the three dishes are, and we can adapt the third.\nCaller: Perfect, thank you."
            .to_owned(),
    ));
    out.push(t(
        "trs_rival",
        FOREIGN,
        at(2026, 11, 26, 12, 14, 50),
        150,
        "en",
        "Agent: Rival Bistro, hello.\nCaller: Hi, do you have a gluten-free pasta dish?\nAgent: Yes, our tagliatelle can be made gluten-free on request.\nCaller: Great, a table for two at one, please."
            .to_owned(),
    ));
    out
}

fn instructions() -> Vec<Instruction> {
    let i = |id: &str, rst: &str, text: &str, by: &str, created: i64| Instruction {
        id: id.to_owned(),
        restaurant_id: rst.to_owned(),
        text: text.to_owned(),
        created_by: by.to_owned(),
        created_at: format_timestamp(created),
    };
    vec![
        i(
            "ins_c1",
            BUSY,
            "Always offer the dessert of the day to customers whose delivery is more than 20 minutes late.",
            "usr_owner",
            at(2026, 9, 2, 8, 30, 0),
        ),
        i(
            "ins_c2",
            BUSY,
            "Ne jamais promettre une livraison avant 30 minutes le vendredi soir.",
            "usr_manager",
            at(2026, 9, 18, 16, 5, 0),
        ),
        i(
            "ins_c3",
            BUSY,
            "Group bookings of more than 12 people are handled by the manager only.",
            "usr_manager",
            at(2026, 10, 7, 10, 45, 0),
        ),
        i(
            "ins_c4",
            BUSY,
            "Mentionner l'allergène fruits à coque pour le Mont-Blanc aux marrons.",
            "usr_owner",
            at(2026, 10, 29, 9, 0, 0),
        ),
        i(
            "ins_c5",
            BUSY,
            "Answer messages within 10 minutes during opening hours.",
            "usr_manager",
            at(2026, 11, 12, 11, 20, 0),
        ),
        i(
            SIBLING_INSTRUCTION,
            SMALL,
            "Le comptoir ne prend pas de commandes de plus de 6 couverts.",
            "usr_owner",
            at(2026, 10, 14, 9, 30, 0),
        ),
        i(
            "ins_r1",
            FOREIGN,
            "Terrace closes at 22:00 on weekdays.",
            "usr_outsider",
            at(2026, 8, 21, 9, 10, 0),
        ),
        i(
            "ins_r2",
            FOREIGN,
            "Offer sparkling water refills for free.",
            "usr_outsider",
            at(2026, 10, 3, 15, 35, 0),
        ),
    ]
}

fn landmarks() -> Landmarks {
    Landmarks {
        home_organization: HOME_ORG.to_owned(),
        foreign_organization: FOREIGN_ORG.to_owned(),
        busy_restaurant: BUSY.to_owned(),
        small_restaurant: SMALL.to_owned(),
        large_orders_restaurant: LARGE.to_owned(),
        foreign_restaurant: FOREIGN.to_owned(),
        long_conversation: "cnv_long".to_owned(),
        huge_transcript: "trs_huge".to_owned(),
        small_transcript: SMALL_TRANSCRIPT.to_owned(),
        transcript_phrase: PHRASE.to_owned(),
        foreign_order: "ord_r0001".to_owned(),
        foreign_conversation: "cnv_rival".to_owned(),
        foreign_transcript: "trs_rival".to_owned(),
        sibling_conversation: SIBLING_CONVERSATION.to_owned(),
        sibling_transcript: SIBLING_TRANSCRIPT.to_owned(),
        sibling_instruction: SIBLING_INSTRUCTION.to_owned(),
    }
}

/// The published conformance dataset (§12), identical on every call.
pub fn generate() -> Dataset {
    let (conversations, messages) = conversations();
    Dataset {
        organizations: organizations(),
        restaurants: restaurants(),
        users: users(),
        memberships: memberships(),
        clients: clients(),
        personas: personas(),
        orders: [busy_orders(), small_orders(), large_orders(), rival_orders()].concat(),
        conversations,
        messages,
        transcripts: transcripts(),
        instructions: instructions(),
        landmarks: landmarks(),
    }
}
