Feature: Memberships that end while a caller works
  A membership revoked now takes effect at once, on every path that reaches the organization's
  data: a call, a resource read, a cursor minted before the revocation, an idempotent replay
  (AUTH-7, PAG-7, IDEM-7). Each scenario revokes one user's membership through the control API
  and restores it when done, so it keeps that user's personas to itself while it runs: the
  scenarios spread over three users (viewer, manager, staff) so that no user's are held for long.

  @AUTH-7 @needs-control-memberships
  Scenario: A membership revoked now is refused at once
    Given the persona "viewer"
    When they get the busy restaurant
    Then the call succeeds
    When the membership of "viewer" in the home organization is revoked
    And they get the busy restaurant
    Then the call fails with "MCP_RESOURCE_FORBIDDEN"
    When they list the organizations
    Then they are shown no organizations
    When they list the restaurants
    Then they are shown no restaurants

  # Every surface that names the restaurant: a server that remembers a resource it served once
  # (per token, per session) serves it after the revocation. A server that advertises no resource
  # template naming a restaurant is not concerned.
  @AUTH-7 @needs-control-memberships
  Scenario: A membership revoked now is refused on the resources surface too
    Given the persona "manager"
    When they read the busy restaurant through every restaurant resource template the server lists
    And the membership of "manager" in the home organization is revoked
    And they read the busy restaurant through every restaurant resource template the server lists
    Then every read since the revocation is refused and tells nothing of the busy restaurant

  @PAG-7 @needs-control-memberships
  Scenario: A cursor carries no authority once the membership has ended
    Given the persona "viewer"
    When they list the orders of the busy restaurant with limit 5
    Then the call succeeds
    When the membership of "viewer" in the home organization is revoked
    And they list the next page
    Then the call fails with "MCP_RESOURCE_FORBIDDEN"

  # The same for the messages of a conversation: its cursor is a page of get_conversation.
  @PAG-7 @needs-control-memberships
  Scenario: A message cursor carries no authority once the membership has ended
    Given the persona "staff"
    When they get the long conversation with message_limit 5
    Then the call succeeds
    When the membership of "staff" in the home organization is revoked
    And they list the next page
    Then the call fails with "MCP_RESOURCE_FORBIDDEN"

  @IDEM-7 @needs-control-memberships
  Scenario: Access is checked again before a replay
    Given the persona "staff"
    When they send the message "Hello again CANARY" in the long conversation with the key "idem7r-CANARY"
    Then the call succeeds
    When the membership of "staff" in the home organization is revoked
    And they send the message "Hello again CANARY" in the long conversation with the key "idem7r-CANARY"
    Then the call fails with "MCP_RESOURCE_FORBIDDEN"

  @IDEM-7 @needs-control-memberships
  Scenario: A refused call is not stored: the same call with the same key runs once access is back
    Given the persona "staff"
    When the membership of "staff" in the home organization is revoked
    And they send the message "Back again CANARY" in the long conversation with the key "idem7b-CANARY"
    Then the call fails with "MCP_RESOURCE_FORBIDDEN"
    When the membership of "staff" in the home organization is restored
    And they send the message "Back again CANARY" in the long conversation with the key "idem7b-CANARY"
    Then the call succeeds
    And the answer is not a replay
