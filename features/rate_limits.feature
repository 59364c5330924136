Feature: Rate limits
  Each read tool takes 1000 calls a minute and each write tool 500, per OAuth client, user and
  tool; every call counts, failed ones too. A limited pair slows no one else.
  These scenarios leave their pair limited for the rest of the minute on a server without the
  control API (nothing can reset it), so each uses a pair no other scenario uses, and this file
  runs last.

  @LIM-2 @LIM-3
  Scenario: A read tool takes 1000 calls a minute, then refuses; nobody else is slowed
    Given the persona "owner_second_client"
    When they get the busy restaurant 1000 times
    Then none of them was rate limited
    When they get the busy restaurant
    Then the call fails with "MCP_RATE_LIMITED"
    And the error has category "rate_limit" and is retryable
    And the error asks to retry after a delay
    When they list the orders of the busy restaurant
    Then the call succeeds
    Given the persona "owner"
    When they get the busy restaurant
    Then the call succeeds
    Given the persona "manager"
    When they get the busy restaurant
    Then the call succeeds

  @LIM-2 @AUTH-8
  Scenario: A write tool takes 500 calls a minute, failed ones included, then refuses first
    Given the persona "viewer"
    When they ask 500 times to set the busy restaurant to "closed"
    Then none of them was rate limited
    When they ask to set the busy restaurant to "closed"
    Then the call fails with "MCP_RATE_LIMITED"
    And the error has category "rate_limit" and is retryable
    And the error asks to retry after a delay
