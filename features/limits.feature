Feature: Limits
  Analytics are bounded (1 to 8 distinct metrics, at most 366 days); a page too big for 128 KiB
  is cut with a cursor that loses nothing; an item too big to cut is refused; request bodies
  over 1 MiB are refused before they are read; string arguments have a documented maximum.

  Background:
    Given the persona "owner"

  @LIM-1
  Scenario Outline: Analytics accept <n> metric(s) over <days> days
    When they ask the analytics of the busy restaurant for <n> metrics from "<from>" to "<to>"
    Then the call succeeds

    Examples:
      | n | days | from       | to         |
      | 1 | 1    | 2026-11-30 | 2026-11-30 |
      | 8 | 366  | 2025-12-01 | 2026-12-01 |

  @LIM-1
  Scenario Outline: Analytics refuse <what>
    When they ask the analytics of the busy restaurant for the metrics "<metrics>" from "<from>" to "<to>"
    Then the call fails with "MCP_INVALID_ARGUMENTS"

    Examples:
      | what              | metrics                                                                                                                                                   | from       | to         |
      | 9 metrics         | orders_count,revenue_cents,average_order_cents,completed_orders,conversations_count,messages_received,messages_sent,median_first_response_s,new_customers | 2026-11-01 | 2026-11-30 |
      | no metric         |                                                                                                                                                           | 2026-11-01 | 2026-11-30 |
      | 367 days          | orders_count                                                                                                                                              | 2025-11-30 | 2026-12-01 |
      | an end before the start | orders_count                                                                                                                                        | 2026-11-30 | 2026-11-29 |

  @LIM-1 @ext-analytics-distinct-metrics
  Scenario: Analytics refuse a metric asked twice
    When they ask the analytics of the busy restaurant for the metrics "orders_count,orders_count" from "2026-11-01" to "2026-11-30"
    Then the call fails with "MCP_INVALID_ARGUMENTS"

  # `truncated` says a page was cut for its size, not that more follow (that is `next_cursor`).
  @LIM-5
  Scenario: A page that holds all it was asked for is not marked truncated, though more follow
    When they list the orders of the busy restaurant with limit 5
    Then the call succeeds
    And the page has a next cursor
    And the page is not marked truncated

  @LIM-5 @ENV-3
  Scenario: A page of orders too big for 128 KiB is truncated, and the cursor loses nothing
    When they list the orders of the large orders restaurant with limit 50
    Then the call succeeds
    And the page is marked truncated
    And the page holds fewer than 50 orders
    And the page has a next cursor
    When they walk all the orders of the large orders restaurant with limit 50
    Then the first page of the walk is marked truncated
    And every page of the walk is within the contract's size
    And the walk yields every order of the large orders restaurant exactly once, in one order

  @LIM-6
  Scenario: A single transcript too big for 128 KiB is refused as too large
    When they get the huge transcript
    Then the call fails with "MCP_OUTPUT_TOO_LARGE"

  @LIM-6
  Scenario: A small transcript of the same restaurant is returned
    When they get the small transcript
    Then the call succeeds

  @LIM-7 @needs-http
  Scenario: A request body of exactly 1 MiB is read
    When they send a tools/call request whose body is 1048576 bytes long
    Then the HTTP status is not 413
    And the server answered without a server error

  @LIM-7 @needs-http
  Scenario: A request body over 1 MiB is refused with HTTP 413
    When they send a tools/call request whose body is 1048577 bytes long
    Then the HTTP status is 413

  @LIM-7 @needs-http
  Scenario: A notification body over 1 MiB is refused with HTTP 413
    When they send a notification whose body is 1048577 bytes long
    Then the HTTP status is 413

  # A limit placed in the tools/call handler lets any other message be read whole.
  @LIM-7 @needs-http
  Scenario: Every kind of message over 1 MiB is refused with HTTP 413
    Given the persona "owner"
    Then every kind of message of 1048577 bytes is refused with HTTP 413

  @LIM-7 @needs-http
  Scenario: A body on and past 1 MiB is held to the limit whether it states its length or is sent chunked
    # The edges are suite/src/edges.rs's BODY_EDGES: a server that checks only Content-Length
    # reads a chunked body of any size.
    Then every request body on and past 1 MiB is read or refused with 413, with a Content-Length or chunked without one

  @LIM-7
  Scenario: Every free string argument has a documented maximum length
    When they list the tools
    Then every string argument of every tool declares a maxLength

  @LIM-7
  Scenario: A string over its maximum length is refused
    When they search the transcripts of the busy restaurant for a canary of 201 characters
    Then the call fails with "MCP_INVALID_ARGUMENTS"
