//! Development-only parts, never needed to honour the contract: the control API, the development
//! OAuth authorization server, injected faults and deadlines, deliberate defect modes and allowed
//! variants. Healthy code asks `defects`, `variants` and `faults` as values held by `App` (one
//! seam each) and issued bearers through `auth::Issuer`; only `app` and `router` (composition)
//! name anything here (tests/it/layers.rs).

/// Declares an enum of named development modes (defects, variants): each variant with its flag
/// name, the clause it concerns and what it changes; `ALL`, `name`, `clause`, `description` and
/// `parse` come with it. Declared before the modules so both can use it.
macro_rules! named_modes {
    ($(#[$meta:meta])* $ty:ident { $($variant:ident = $name:literal, $clause:literal, $what:literal;)* }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum $ty { $($variant,)* }

        impl $ty {
            pub const ALL: &'static [$ty] = &[$($ty::$variant,)*];
            pub fn name(self) -> &'static str { match self { $($ty::$variant => $name,)* } }
            /// The clause it concerns: a defect's must fail; a variant's must still be certified
            /// at the seed level.
            pub fn clause(self) -> &'static str { match self { $($ty::$variant => $clause,)* } }
            pub fn description(self) -> &'static str { match self { $($ty::$variant => $what,)* } }
            pub fn parse(name: &str) -> Option<$ty> { match name { $($name => Some($ty::$variant),)* _ => None } }
        }
    };
}

pub mod control;
pub mod defects;
pub mod faults;
pub mod oauth;
pub mod variants;
