//! The faults of SEC: what internal errors must not carry.

use super::*;

impl Proxy {
    /// Answer-side rewrites of this area's faults (`Proxy::after`).
    pub(crate) async fn after_security(&self, a: &mut Answer) {
        use Fault::*;
        let code = a.code();
        match self.fault {
            Sec2StackTrace if code == Some(ErrorCode::InternalError) => append_message(
                a,
                " — thread 'tokio-runtime-worker' panicked at src/tools/orders.rs:212:9: called `Option::unwrap()` on a `None` value; 0: mock_server::pipeline::call",
            ),
            Sec2LeakInText if code == Some(ErrorCode::InternalError) => {
                if let Some(text) = a.text_mut() {
                    *text = json!(format!(
                        "{} (caused by: Connection refused (os error 111) at /srv/chataigne/src/state/redis.rs:88)",
                        text.as_str().unwrap_or_default()
                    ));
                }
            }
            Sec2LeakInField if code == Some(ErrorCode::InternalError) => {
                set_error(a, "detail", json!("ERROR: relation \"orders\" does not exist (SQLSTATE 42P01)"));
            }
            _ => {}
        }
    }
}
