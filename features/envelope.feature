Feature: The response envelope
  Every tool answers in one envelope: `data` and `meta` on success, `data.error` on failure, a
  request_id a support team can trace, a short text a person can read, bounded sizes, and error
  messages that never repeat what the caller sent.

  Background:
    Given the persona "owner"

  @ENV-1
  Scenario: A success carries data, meta and one short readable text
    When they get the busy restaurant
    Then the call succeeds
    And the structured content holds data and meta with request_id, truncated and replayed
    And the result has one text block a person can read

  @ENV-1
  Scenario: Every read tool's success carries one short text a person can read
    Given the persona "owner"
    When they call every read tool once, as the tables allow the owner on the busy restaurant
    Then every success carries one text block a person can read, besides any JSON

  @ENV-1
  Scenario: A list is a success envelope too
    When they list the orders of the busy restaurant with limit 5
    Then the call succeeds
    And the structured content holds data and meta with request_id, truncated and replayed
    And the result has one text block a person can read

  # Every page, not only the first: a page reached through a cursor is built by the same tool.
  @ENV-1
  Scenario: A page reached through a cursor is a success envelope too
    When they list the orders of the busy restaurant with limit 5
    And they list the next page
    Then the call succeeds
    And the structured content holds data and meta with request_id, truncated and replayed
    And the result has one text block a person can read

  @ENV-7
  Scenario: Every read tool answers with the contract's data shape
    When they call every read tool once with valid arguments
    Then every success seen has the contract's data shape

  @ENV-2
  Scenario: Every call gets its own well-formed request_id
    When they get the busy restaurant
    And they get the busy restaurant
    And they list the orders of the busy restaurant with limit 0
    Then every request_id seen has the contract's format
    And the request_ids seen are all different

  @ENV-2
  Scenario: A replay gets a request_id of its own
    When they create the instruction "Replay id CANARY" in the busy restaurant with the key "env2-CANARY"
    And they create the instruction "Replay id CANARY" in the busy restaurant with the key "env2-CANARY"
    Then the call succeeds
    And the answer is a replay
    And every request_id seen has the contract's format
    And the request_ids seen are all different

  @ENV-2 @needs-http
  Scenario: Every answer over HTTP also sends its request_id as the x-request-id header
    When they get the busy restaurant
    And they list the orders of the busy restaurant with limit 0
    Then every answer carries its request_id in the x-request-id header

  # The header is the server's request_id, whatever the request carried: a tracing layer that
  # keeps the caller's x-request-id answers with an ID the envelope does not have.
  @ENV-2 @needs-http
  Scenario: A request that brings an x-request-id of its own is answered with the server's
    Given the persona "owner"
    When they call "list_organizations" in their session with the header "X-Request-Id" set to "req_ChosenByTheClient000001"
    Then the call succeeds
    And every answer carries its request_id in the x-request-id header

  @ENV-3
  Scenario: Summaries stay under 4 KiB and structured outputs under 128 KiB, even for big answers
    When they list the orders of the large orders restaurant with limit 50
    And they get the long conversation with message_limit 100
    And they get the huge transcript
    And they search the transcripts of the busy restaurant for "gluten-free"
    And they make every write whose text could outgrow a summary, with that text at its maximum in three-byte characters
    Then every text summary and structured output seen is within the contract's sizes

  @ENV-4
  Scenario: An error is flagged, enveloped, and carries the same request_id twice
    When they list the orders of the busy restaurant with limit 0
    Then the call fails with "MCP_INVALID_ARGUMENTS"
    And the result is flagged as an error
    And the error carries a code, a category, a retryable flag, a message and a request_id
    And the error's request_id is the one in meta

  @ENV-4
  Scenario: An authorization error is enveloped the same way
    When they get the foreign restaurant
    Then the call fails with "MCP_RESOURCE_FORBIDDEN"
    And the result is flagged as an error
    And the error carries a code, a category, a retryable flag, a message and a request_id
    And the error's request_id is the one in meta

  @ENV-5
  Scenario Outline: <code> always has category <category>
    When <the call>
    Then the call fails with "<code>"
    And the error has category "<category>" and is not retryable

    Examples:
      | the call                                                                     | code                   | category      |
      | they list the orders of the busy restaurant with limit 0                     | MCP_INVALID_ARGUMENTS  | validation    |
      | they get the foreign restaurant                                              | MCP_RESOURCE_FORBIDDEN | authorization |
      | they get the order "ord_r0001" of the busy restaurant                        | MCP_RESOURCE_NOT_FOUND | not_found     |
      | they list the orders of the busy restaurant with cursor "not-a-real-cursor"  | MCP_CURSOR_INVALID     | validation    |
      | they get the huge transcript                                                 | MCP_OUTPUT_TOO_LARGE   | validation    |

  @ENV-5
  Scenario: A token without scopes gets MCP_SCOPE_REQUIRED with its fixed category
    Given the persona "noscope"
    When they get the busy restaurant
    Then the call fails with "MCP_SCOPE_REQUIRED"
    And the error has category "authorization" and is not retryable
    And every error seen has its code's category and retryable flag

  @ENV-5
  Scenario: A conflict is reported with category conflict, not retryable
    When they create the instruction "Conflict CANARY" in the busy restaurant with the key "env5-CANARY"
    And they create the instruction "Other conflict CANARY" in the busy restaurant with the key "env5-CANARY"
    Then the call fails with "MCP_IDEMPOTENCY_MISMATCH"
    And every error seen has its code's category and retryable flag

  @ENV-5 @needs-control-faults
  Scenario Outline: An injected <fault> failure is reported with its fixed category, and retryable
    Given a fresh server state
    And the server fails the next calls of "get_order" with a "<fault>" error
    When they get the order "ord_c0001" of the busy restaurant
    Then the call fails with "<code>"
    And the error has category "<category>" and is retryable

    Examples:
      | fault      | code                       | category   |
      | internal   | MCP_INTERNAL_ERROR         | internal   |
      | dependency | MCP_DEPENDENCY_UNAVAILABLE | dependency |

  @ENV-6
  Scenario: An idempotency conflict does not echo the key
    When they create the instruction "Echo check CANARY" in the busy restaurant with the key "env6-CANARY"
    And they create the instruction "Other echo check CANARY" in the busy restaurant with the key "env6-CANARY"
    Then the call fails with "MCP_IDEMPOTENCY_MISMATCH"
    And neither the error message nor the text summary contains the canary

  @ENV-6
  Scenario: An over-long search query is not echoed in the error
    When they search the transcripts of the busy restaurant for a canary of 201 characters
    Then the call fails with "MCP_INVALID_ARGUMENTS"
    And neither the error message nor the text summary contains the canary

  @ENV-6
  Scenario: An unknown order ID is not echoed in the error
    When they get the order "ord_CANARY" of the busy restaurant
    Then the call fails with "MCP_RESOURCE_NOT_FOUND"
    And neither the error message nor the text summary contains the canary

  @ENV-6
  Scenario: A forged cursor is not echoed in the error
    When they list the orders of the busy restaurant with cursor "CANARY"
    Then the call fails with "MCP_CURSOR_INVALID"
    And neither the error message nor the text summary contains the canary

  @ENV-6
  Scenario: A search in a foreign restaurant does not echo the query, nor the token
    When they search the transcripts of the foreign restaurant for "CANARY"
    Then the call fails with "MCP_RESOURCE_FORBIDDEN"
    And neither the error message nor the text summary contains the canary
    And the error does not contain their token
