//! The typed parameters of the steps' cucumber expressions: what a step text names more than
//! once (a target, a quoted text, a status, a count) is written here once, as a regex, and a step
//! says `{target}` or `{quoted}`.

use std::convert::Infallible;
use std::fmt;
use std::ops::Deref;
use std::str::FromStr;

use cucumber::Parameter;

/// `{target}`: a landmark phrase ("the busy restaurant") or a quoted ID (`"rst_…"`), as written;
/// `ConformanceWorld::landmark` resolves both.
#[derive(Debug, Parameter)]
#[param(name = "target", regex = r#"the [a-z][a-z -]*?[a-z]|"[^"]+""#)]
pub struct Target(String);

/// `{quoted}`: any text between double quotes, possibly empty; the value is without the quotes.
#[derive(Debug, Parameter)]
#[param(name = "quoted", regex = r#""([^"]*)""#)]
pub struct Quoted(String);

/// `{count}`: a number of digits (no sign, unlike cucumber's `{int}`).
#[derive(Debug, Clone, Copy, Parameter)]
#[param(name = "count", regex = r"\d+")]
pub struct Count(pub usize);

/// `{child}`: the kind of record a restaurant holds that a step gets by ID.
#[derive(Debug, Parameter)]
#[param(name = "child", regex = "order|conversation|transcript")]
pub struct Child(String);

/// `{name}`: a non-empty text between double quotes (a persona's name), without them.
#[derive(Debug, Parameter)]
#[param(name = "name", regex = r#""([^"]+)""#)]
pub struct Name(String);

/// `{snake}`: a snake_case word between double quotes (a status, a persona), without them.
#[derive(Debug, Parameter)]
#[param(name = "snake", regex = r#""([a-z_]+)""#)]
pub struct Snake(String);

/// `{channel}`: an order's channel between double quotes (`"web"`), without them.
#[derive(Debug, Parameter)]
#[param(name = "channel", regex = r#""([a-z]+)""#)]
pub struct Channel(String);

/// `{source}`: what a step checks, the last result or every item of the walk.
#[derive(Debug, Parameter)]
#[param(name = "source", regex = "result|item of the walk")]
pub struct Source(String);

/// `{change}`: what happens to a membership.
#[derive(Debug, Parameter)]
#[param(name = "change", regex = "revoked|restored")]
pub struct Change(String);

macro_rules! text_parameter {
    ($($ty:ident),*) => {$(
        impl FromStr for $ty {
            type Err = Infallible;
            fn from_str(s: &str) -> Result<Self, Infallible> {
                Ok(Self(s.to_owned()))
            }
        }

        impl Deref for $ty {
            type Target = str;
            fn deref(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Display for $ty {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl PartialEq<&str> for $ty {
            fn eq(&self, other: &&str) -> bool {
                self.0 == *other
            }
        }

        impl serde::Serialize for $ty {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(&self.0)
            }
        }

        impl From<$ty> for String {
            fn from(value: $ty) -> String {
                value.0
            }
        }
    )*};
}

text_parameter!(Target, Quoted, Name, Snake, Channel, Child, Source, Change);

impl FromStr for Count {
    type Err = std::num::ParseIntError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        s.parse().map(Self)
    }
}
