Feature: Security of data
  What callers send (arguments, customer message texts, transcript queries, idempotency keys,
  tokens) never reaches the server's logs nor its error reports; internal errors reveal nothing
  of the server's insides. The suite sends unique values (CANARY) and proves none of them is in
  the log (the profile's `server_log`) nor in any error report the server sends to the suite's
  own Sentry endpoint (the profile's `error_reports`; internal errors are injected through the
  control API).

  Background:
    Given the persona "owner"

  @SEC-1 @needs-server-log
  Scenario: Message texts, queries, keys and tokens never reach the log
    When they send the message "Bonjour CANARY" in the long conversation with the key "sec1-CANARY"
    And they search the transcripts of the busy restaurant for "CANARY"
    And they create the instruction "Remember CANARY" in the busy restaurant with the key "sec1i-CANARY"
    Then the server log contains none of the scenario's canaries
    And the server log does not contain their token

  @SEC-1 @needs-server-log
  Scenario: Values of refused calls never reach the log either
    When they search the transcripts of the busy restaurant for a canary of 201 characters
    And they search the transcripts of the foreign restaurant for "CANARY"
    And they create the instruction "Refused CANARY" in the foreign restaurant with the key "sec1r-CANARY"
    Then the server log contains none of the scenario's canaries

  @SEC-1 @needs-error-reports @needs-control-faults
  Scenario: Internal errors are reported without the arguments, texts, queries, keys or tokens
    Given a fresh server state
    And the server fails the next calls of "send_message" with a "internal" error
    And the server fails the next calls of "search_transcripts" with a "internal" error
    And the server fails the next calls of "create_instruction" with a "internal" error
    And the server fails the next calls of "create_organization" with a "internal" error
    When they send the message "Bonjour CANARY" in the long conversation with the key "sre-CANARY"
    Then the call fails with "MCP_INTERNAL_ERROR"
    When they search the transcripts of the busy restaurant for "CANARY"
    Then the call fails with "MCP_INTERNAL_ERROR"
    When they create the instruction "Remember CANARY" in the busy restaurant with the key "srei-CANARY"
    Then the call fails with "MCP_INTERNAL_ERROR"
    When they create the organization "Group CANARY" with the key "sreo-CANARY"
    Then the call fails with "MCP_INTERNAL_ERROR"
    When they search the transcripts of the foreign restaurant for "CANARY"
    Then every internal error of the scenario reached error reporting, tagged with its request_id
    And no error report holds a value the scenario sent, nor their token

  @SEC-2 @needs-control-faults
  Scenario Outline: A <fault> failure reveals nothing of the server's insides
    Given a fresh server state
    And the server fails the next calls of "get_order" with a "<fault>" error
    When they get the order "ord_c0001" of the busy restaurant
    Then the call fails with "<code>"
    And the error reveals none of these:
      | panicked   | backtrace  | stack trace | .rs:     | src/       | traceback     |
      | exception  | select     | insert into | sqlstate | postgres   | sqlite        |
      | /home/     | /usr/      | /var/       | .go:     | thread '   | os error      |
      | refused    | timed out  | errno       | unwrap   | null point | at line       |

    Examples:
      | fault      | code                       |
      | internal   | MCP_INTERNAL_ERROR         |
      | dependency | MCP_DEPENDENCY_UNAVAILABLE |

  # A keyed write goes through the idempotency store too: its failures are told as plainly.
  @SEC-2 @needs-control-faults
  Scenario Outline: A <fault> failure of a keyed write reveals nothing of the server's insides
    Given a fresh server state
    And the server fails the next calls of "create_instruction" with a "<fault>" error
    When they create the instruction "Failing CANARY" in the busy restaurant with the key "sec2-keyed-CANARY"
    Then the call fails with "<code>"
    And the error reveals none of these:
      | panicked   | backtrace  | stack trace | .rs:     | src/       | traceback     |
      | exception  | select     | insert into | sqlstate | postgres   | sqlite        |
      | /home/     | /usr/      | /var/       | .go:     | thread '   | os error      |
      | refused    | timed out  | errno       | unwrap   | null point | at line       |
      | redis://   | password   | rediss://   | @127.0.0.1 | @localhost | postgresql:// |

    Examples:
      | fault      | code                       |
      | internal   | MCP_INTERNAL_ERROR         |
      | dependency | MCP_DEPENDENCY_UNAVAILABLE |

  # A page reached through a cursor takes another query (the cursor's position in it): its
  # failure is told as plainly as a first page's.
  @SEC-2 @needs-control-faults
  Scenario: An internal failure on a page reached through a cursor reveals nothing of the server's insides
    Given a fresh server state
    When they list the orders of the busy restaurant
    Then the call succeeds
    Given the server fails the next calls of "list_orders" with a "internal" error
    When they list the next page
    Then the call fails with "MCP_INTERNAL_ERROR"
    And the error reveals none of these:
      | panicked   | backtrace  | stack trace | .rs:     | src/       | traceback     |
      | exception  | select     | insert into | sqlstate | postgres   | sqlite        |
      | /home/     | /usr/      | /var/       | .go:     | thread '   | os error      |
      | refused    | timed out  | errno       | unwrap   | null point | at line       |

  # The same on the resources surface: a read of a restaurant resource runs the restaurant's read,
  # and its failure, told as a JSON-RPC error, shows nothing of the server's insides either.
  @SEC-2 @needs-control-faults
  Scenario Outline: A <fault> failure behind a resource read reveals nothing of the server's insides
    Given a fresh server state
    And the server fails the next calls of "get_restaurant" with a "<fault>" error
    When they read the busy restaurant through every restaurant resource template the server lists
    Then every read that failed reveals none of these:
      | panicked   | backtrace  | stack trace | .rs:     | src/       | traceback     |
      | exception  | select     | insert into | sqlstate | postgres   | sqlite        |
      | /home/     | /usr/      | /var/       | .go:     | thread '   | os error      |
      | refused    | timed out  | errno       | unwrap   | null point | at line       |

    Examples:
      | fault      |
      | internal   |
      | dependency |
