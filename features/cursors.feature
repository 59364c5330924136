Feature: Cursors
  A cursor is opaque and bound to the call that produced it: the same tool, the same filters,
  the same OAuth client and user. Anything else is refused with MCP_CURSOR_INVALID. Only the page
  size may change between pages. A cursor grants nothing: access is checked on every page.

  Background:
    Given the persona "owner"

  @PAG-5
  Scenario Outline: A cursor <changed> is refused
    When they list the orders of the busy restaurant with limit 5
    And they list the next page, passing the cursor <changed>
    Then the call fails with "MCP_CURSOR_INVALID"

    Examples:
      | changed                        |
      | flipped in its middle          |
      | flipped at its first character |
      | truncated by one character     |
      | with one letter's case changed |
      | with one character percent-encoded |
      | with a blank on each side      |
      | with a newline after it        |
      | re-encoded in base64           |
      | re-encoded in another base64 alphabet or padding |
      | as an empty string             |

  @PAG-6
  Scenario: A cursor reused with another filter is refused
    When they list the orders of the busy restaurant with limit 5 and channel "web"
    And they list the next page with channel "phone"
    Then the call fails with "MCP_CURSOR_INVALID"

  @PAG-6
  Scenario: A cursor reused for another restaurant is refused
    When they list the orders of the busy restaurant with limit 5
    And they list the next page with restaurant_id the small restaurant
    Then the call fails with "MCP_CURSOR_INVALID"

  @PAG-6
  Scenario: A cursor reused with another tool is refused
    When they list the orders of the busy restaurant with limit 5
    And they list the conversations of the busy restaurant with the last cursor
    Then the call fails with "MCP_CURSOR_INVALID"

  @PAG-6
  Scenario: A cursor reused by another user is refused
    When they list the orders of the busy restaurant with limit 5
    And the persona "manager" lists the next page
    Then the call fails with "MCP_CURSOR_INVALID"

  @PAG-6
  Scenario: A cursor reused by the same user through another OAuth client is refused
    When they list the orders of the busy restaurant with limit 5
    And the persona "owner_second_client" lists the next page
    Then the call fails with "MCP_CURSOR_INVALID"

  @PAG-6
  Scenario: A cursor continues with another limit when the filters are the same
    When they list the orders of the busy restaurant with limit 5
    And they list the next page with limit 7
    Then the call succeeds
    And the pages so far hold the first 12 orders of the busy restaurant, each once, in one order

  # The walk itself when the page size changes at every page, larger and then smaller: a cursor
  # that holds a page number (page × limit) instead of a position skips or repeats orders.
  @PAG-4
  Scenario: A walk whose page size changes at every page yields every order once, in one order
    When they list the orders of the busy restaurant with limit 10
    And they list the next page with limit 20
    And they list the next page with limit 3
    And they list the next page with limit 7
    Then the call succeeds
    And the pages so far hold the first 40 orders of the busy restaurant, each once, in one order
