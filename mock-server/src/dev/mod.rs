//! Development-only parts, never needed to honour the contract: the control API, the development
//! OAuth authorization server, injected faults and deadlines, deliberate defect modes and allowed
//! variants. Healthy code asks `defects`, `variants` and `faults` as values held by `App` (one
//! seam each); nothing outside this module depends on `control` or `oauth`.

pub mod control;
pub mod defects;
pub mod faults;
pub mod oauth;
pub mod variants;
