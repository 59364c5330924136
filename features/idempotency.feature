Feature: Idempotency
  Writes that create something take an idempotency key. The same key with the same arguments
  replays the stored result instead of acting twice, for 24 hours; with other arguments it is
  refused. A key belongs to one OAuth client, one user and one tool; only successes are kept.
  Texts and keys carry a value unique to each scenario (CANARY), so reruns never collide.
  (That keys are hashed before storage, IDEM-8, cannot be seen from outside: the suite checks
  that they never reach the log nor the error reports.)

  Background:
    Given the persona "owner"

  @IDEM-1
  Scenario Outline: "<tool>" refuses a key of <length> characters
    When they call "<tool>" with a key of <length> characters
    Then the call fails with "MCP_INVALID_ARGUMENTS"

    Examples:
      | tool                | length |
      | send_message        | 7      |
      | send_message        | 256    |
      | create_instruction  | 7      |
      | create_instruction  | 256    |
      | create_organization | 7      |
      | create_organization | 256    |
      | create_restaurant   | 7      |
      | create_restaurant   | 256    |

  @IDEM-1
  Scenario Outline: "<tool>" refuses a call without a key
    When they call "<tool>" without a key
    Then the call fails with "MCP_INVALID_ARGUMENTS"

    Examples:
      | tool                |
      | send_message        |
      | create_instruction  |
      | create_organization |
      | create_restaurant   |

  @IDEM-1
  Scenario Outline: A key of <length> characters is accepted
    When they call "create_instruction" with a key of <length> characters
    Then the call succeeds

    Examples:
      | length |
      | 8      |
      | 255    |

  # A space is a character: a key of 8 with a blank around it is 8 characters, whatever a
  # reader that trims every string would count.
  @IDEM-1
  Scenario Outline: A key of 8 characters with a space <side> is accepted
    When they call "create_instruction" with a key of 8 characters, a space <side>
    Then the call succeeds

    Examples:
      | side  |
      | first |
      | last  |

  @IDEM-2
  Scenario: The same key and arguments replay the stored result, and act once
    When they create the instruction "Allergy check CANARY" in the busy restaurant with the key "idem2-CANARY"
    Then the call succeeds
    And the answer is not a replay
    When they create the instruction "Allergy check CANARY" in the busy restaurant with the key "idem2-CANARY", the arguments in another order
    Then the call succeeds
    And the answer is a replay
    And the data is the same as the first call's
    And the request_ids seen are all different
    And the busy restaurant has exactly 1 instruction "Allergy check CANARY"

  # RFC 8259 §7: "é" and "\u00e9" are the same string. A server comparing the bytes it was sent
  # takes a client that escapes differently on a retry for another call.
  @IDEM-2
  Scenario: A retry whose text is written with JSON escapes replays the first call
    When they create the instruction "Crème brûlée au café CANARY" in the busy restaurant with the key "idem2-esc-CANARY"
    Then the call succeeds
    When they create the instruction "Crème brûlée au café CANARY" in the busy restaurant with the key "idem2-esc-CANARY", its text written with JSON escapes
    Then the call succeeds
    And the answer is a replay
    And the data is the same as the first call's
    And the busy restaurant has exactly 1 instruction "Crème brûlée au café CANARY"

  @IDEM-2
  Scenario: A message sent twice with the same key is sent once
    When they send the message "Your table is ready CANARY" in the long conversation with the key "idem2m-CANARY"
    And they send the message "Your table is ready CANARY" in the long conversation with the key "idem2m-CANARY"
    Then the call succeeds
    And the answer is a replay
    And the data is the same as the first call's
    And the long conversation has exactly 1 message "Your table is ready CANARY"

  @IDEM-2
  Scenario: An organization created twice with the same key is created once
    When they create the organization "Chestnut CANARY" with the key "idem2o-CANARY"
    And they create the organization "Chestnut CANARY" with the key "idem2o-CANARY"
    Then the call succeeds
    And the answer is a replay
    And the data is the same as the first call's
    And they are a member of exactly 1 organization named "Chestnut CANARY"

  # Without a session (the 2026-07-28 revision) a retry is a new request each time: the key is
  # still the pair's and the tool's, never the session's.
  @IDEM-2
  Scenario: An organization created twice with the same key over 2026-07-28 is created once
    Given the server serves protocol version 2026-07-28
    When they create the organization "Stateless CANARY" with the key "idem2s-CANARY" over 2026-07-28
    And they create the organization "Stateless CANARY" with the key "idem2s-CANARY" over 2026-07-28
    Then the call succeeds
    And the data is the same as the first call's
    And they are a member of exactly 1 organization named "Stateless CANARY"

  @IDEM-3
  Scenario: The same key with other arguments is refused
    When they create the instruction "First CANARY" in the busy restaurant with the key "idem3-CANARY"
    Then the call succeeds
    When they create the instruction "Second CANARY" in the busy restaurant with the key "idem3-CANARY"
    Then the call fails with "MCP_IDEMPOTENCY_MISMATCH"
    And the error has category "conflict" and is not retryable
    And the busy restaurant has exactly 0 instructions "Second CANARY"

  # Arguments are compared as sent: a server that trims or lowercases before comparing replays
  # another call's result (seen as outside fault b4-idem3-normalized-args).
  # Every argument is part of what a key stands for: an ID as much as a text (a fingerprint that
  # leaves out the restaurant or the conversation replays a call made elsewhere).
  @IDEM-3
  Scenario: The same key with any one argument changed is refused
    When they reuse each keyed write's key with one argument changed at a time
    Then each reuse was refused, neither replayed nor run anew

  @IDEM-3
  Scenario: The same key with arguments that differ only by letter case is refused
    When they create the instruction "Close early CANARY" in the busy restaurant with the key "idem3-case-CANARY"
    Then the call succeeds
    When they create the instruction "close early CANARY" in the busy restaurant with the key "idem3-case-CANARY"
    Then the call fails with "MCP_IDEMPOTENCY_MISMATCH"
    And the busy restaurant has exactly 0 instructions "close early CANARY"

  # "é" precomposed (U+00E9) and decomposed (e, U+0301) are different strings: a server that
  # normalizes before it compares replays the first call for another text.
  @IDEM-3
  Scenario: The same key with a text whose accent is written decomposed is refused
    When they create the instruction "Crème CANARY" in the busy restaurant with the key "idem3-nfd-CANARY"
    Then the call succeeds
    When they create the instruction "Crème CANARY" in the busy restaurant with the key "idem3-nfd-CANARY"
    Then the call fails with "MCP_IDEMPOTENCY_MISMATCH"

  @IDEM-3
  Scenario: The same key with arguments that differ only by a trailing space is refused
    When they create the instruction "Close early CANARY" in the busy restaurant with the key "idem3-space-CANARY"
    Then the call succeeds
    When they create the instruction "Close early CANARY " in the busy restaurant with the key "idem3-space-CANARY"
    Then the call fails with "MCP_IDEMPOTENCY_MISMATCH"
    And the busy restaurant has exactly 0 instructions "Close early CANARY "

  @IDEM-4 @needs-control-faults
  Scenario: The same key while the first call still runs is told to retry later
    Given a fresh server state
    And the server slows "create_instruction" by 400 ms
    When they create the instruction "Slow CANARY" in the busy restaurant with the key "idem4-CANARY" twice, the second call 150 ms after the first
    Then the call fails with "MCP_OPERATION_IN_PROGRESS"
    And the error has category "conflict" and is retryable
    And the error asks to retry after a delay
    Given the server no longer injects faults
    Then the busy restaurant has exactly 1 instruction "Slow CANARY"

  # "In progress" is while the first call runs: once it has answered, the same call is a replay
  # (a marker left behind after the answer tells the retry to wait for nothing).
  @IDEM-4
  Scenario: The same key right after the first call answered is replayed, not told to retry later
    When they create the instruction "Done CANARY" in the busy restaurant with the key "idem4d-CANARY"
    Then the call succeeds
    When they create the instruction "Done CANARY" in the busy restaurant with the key "idem4d-CANARY"
    Then the call succeeds
    And the answer is a replay

  @IDEM-4
  Scenario: Identical calls at the same time act once
    When 5 identical calls create the instruction "Burst CANARY" in the busy restaurant with the key "idem4b-CANARY" at once
    Then every call succeeded or was told the operation is in progress
    And the busy restaurant has exactly 1 instruction "Burst CANARY"

  @IDEM-4
  Scenario: Identical organization creations at the same time act once
    When 5 identical calls create the organization "Burst CANARY" with the key "idem4o-CANARY" at once
    Then every call succeeded or was told the operation is in progress
    And they are a member of exactly 1 organization named "Burst CANARY"

  @IDEM-5 @needs-shared-state
  Scenario: The same key through another OAuth client is another key
    When they create the instruction "Client CANARY" in the busy restaurant with the key "idem5c-CANARY"
    Given the persona "owner_second_client"
    When they create the instruction "Client CANARY" in the busy restaurant with the key "idem5c-CANARY"
    Then the call succeeds
    And the answer is not a replay
    And the busy restaurant has exactly 2 instructions "Client CANARY"

  @IDEM-5 @needs-shared-state
  Scenario: The same key from another user is another key
    When they create the instruction "User CANARY" in the busy restaurant with the key "idem5u-CANARY"
    Given the persona "manager"
    When they create the instruction "User CANARY" in the busy restaurant with the key "idem5u-CANARY"
    Then the call succeeds
    And the answer is not a replay
    And the busy restaurant has exactly 2 instructions "User CANARY"

  # Independent while the first call still runs too: an in-progress marker keyed without the
  # user (or the client) refuses the other one MCP_OPERATION_IN_PROGRESS.
  @IDEM-5 @needs-shared-state
  Scenario Outline: The same key from <who> at the same moment is another key
    When "owner" and "<other>" create the instruction "At once <other> CANARY" in the busy restaurant with the key "idem5-once-<other>-CANARY" at once
    Then every call succeeded, and none is a replay

    Examples:
      | who                  | other               |
      | another user         | manager             |
      | another OAuth client | owner_second_client |

  # Keys are strings: one that differs from another only in case is another key (a store that
  # compares them case-insensitively takes it for the first and refuses the other arguments).
  @IDEM-3
  Scenario: A key that differs from another only in case is another key
    When they create the instruction "Case CANARY" in the busy restaurant with the key "idem3c-CANARY"
    And they create the instruction "Other case CANARY" in the busy restaurant with the key "IDEM3C-CANARY"
    Then the call succeeds
    And the answer is not a replay

  @IDEM-5
  Scenario: The same key for another tool is another key
    When they create the instruction "Tool CANARY" in the busy restaurant with the key "idem5t-CANARY"
    And they create the organization "Tool CANARY" with the key "idem5t-CANARY"
    Then the call succeeds
    And the answer is not a replay

  # The 24 hours are elapsed time: across a daylight-saving change a retention counted in local
  # days (the same wall-clock time the next day) lasts 23 or 25 hours (suite/src/edges.rs).
  @IDEM-6 @needs-control-clock
  Scenario Outline: A key is remembered for 24 hours across a daylight-saving change (<change>, <zone>)
    Given a fresh server state
    And the server's clock is 12 hours before the next <change> change of "<zone>"
    When they create the instruction "Across <change> CANARY" in the busy restaurant with the key "idem6-<change>-CANARY"
    And 23 hours and 3540 seconds pass on the server's clock
    And they create the instruction "Across <change> CANARY" in the busy restaurant with the key "idem6-<change>-CANARY"
    Then the call succeeds
    And the answer is a replay
    When 0 hours and 61 seconds pass on the server's clock
    And they create the instruction "Across <change> CANARY" in the busy restaurant with the key "idem6-<change>-CANARY"
    Then the call succeeds
    And the answer is not a replay
    And the busy restaurant has exactly 2 instructions "Across <change> CANARY"

    Examples:
      | change | zone             |
      | spring | Europe/Paris     |
      | fall   | America/New_York |

  @IDEM-6 @needs-control-clock
  Scenario: A key is remembered for 24 hours, then forgotten
    Given a fresh server state
    When they create the instruction "Tomorrow CANARY" in the busy restaurant with the key "idem6-CANARY"
    And 23 hours and 3540 seconds pass on the server's clock
    And they create the instruction "Tomorrow CANARY" in the busy restaurant with the key "idem6-CANARY"
    Then the call succeeds
    And the answer is a replay
    And the busy restaurant has exactly 1 instruction "Tomorrow CANARY"
    When 0 hours and 61 seconds pass on the server's clock
    And they create the instruction "Tomorrow CANARY" in the busy restaurant with the key "idem6-CANARY"
    Then the call succeeds
    And the answer is not a replay
    And the busy restaurant has exactly 2 instructions "Tomorrow CANARY"

  @IDEM-7
  Scenario: A refused call leaves its key free
    When they create the instruction "Free CANARY" in the foreign restaurant with the key "idem7-CANARY"
    Then the call fails with "MCP_RESOURCE_FORBIDDEN"
    When they create the instruction "Free CANARY" in the busy restaurant with the key "idem7-CANARY"
    Then the call succeeds
    And the answer is not a replay

  # Every kind of failure inside: an internal error, and a backing store that did not answer.
  @IDEM-7 @needs-control-faults @ext-failures-not-stored
  Scenario Outline: A call that failed while running leaves its key free (<error>)
    Given a fresh server state
    And the server fails the next calls of "create_instruction" with a "<error>" error
    When they create the instruction "Retry CANARY" in the busy restaurant with the key "idem7f-CANARY"
    Then the call fails with "<code>"
    Given the server no longer injects faults
    When they create the instruction "Retry CANARY" in the busy restaurant with the key "idem7f-CANARY"
    Then the call succeeds
    And the answer is not a replay
    And the busy restaurant has exactly 1 instruction "Retry CANARY"

    Examples:
      | error      | code                       |
      | internal   | MCP_INTERNAL_ERROR         |
      | dependency | MCP_DEPENDENCY_UNAVAILABLE |

  @IDEM-8 @needs-server-log
  Scenario: Idempotency keys never reach the log
    When they create the instruction "Log check" in the busy restaurant with the key "key-CANARY"
    Then the call succeeds
    And the server log contains none of the scenario's canaries

  @IDEM-8 @needs-error-reports @needs-control-faults
  Scenario: Idempotency keys never reach error reports
    Given a fresh server state
    And the server fails the next calls of "create_instruction" with a "internal" error
    When they create the instruction "Report check" in the busy restaurant with the key "key-CANARY"
    Then the call fails with "MCP_INTERNAL_ERROR"
    And every internal error of the scenario reached error reporting, tagged with its request_id
    And no error report holds a value the scenario sent, nor their token
