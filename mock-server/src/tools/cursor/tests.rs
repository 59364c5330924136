//! Cursor properties: round trip, and any mutation is refused, never another page (PAG-5).

use proptest::prelude::*;

use super::*;

fn binding(tool: &str) -> Binding<'_> {
    Binding { tool, filters: [7; 32], client_id: "cli_console", user_id: "usr_owner" }
}

fn position() -> Key {
    ("2026-11-30T10:00:00Z".into(), "ord_c0042".into())
}

#[test]
fn round_trip_and_binding() {
    let codec = CursorCodec::new(b"secret");
    let cursor = codec.encode(&binding("list_orders"), &position());
    assert_eq!(codec.decode(&binding("list_orders"), &cursor), Some(position()));
    assert_eq!(codec.decode(&binding("list_instructions"), &cursor), None);
    let other_user = Binding { user_id: "usr_viewer", ..binding("list_orders") };
    assert_eq!(codec.decode(&other_user, &cursor), None);
    let other_filters = Binding { filters: [8; 32], ..binding("list_orders") };
    assert_eq!(codec.decode(&other_filters, &cursor), None);
    assert_eq!(CursorCodec::new(b"other").decode(&binding("list_orders"), &cursor), None);
    assert_eq!(codec.decode(&binding("list_orders"), ""), None);
}

proptest! {
    #[test]
    fn any_mutation_is_refused(index in 0usize..400, replacement in any::<char>(), cut in 0usize..400) {
        let codec = CursorCodec::new(b"secret");
        let cursor = codec.encode(&binding("list_orders"), &position());
        let mut chars: Vec<char> = cursor.chars().collect();
        let i = index % chars.len();
        prop_assume!(chars[i] != replacement);
        chars[i] = replacement;
        let flipped: String = chars.into_iter().collect();
        prop_assert_eq!(codec.decode(&binding("list_orders"), &flipped), None);
        let truncated = &cursor[..cut % cursor.len()];
        prop_assert_eq!(codec.decode(&binding("list_orders"), truncated), None);
    }

    #[test]
    fn arbitrary_text_is_refused(text in ".{0,300}") {
        let codec = CursorCodec::new(b"secret");
        prop_assert_eq!(codec.decode(&binding("list_orders"), &text), None);
    }
}
