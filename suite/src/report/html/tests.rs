use super::*;
use crate::report::{Finding, ReportHeader};

/// A failure as `ConformanceWorld::fail_about` writes it, answered by `body`.
fn message(body: &str) -> String {
    format!(
        "expected: a tool success\ngot: tool error MCP_INTERNAL\nclauses: ENV-1\n\
         request as \"owner\": POST http://127.0.0.1:8080/mcp (tools/call get_restaurant, 120 bytes)\n  \
         authorization: Bearer [redacted]\n  {{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\"}}\n\
         response: HTTP 200 in 3 ms\n  content-type: application/json\n  {body}\n\
         request_id: req_00000000000000000000000001"
    )
}

fn failed(name: &str, tag: &str, message: String) -> ScenarioResult {
    ScenarioResult {
        feature: "features/envelope.feature".to_owned(),
        name: name.to_owned(),
        line: 12,
        status: Status::Failed,
        skip_reason: None,
        failed_step: Some("Then the call succeeds".to_owned()),
        message: Some(message),
        ext_choices: Vec::new(),
        ext_differences: Vec::new(),
        request_ids: vec!["req_00000000000000000000000001".to_owned()],
        exchanges: 1,
        not_applicable: false,
        cut_short: false,
        timing: None,
        tags: vec![tag.to_owned()],
        last_exchange: None,
    }
}

fn header() -> ReportHeader {
    ReportHeader {
        endpoint: "http://127.0.0.1:8080/mcp".to_owned(),
        features: "built-in".to_owned(),
        capabilities: Default::default(),
        level: Level::Seed,
        require_all: false,
    }
}

fn count(haystack: &str, needle: &str) -> usize {
    haystack.matches(needle).count()
}

/// The server under test writes what it likes in its answers: on the page it stays text. No
/// element it names exists, and every fold the page opens is the page's own.
#[test]
fn a_hostile_response_is_rendered_inert() {
    let hostile = r#"{"text":"<script>alert(document.cookie)</script></details></td></table><img src=x onerror=alert(1)>","x":"' onmouseover='alert(2)"}"#;
    let scenarios = [
        failed("<b>bold</b> scenario </summary>", "ENV-1", message(hostile)),
        failed("plain", "ENV-2", message("</pre><script>alert(3)</script>")),
    ];
    let findings = [Finding {
        clause: "ENV-6".to_owned(),
        level: crate::judge::RuleLevel::Ext,
        detail: "echoed <script>alert(4)</script></details>".to_owned(),
    }];
    let report = Report::build(
        &scenarios,
        &findings,
        &Default::default(),
        header(),
        vec!["<script>x</script>".to_owned()],
    );
    let page = html(&report);
    let lower = page.to_lowercase();
    assert_eq!(count(&lower, "<script"), 0, "a script element got through");
    assert_eq!(count(&lower, "<img"), 0);
    assert_eq!(count(&lower, "<b>bold"), 0);
    assert!(!lower.contains("onmouseover='"), "an attribute got through");
    // Two failures and one finding: three folds, each closed where the page closes it.
    assert_eq!(count(&page, "<details"), 3);
    assert_eq!(count(&page, "</details>"), 3);
    assert_eq!(count(&page, "</summary>"), 3);
    assert_eq!(count(&page, "</pre>"), count(&page, "<pre>"));
    assert_eq!(count(&page, "</table>"), 1);
    // The text is all there, as text.
    assert!(page.contains("&lt;script&gt;alert(document.cookie)&lt;/script&gt;&lt;/details&gt;"), "{page}");
    assert!(page.contains("&lt;b&gt;bold&lt;/b&gt; scenario &lt;/summary&gt;"));
    assert!(page.contains("&#39; onmouseover=&#39;alert(2)"));
    assert!(page.contains("echoed &lt;script&gt;alert(4)&lt;/script&gt;&lt;/details&gt;"));
    // And were anything to slip through, the page allows no script.
    assert!(page.contains("content=\"default-src 'none'; style-src 'unsafe-inline'; img-src data:\""));
}

#[test]
fn the_page_has_the_verdict_the_matrix_and_each_failure_with_its_exchange() {
    let scenarios =
        [failed("A success carries a text summary", "ENV-1", message(r#"{"result":{"isError":true}}"#))];
    let report = Report::build(&scenarios, &[], &Default::default(), header(), vec![]);
    let page = html(&report);
    assert!(page.starts_with("<!DOCTYPE html>"));
    assert!(page.contains("<p class=\"head\">NOT CERTIFIED at the seed level:"), "{page}");
    // One row and one tile per clause of the contract.
    let clauses = chataigne_contract::clauses::CLAUSES.len();
    assert_eq!(count(&page, "<tr class=\""), clauses);
    assert_eq!(count(&page, "<li><a class=\""), clauses);
    assert!(page.contains("<tr class=\"failed\" id=\"clause-ENV-1\">"));
    assert!(page.contains("<a href=\"#failure-0\">failure 1</a>"));
    // The folded failure: the step, the facts, the request, the response, the request_id.
    let fold = &page[page.find("<details class=\"failure\" id=\"failure-0\">").unwrap()..];
    let fold = &fold[..fold.find("</details>").unwrap()];
    assert!(fold.contains("<p class=\"step\">Then the call succeeds</p>"));
    assert!(
        fold.contains("<dt>expected</dt><dd>a tool success</dd><dt>got</dt><dd>tool error MCP_INTERNAL</dd>")
    );
    assert!(
        fold.contains(
            "<div class=\"label\">request<span>as &quot;owner&quot;: POST http://127.0.0.1:8080/mcp"
        )
    );
    assert!(fold.contains("<div class=\"label\">response<span>HTTP 200 in 3 ms</span>"));
    // A JSON body is indented for reading.
    assert!(fold.contains("{\n  &quot;result&quot;: {\n    &quot;isError&quot;: true\n  }\n}"), "{fold}");
    assert!(fold.contains("<p class=\"rid\">request_id <code>req_00000000000000000000000001</code></p>"));
}

#[test]
fn a_run_that_could_not_start_has_a_page_too() {
    let page = html_could_not_start("cannot reach http://x/<mcp>: connection refused");
    assert!(page.starts_with("<!DOCTYPE html>") && page.ends_with("</html>\n"));
    assert!(page.contains("The run could not start"));
    assert!(page.contains("cannot reach http://x/&lt;mcp&gt;: connection refused"));
}
