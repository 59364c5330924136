Feature: Optimistic preconditions
  A change of state names the state the caller last saw (`expected_status`). A stale view is
  refused and changes nothing; the order lifecycle only moves forward
  (received → accepted → preparing → ready → completed); of two operators racing on the same
  order, exactly one wins. Orders are picked from the server's current state: on a server nothing
  resets, a run moves at most 3 received orders of the busy restaurant forward, and the dataset
  has enough for 25 runs (fixtures/README.md).

  Background:
    Given the persona "owner"

  @PRE-1
  Scenario: Moving an order without saying what was seen is refused
    When they ask to move an order of the busy restaurant from "received" to "accepted" without saying what they saw
    Then the call fails with "MCP_INVALID_ARGUMENTS"
    And the order is still "received"

  @PRE-1
  Scenario: Pausing a restaurant without saying what was seen is refused
    When they ask to set the busy restaurant to "paused" without saying what they saw
    Then the call fails with "MCP_INVALID_ARGUMENTS"

  # Right after a move, the state its answer showed is current: the next move naming it succeeds
  # (a precondition read from a lagging replica refuses it). PRE-1's other side too: a move that
  # names the state seen is served, and changes that order alone (the run's audit).
  @PRE-1 @PRE-2
  Scenario: A move from the state the caller saw succeeds, and so does the next one at once
    When they ask to move an order of the busy restaurant from "received" to "accepted"
    Then the call succeeds
    And the order is "accepted"
    And the order is listed as "accepted" among the restaurant's orders in that status
    And the order is no longer listed among the restaurant's orders in status "received"
    When they move the same order on from "accepted" to "preparing"
    Then the call succeeds
    And the order is "preparing"

  # Another user who read the order before the move reads the state the move left, not a copy
  # kept for them: a read cached per user and dropped for the writer only is stale for the rest.
  # (An accepted order, of which PRE-2's and PRE-4's other scenarios leave more than they take.)
  @PRE-2 @needs-shared-state
  Scenario: A move shows at once to another user who read the order before it
    When they ask to move an order of the busy restaurant from "accepted" to "preparing"
    Then the call succeeds
    Given the persona "manager"
    Then the order is "preparing"
    Given the persona "owner"
    When they move the same order on from "preparing" to "ready"
    Then the call succeeds
    Given the persona "manager"
    Then the order is "ready"

  @PRE-2
  Scenario: A stale view is refused as a conflict and changes nothing
    When they ask to move an order of the busy restaurant in status "received" to "accepted", saying they saw it "preparing"
    Then the call fails with "MCP_EXPECTED_STATE_MISMATCH" or "ORDER_STATUS_PRECONDITION_FAILED"
    And the error has category "conflict" and is not retryable
    And the order is still "received"

  # The same move sent again once it is done names a status the order no longer has: a server
  # that lets a move to the status the order already has through, whatever it expected, answers
  # a stale view as if it were current.
  @PRE-2
  # An accepted order: a run leaves more of them than it takes (received ones are counted).
  Scenario: The same move sent again once it is done is refused as a conflict
    When they ask to move an order of the busy restaurant from "accepted" to "preparing"
    Then the call succeeds
    When they move the same order on from "accepted" to "preparing"
    Then the call fails with "MCP_EXPECTED_STATE_MISMATCH" or "ORDER_STATUS_PRECONDITION_FAILED"
    And the order is still "preparing"

  @PRE-2
  Scenario: A stale view of a restaurant is refused as a conflict
    When they ask to set the small restaurant to "open", saying they saw it "open"
    Then the call fails with "MCP_EXPECTED_STATE_MISMATCH" or "ORDER_STATUS_PRECONDITION_FAILED"
    And the error has category "conflict" and is not retryable

  @PRE-3
  Scenario Outline: The lifecycle forbids moving an order back, from <from> to <to>
    # Refused with either precondition code, or as invalid; ORDER_STATUS_PRECONDITION_FAILED is the
    # reference's choice (PRE-3).
    When they ask to move an order of the busy restaurant from "<from>" to "<to>"
    Then the move is refused as against the lifecycle
    And the order is still "<from>"

    Examples:
      | from      | to        |
      | completed | accepted  |
      | completed | ready     |
      | ready     | preparing |
      | ready     | accepted  |
      | preparing | accepted  |

  # The seed lets a server serve a forward skip or refuse it; either way the answer is the truth:
  # served, the order has the status asked for; refused, it has not moved at all.
  @PRE-3
  Scenario: A forward skip is served whole or refused with no effect
    When they ask to move an order of the busy restaurant from "accepted" to "ready"
    Then the order is "ready" if the move was served, and still "accepted" if it was refused

  # The seed forbids going against the lifecycle only; refusing a forward skip is the reference's
  # choice. On a server that allows it, this moves one received order (counted in the 3 a run uses).
  @PRE-3 @ext-lifecycle-one-step
  Scenario: Skipping a step forward, from received to preparing, is refused too
    When they ask to move an order of the busy restaurant from "received" to "preparing"
    Then the move is refused as against the lifecycle
    And the order is still "received"

  @PRE-4 @needs-shared-state
  Scenario: Two operators racing on the same order: exactly one wins
    When "owner" and "manager" both move the same "received" order of the busy restaurant to "accepted" at once
    Then exactly one of the two calls succeeded, and the other failed with "MCP_EXPECTED_STATE_MISMATCH" or "ORDER_STATUS_PRECONDITION_FAILED"
    And the order is "accepted"

  # Every state a precondition guards, not only orders: a restaurant status written without a
  # compare-and-set tells both racers they won. The restaurant is the scenario's own.
  @PRE-4 @needs-shared-state
  Scenario: Two operators racing on the same restaurant: exactly one wins
    Given the persona "owner"
    When they create the restaurant "Race CANARY" in the home organization with the key "pre4-race-CANARY"
    Then the call succeeds
    When "owner" and "manager" both set the restaurant they created to its other status at once
    Then exactly one of the two calls succeeded, and the other failed with "MCP_EXPECTED_STATE_MISMATCH" or "ORDER_STATUS_PRECONDITION_FAILED"

  @PRE-4 @needs-control-faults
  Scenario: Two operators racing while the server is slow: the state is compared again at the effect
    Given a fresh server state
    And the server slows "update_order_status" by 200 ms
    When "owner" and "manager" both move the same "received" order of the busy restaurant to "accepted" at once
    Then exactly one of the two calls succeeded, and the other failed with "MCP_EXPECTED_STATE_MISMATCH" or "ORDER_STATUS_PRECONDITION_FAILED"
    And the order is "accepted"

  # The change shows in the lists too: a list read from a cache the write does not invalidate.
  @PRE-2
  Scenario: A change of status shows when the restaurant is listed
    Given the persona "owner"
    When they create the restaurant "Listed CANARY" in the home organization with the key "pre2-listed-CANARY"
    Then the call succeeds
    When they set the restaurant they created to its other status, saying what its creation showed
    Then the call succeeds
    And the restaurants listed show it in the status its change left

  # The change shows on every surface that reads the restaurant, not only on the tool: each
  # restaurant template the server advertises, read after the change. The restaurant is the
  # scenario's own (created here), so no other scenario sees it move. A server that advertises no
  # resources, or whose resource states no status, skips this as not applicable.
  @PRE-2
  Scenario: A change of status shows when the restaurant is read as a resource
    Given the persona "owner"
    When they create the restaurant "Surface CANARY" in the home organization with the key "pre2-surface-CANARY"
    Then the call succeeds
    When they set the restaurant they created to its other status, saying what its creation showed
    Then the call succeeds
    When they read it back through every restaurant resource template the server lists
    Then every read shows the restaurant in the status its change left
