Feature: The MCP transport and JSON-RPC, as any MCP server speaks them
  What MCP's basic protocol, lifecycle and Streamable HTTP transport require of every server, each
  check from the section of the specification docs/CONTRACT.md names under PROTO-1 and PROTO-2.
  Where the specification allows several behaviours (sessions or none, JSON or SSE answers, a GET
  stream or 405) each passes; a check about something this server does without is skipped.

  @PROTO-1
  Scenario: A client asking for a protocol version the server does not serve is offered one it does
    Given the persona "owner"
    When they initialize a session of their own with protocol version "1999-01-01"
    Then the server offers another protocol version it serves, not "1999-01-01"

  @PROTO-1 @needs-http
  Scenario: A request naming an unsupported version in MCP-Protocol-Version is refused with 400
    Given the persona "owner"
    When they send the JSON-RPC request "tools/list" with the header "MCP-Protocol-Version" set to "1999-01-01"
    Then the request is refused with HTTP 400 and not served

  # Over HTTP: the suite's stdio connection pairs answers with requests by its own numeric ids.
  @PROTO-2 @needs-http
  Scenario Outline: The answer carries the request's id with its type: <id>
    # 0 is falsy and "42" looks like a number: the ids a loose implementation gets wrong.
    Given the persona "owner"
    When they send the JSON-RPC request "ping" with the id <id>
    Then the answer carries the id <id>, with its type

    Examples:
      | id           |
      | 0            |
      | 2147483648   |
      | "42"         |
      | ""           |
      | "chataigne-é" |

  @PROTO-2 @needs-http
  Scenario Outline: An error answer carries the request's id with its type: <id>
    Given the persona "owner"
    When they send the JSON-RPC request "orders/teleport" with the id <id>
    Then the answer is the JSON-RPC error -32601
    And the answer carries the id <id>, with its type

    Examples:
      | id           |
      | "teleport-1" |
      | "42"         |
      | 0            |

  # Requests a server refuses on its own error paths (no name, no URI): whatever the answer, it
  # carries the id as sent, a string of digits as a string.
  @PROTO-2 @needs-http
  Scenario Outline: A request without what it names carries its id back with its type: <method>
    Given the persona "owner"
    When they send the JSON-RPC request "<method>" with the id "42"
    Then the answer carries the id "42", with its type

    Examples:
      | method         |
      | tools/call     |
      | prompts/get    |
      | resources/read |

  @PROTO-1 @needs-http
  Scenario: A notification is accepted with 202 and no body
    Given the persona "owner"
    When they send a notification the server has no answer for
    Then the server accepts it with HTTP 202 and no body

  @PROTO-1 @needs-http
  Scenario: A JSON-RPC response the server never asked for is accepted with 202 or refused with a 4xx
    Given the persona "owner"
    When they send a JSON-RPC response to a request the server never made
    Then the server accepts it with HTTP 202 and no body, or refuses it with a 4xx

  @PROTO-1 @needs-http
  Scenario: A request is answered as one JSON object or an event stream that carries the answer
    Given the persona "owner"
    When they list the tools
    Then the answer is one JSON-RPC object or an event stream that carries it

  @PROTO-1 @needs-http
  Scenario: A GET for the server's own event stream opens one or is answered 405
    Given the persona "owner"
    When they open the server's event stream with GET in a session of their own
    Then the server opens an event stream or answers 405 Method Not Allowed

  @PROTO-1 @needs-http
  Scenario: A session ID is made of visible ASCII characters
    Given the persona "owner"
    And a session of their own, if the server keeps sessions
    Then the session ID holds only visible ASCII characters

  @PROTO-1 @needs-http
  Scenario: A session the client ended is refused with 404
    Given the persona "owner"
    And a session of their own, if the server keeps sessions
    When they end the session with DELETE
    Then the server ended the session, or does not let clients end one
    When they list the tools in that session
    Then the request is refused with HTTP 404 and not served

  @PROTO-1 @needs-http
  Scenario: A session ID the server never gave is not served
    Given the persona "owner"
    And a session of their own, if the server keeps sessions
    When they list the tools in a session the server never gave
    Then the request is refused with a 4xx and not served

  @PROTO-1 @needs-http
  Scenario Outline: A 2026-07-28 request whose headers disagree with its body is refused with 400: <case>
    Given the persona "owner"
    And the server serves protocol version 2026-07-28
    When they send a 2026-07-28 tools/call request with <case>
    Then the request is refused with HTTP 400 and not served

    Examples:
      | case                                                  |
      | an Mcp-Method header naming another method            |
      | no Mcp-Method header                                  |
      | an Mcp-Name header naming another tool                |
      | no Mcp-Name header                                    |
      | an MCP-Protocol-Version header naming another version |

  # `Mcp-Name` mirrors every named target: a prompt's name and a resource's URI too.
  @PROTO-1 @needs-http
  Scenario Outline: A 2026-07-28 <method> whose Mcp-Name header names another is refused with 400
    Given the persona "owner"
    And the server serves protocol version 2026-07-28
    When they send a 2026-07-28 <method> request for what the server lists, with an Mcp-Name header naming another
    Then the request is refused with HTTP 400 and not served

    Examples:
      | method         |
      | prompts/get    |
      | resources/read |
