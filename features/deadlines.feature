Feature: Deadlines
  Reads get 15 s, analytics 30 s, writes 20 s. A read past its deadline is a timeout the caller
  may retry; a write past its deadline has an unknown outcome: its effect may have happened, a
  read of the resource tells, and a retry with the same idempotency key is safe. The control API
  shortens the deadlines and slows the tools, so this takes milliseconds.

  Background:
    Given the persona "owner"

  @LIM-4 @needs-control-deadlines @needs-control-faults
  Scenario: A read past its deadline times out, and may be retried
    Given a fresh server state
    And the server's read deadline is 100 ms
    And the server slows "get_order" by 500 ms
    When they get the order "ord_c0001" of the busy restaurant
    Then the call fails with "MCP_TOOL_TIMEOUT"
    And the error has category "timeout" and is retryable

  # The deadline is the tool's on every surface that runs it: a restaurant read as a resource
  # past get_restaurant's deadline is not served late. A server that advertises no resource
  # template naming a restaurant is not concerned.
  @LIM-4 @needs-control-deadlines @needs-control-faults
  Scenario: A restaurant read as a resource past its deadline is not served
    Given a fresh server state
    And the server's read deadline is 100 ms
    And the server slows "get_restaurant" by 500 ms
    When they read the busy restaurant through every restaurant resource template the server lists
    Then every read is refused and tells nothing of the busy restaurant

  @LIM-4 @needs-control-deadlines @needs-control-faults
  Scenario: Analytics past their deadline time out too
    Given a fresh server state
    And the server's analytics deadline is 100 ms
    And the server slows "get_analytics" by 500 ms
    When they ask the analytics of the busy restaurant for 2 metrics from "2026-11-01" to "2026-11-30"
    Then the call fails with "MCP_TOOL_TIMEOUT"

  @LIM-4 @needs-control-deadlines @needs-control-faults
  Scenario: A write past its deadline has an unknown outcome, and a read tells what happened
    Given a fresh server state
    And the server's write deadline is 100 ms
    And the server holds the answers of "update_order_status" for 200 ms after their effect
    When they ask to move an order of the busy restaurant from "received" to "accepted"
    Then the call fails with "MCP_OUTCOME_UNKNOWN"
    And the error has category "timeout" and is not retryable
    When they wait 250 ms
    Then the order is "accepted"

  @LIM-4 @needs-control-deadlines @needs-control-faults
  Scenario: A keyed write past its deadline is safe to retry with the same key
    Given a fresh server state
    And the server's write deadline is 100 ms
    And the server holds the answers of "create_instruction" for 200 ms after their effect
    When they create the instruction "Deadline CANARY" in the busy restaurant with the key "lim4-CANARY"
    Then the call fails with "MCP_OUTCOME_UNKNOWN"
    Given the server no longer injects faults
    When they wait 250 ms
    And they create the instruction "Deadline CANARY" in the busy restaurant with the key "lim4-CANARY"
    Then the call succeeds
    And the busy restaurant has exactly 1 instruction "Deadline CANARY"

  @LIM-4 @needs-control-deadlines @needs-control-faults
  Scenario: Every tool past the deadline of its kind times out, never answering a success
    # suite/src/matrices.rs's deadline_rows: every tool of the contract by its kind, not one
    # picked read; a search that gives up and answers no hits is a success the rule refuses.
    Given a fresh server state
    Then every tool past the deadline of its kind answers its timeout, never a success
