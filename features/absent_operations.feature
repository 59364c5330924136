Feature: Deliberately absent operations
  Some operations are out of reach on purpose: payments, refunds, cancelling or rejecting
  orders, deleting, bulk export, campaigns, credentials, provider synchronization, onboarding,
  platform administration. No tool offers them, and no combination of tools reaches them.

  Background:
    Given the persona "owner"

  @ABS-1
  Scenario: tools/list offers exactly the tools of the contract
    When they list the tools
    Then the tools are exactly the tools of the contract

  # A catalogue per client or per user (a partner's feature flag) is still the contract's.
  @ABS-1
  Scenario Outline: tools/list offers exactly the tools of the contract to <persona>
    Given the persona "<persona>"
    When they list the tools
    Then the tools are exactly the tools of the contract

    Examples:
      | persona             |
      | owner_second_client |
      | viewer              |
      | outsider            |

  @ABS-1
  Scenario: No tool is named after a deliberately absent operation
    When they list the tools
    Then no tool name contains any of these words:
      | pay       | capture | charge   | refund     | cancel   | reject     |
      | delete    | remove  | purge    | destroy    | drop     | erase      |
      | export    | dump    | bulk     | campaign   | broadcast| marketing  |
      | credential| secret  | password | token      | api_key  | sync       |
      | onboard   | signup  | provision| admin      | impersonate | superuser |

  # The same on every surface that can offer an operation: a resource template that exports a
  # restaurant's orders in bulk is the operation the contract leaves out.
  @ABS-1
  Scenario: No resource, resource template or prompt is named after a deliberately absent operation
    Then no resource, resource template or prompt the server lists is named after any of these words:
      | pay       | capture | charge   | refund     | cancel   | reject     |
      | delete    | remove  | purge    | destroy    | drop     | erase      |
      | export    | dump    | bulk     | campaign   | broadcast| marketing  |
      | credential| secret  | password | token      | api_key  | sync       |
      | onboard   | signup  | provision| admin      | impersonate | superuser |

  @ABS-2
  Scenario Outline: An order cannot be moved to "<target>"
    When they ask to move an order of the busy restaurant from "received" to "<target>"
    Then the call fails with "MCP_INVALID_ARGUMENTS"

    Examples:
      | target    |
      | cancelled |
      | rejected  |

  @ABS-2
  Scenario Outline: The published schema of update_order_status does not offer "<target>"
    When they list the tools
    Then the input schema of "update_order_status" refuses "<target>" as its "status"

    Examples:
      | target    |
      | cancelled |
      | rejected  |

  @ABS-2
  Scenario Outline: A restaurant cannot be set to "<target>"
    When they ask to set the busy restaurant to "<target>"
    Then the call fails with "MCP_INVALID_ARGUMENTS"

    Examples:
      | target  |
      | closed  |
      | deleted |

  # No tool deletes a restaurant or sends to many: a create or a message that does so on the side
  # reaches a deliberately absent operation through an exposed tool.
  @ABS-2
  Scenario: A restaurant created under the name of another of its organization leaves that one as it was
    When they create a restaurant in the home organization under the small restaurant's name, with the key "abs2-name-CANARY"
    Then the small restaurant is still listed in the home organization and served

  @ABS-2
  Scenario: A message reaches its own conversation and no other
    When they note how many messages each conversation of the busy restaurant holds
    And they send the message "Only here CANARY" in the long conversation with the key "abs2-msg-CANARY"
    Then the call succeeds
    And every other conversation of the busy restaurant holds as many messages as before

  # A completed order: a final status, of which a run leaves more than it takes.
  @ABS-2
  Scenario: An instruction asking to cancel an order leaves the order as it was
    When they add an instruction asking to cancel an order of the busy restaurant in status "completed"
    Then the call succeeds
    And the order is still "completed"
