Feature: Authentication and authorization
  Every call needs a valid bearer token issued for this server. What a token may do is bounded by
  its scopes, and what its user may do by the memberships they hold now: another tenant's data is
  unreachable, and a refusal never tells whether a resource exists.
  Over HTTP the token is a bearer token; over stdio it comes from the server's environment.

  @AUTH-1 @needs-http
  Scenario: A request without a token is refused with a bearer challenge
    When someone without a token initializes
    Then the answer is HTTP 401 with a bearer challenge naming the resource metadata

  @AUTH-1 @needs-http
  Scenario: A notification without a token is refused with a bearer challenge
    When someone without a token sends a notification
    Then the answer is HTTP 401 with a bearer challenge naming the resource metadata

  # MCP's authorization: the token is sent with every HTTP request and checked on every one, not
  # once when the session starts (a session ID is no credential).
  @AUTH-1 @needs-http
  Scenario: Every request of a session is refused without a token, whoever started the session
    Given the persona "owner"
    When they start a session and send each of its requests again without a token
    Then each of them is HTTP 401 with a bearer challenge naming the resource metadata

  @AUTH-1 @needs-http
  Scenario: A token the server never issued is refused with a bearer challenge
    When someone with the token "not-a-token-CANARY" initializes
    Then the answer is HTTP 401 with a bearer challenge naming the resource metadata

  # RFC 6750 §3.1: a request without a bearer token (here, credentials of another scheme) gets
  # 401 and the Bearer challenge, the same as one with no Authorization header.
  @AUTH-1 @needs-http
  Scenario Outline: Credentials of another scheme than Bearer are refused with a bearer challenge: <scheme>
    When someone with the Authorization header "<credentials>" initializes
    Then the answer is HTTP 401 with a bearer challenge naming the resource metadata

    Examples:
      | scheme | credentials              |
      | Basic  | Basic dXNlcjpwYXNz       |
      | Token  | Token not-a-token-CANARY |

  # RFC 9110 §11.1: an authentication scheme is case-insensitive. `bearer` and `BEARER` carry
  # the same credential as `Bearer`.
  @AUTH-1 @needs-http
  Scenario Outline: A valid token is served whatever the case of its scheme: <scheme>
    Given the persona "owner"
    When they read the busy restaurant with their token under the scheme "<scheme>"
    Then the call succeeds

    Examples:
      | scheme |
      | bearer |
      | BEARER |

  @AUTH-1 @needs-http
  Scenario: The protected resource metadata names the authorization server and the scopes
    When someone without a token initializes
    Then the answer is HTTP 401 with a bearer challenge naming the resource metadata
    When they fetch the protected resource metadata
    Then the metadata names an authorization server and every scope of the contract

  # RFC 9728 §3.3: the metadata's resource is the URL of the resource it protects, which a client
  # compares with the one it reached; MCP makes that the endpoint's own URL.
  @AUTH-1 @needs-http
  Scenario: The protected resource metadata names the MCP endpoint as its resource
    When someone without a token initializes
    Then the answer is HTTP 401 with a bearer challenge naming the resource metadata
    When they fetch the protected resource metadata
    Then the metadata names the MCP endpoint as its resource

  @AUTH-1 @needs-stdio
  Scenario: A server started over stdio without a token refuses every call
    When someone without a token starts the server over stdio
    And they call every tool of the contract
    Then every tool call failed with "MCP_AUTHENTICATION_REQUIRED"
    And the error has category "authentication" and is not retryable

  @AUTH-2 @needs-http
  Scenario: A token issued for another audience is refused
    Given the persona "other_audience"
    When they initialize
    Then the answer is HTTP 401 with a bearer challenge naming the resource metadata

  @AUTH-2 @needs-http
  Scenario: Every request of a session is refused with a token issued for another audience
    Given the persona "owner"
    When they start a session and send each of its requests again with the token of "other_audience"
    Then each of them is HTTP 401 with a bearer challenge naming the resource metadata

  @AUTH-3
  Scenario Outline: A token without the scope <scope> is refused, naming the scope it needs
    Given the persona "noscope"
    When <the call>
    Then the call fails with "MCP_SCOPE_REQUIRED"
    And the error has category "authorization" and is not retryable
    And the error names the required scope "<scope>"

    Examples:
      | the call                                                                                    | scope               |
      | they list the organizations                                                                 | organizations:read  |
      | they get the busy restaurant                                                                | restaurants:read    |
      | they list the orders of the busy restaurant                                                 | orders:read         |
      | they get the long conversation                                                              | conversations:read  |
      | they search the transcripts of the busy restaurant for "gluten-free"                        | transcripts:read    |
      | they list the instructions of the busy restaurant                                           | instructions:read   |
      | they ask the analytics of the busy restaurant for 1 metric from "2026-11-01" to "2026-11-30" | analytics:read      |
      | they ask to set the busy restaurant to "paused"                                             | restaurants:write   |
      | they create the organization "Scope check CANARY" with the key "scope-CANARY"               | organizations:write |
      | they send the message "Hello CANARY" in the long conversation with the key "scope-CANARY"   | messages:write      |

  # The scope is checked on every call, not once per walk or per key: a token of the same user
  # and client (the cursor's and the key's binding) without the tool's scope is refused on the
  # page a cursor reaches and on the replay of a keyed call.
  @AUTH-3 @needs-shared-state
  Scenario: A page reached through a cursor is refused to a token without the tool's scope
    Given the persona "owner"
    When they list the orders of the busy restaurant with limit 5
    Then the call succeeds
    When the persona "noscope" lists the next page
    Then the call fails with "MCP_SCOPE_REQUIRED"

  @AUTH-3 @needs-shared-state
  Scenario: The replay of a keyed call is refused to a token without the tool's scope
    Given the persona "owner"
    When they create the instruction "Scope replay CANARY" in the busy restaurant with the key "auth3r-CANARY"
    Then the call succeeds
    Given the persona "noscope"
    When they create the instruction "Scope replay CANARY" in the busy restaurant with the key "auth3r-CANARY"
    Then the call fails with "MCP_SCOPE_REQUIRED"

  @AUTH-4
  Scenario: A restaurant of another tenant and one that does not exist are refused alike
    Given the persona "owner"
    When they get the foreign restaurant
    Then the call fails with "MCP_RESOURCE_FORBIDDEN"
    When they get "rst_doesnotexist"
    Then the call fails with "MCP_RESOURCE_FORBIDDEN"
    And the last two errors are the same but for their request_id

  @AUTH-4
  Scenario: An organization of another tenant and one that does not exist are refused alike
    Given the persona "owner"
    When they list the restaurants with organization_id the foreign organization
    Then the call fails with "MCP_RESOURCE_FORBIDDEN"
    When they list the restaurants with organization_id "org_doesnotexist"
    Then the call fails with "MCP_RESOURCE_FORBIDDEN"
    And the last two errors are the same but for their request_id

  # The resources surface is held to the tenant clause like the tools: every template the server
  # advertises that names a restaurant, filled with the foreign restaurant, and refused as one
  # that does not exist (no existence oracle, as for the tool). A server that
  # advertises no resources (initialize, or -32601) skips this as not applicable.
  @AUTH-4
  Scenario: A restaurant of another tenant cannot be read as a resource
    Given the persona "owner"
    When they read the foreign restaurant through every restaurant resource template the server lists
    Then every read is refused and tells nothing of the foreign restaurant
    And each read of the foreign restaurant is refused as the read of a restaurant that does not exist

  # Prompts are a surface too: a prompt whose arguments name records, asked about another tenant's,
  # tells nothing of them and answers as it does about records that do not exist (served or
  # refused alike). A server without such prompts skips this as not applicable.
  @AUTH-4
  Scenario: A prompt asked about another tenant's records tells nothing of them
    Given the persona "owner"
    When they ask for every prompt the server lists about the foreign tenant's records, then about records that do not exist
    Then each answer tells nothing of the records and is the answer about records that do not exist

  # The same with one foreign record among the caller's own: a prompt that reads a conversation by
  # its ID alone, not as the conversation of the restaurant named, shows it.
  @AUTH-5
  Scenario: A prompt asked about one record of another tenant among the caller's own tells nothing of it
    Given the persona "owner"
    When they ask for every prompt the server lists with one of the foreign tenant's records among their own, then with one that does not exist
    Then each answer tells nothing of the records and is the answer about records that do not exist

  # A child record (an order, a conversation, a transcript, an instruction) is held to AUTH-5 on
  # the resources surface as through the tools: every template the server advertises that names
  # one, filled with the foreign tenant's records, is refused as one that does not exist. A
  # server with no such template skips this as not applicable.
  @AUTH-5
  Scenario: A record of another tenant cannot be read through a resource template
    Given the persona "owner"
    When they read the foreign tenant's records through every resource template the server lists that names a child record
    Then each read is refused, tells nothing of the records and is refused as the read of records that do not exist

  # The other surfaces the server advertises (resources/list, templates, prompts, and what each
  # listed resource and prompt answers) name no restaurant or organization of another tenant:
  # their names, which only the data tells (IDs appear in documentation as examples).
  @AUTH-4
  Scenario Outline: The resources and prompts a server lists reveal no other tenant (as <persona>)
    Given the persona "<persona>"
    When they start a session and ask for every list the protocol has and every entry listed
    Then no answer names a restaurant or organization outside their memberships

    Examples:
      | persona  |
      | owner    |
      | outsider |

  @AUTH-4
  Scenario: The foreign tenant's owner cannot reach the home tenant
    Given the persona "outsider"
    When they list the orders of the busy restaurant
    Then the call fails with "MCP_RESOURCE_FORBIDDEN"

  @AUTH-5
  Scenario Outline: <the record> of another tenant, asked of an authorized restaurant, is not found
    Given the persona "owner"
    When they ask the busy restaurant for <the record>
    Then the call fails with "MCP_RESOURCE_NOT_FOUND"

    Examples:
      | the record               |
      | the foreign order        |
      | the foreign conversation |
      | the foreign transcript   |
      | "ord_doesnotexist"       |

  @AUTH-5
  Scenario Outline: An order of a sibling restaurant, asked of an authorized restaurant, is not found (as <persona>)
    Given the persona "<persona>"
    When they ask the busy restaurant for "ord_s0001"
    Then the call fails with "MCP_RESOURCE_NOT_FOUND"

    Examples:
      | persona |
      | owner   |
      | staff   |
      | manager |

  @AUTH-5
  Scenario: An order of the busy restaurant, asked of its sibling, is not found
    Given the persona "owner"
    When they ask the small restaurant for "ord_c0001"
    Then the call fails with "MCP_RESOURCE_NOT_FOUND"

  @AUTH-5
  Scenario: The foreign tenant's owner cannot read a home order through their own restaurant
    Given the persona "outsider"
    When they ask the foreign restaurant for "ord_c0001"
    Then the call fails with "MCP_RESOURCE_NOT_FOUND"

  @AUTH-5
  Scenario: A search never returns a sibling's or another tenant's transcripts
    Given the persona "owner"
    When they search the transcripts of the busy restaurant for "gluten-free"
    Then the call succeeds
    And the page holds 4 transcripts
    And every result belongs to the busy restaurant

  @AUTH-5
  Scenario Outline: <the record>, asked of the busy restaurant, is not found (as <persona>)
    Given the persona "<persona>"
    When they ask the busy restaurant for <the record>
    Then the call fails with "MCP_RESOURCE_NOT_FOUND"

    Examples:
      | persona | the record               |
      | owner   | the sibling conversation |
      | staff   | the sibling conversation |
      | owner   | the sibling transcript   |
      | staff   | the sibling transcript   |

  @AUTH-5
  Scenario: An order of a sibling restaurant cannot be moved through an authorized restaurant
    Given the persona "owner"
    When they ask the busy restaurant to move an order of the small restaurant from "received" to "accepted"
    Then the call fails with "MCP_RESOURCE_NOT_FOUND"
    And the order is still "received"

  @AUTH-5
  Scenario: A sibling restaurant's records are found through it
    Given the persona "owner"
    When they ask the small restaurant for the sibling conversation
    Then the call succeeds
    When they ask the small restaurant for the sibling transcript
    Then the call succeeds
    When they ask the small restaurant for "ord_s0001"
    Then the call succeeds

  @AUTH-5
  Scenario: A message to a sibling's conversation, sent through an authorized restaurant, is not found
    Given the persona "owner"
    When they send the message "Sibling CANARY" through the busy restaurant in the sibling conversation with the key "auth5-CANARY"
    Then the call fails with "MCP_RESOURCE_NOT_FOUND"

  @AUTH-5
  Scenario: A restaurant's instructions never include a sibling's
    # Every page: runs add instructions on a server nothing resets, and an empty list proves nothing.
    Given the persona "owner"
    When they walk all the instructions of the busy restaurant
    Then the walk holds every instruction of the busy restaurant in the dataset
    And every item of the walk belongs to the busy restaurant

  # An ID is the server's exact string: the busy restaurant's in upper case names none of the
  # caller's restaurants (a case-insensitive lookup serves it as the busy one).
  @AUTH-4
  Scenario: A restaurant ID written in another case is no restaurant of the caller's
    Given the persona "owner"
    When they read the busy restaurant by its ID written in upper case
    Then the call fails with "MCP_RESOURCE_FORBIDDEN" or "MCP_INVALID_ARGUMENTS"

  @AUTH-8
  Scenario: A role too low is refused before the state is compared
    Given the persona "viewer"
    When they ask to move an order of the busy restaurant in status "received" to "accepted", saying they saw it "preparing"
    Then the call fails with "MCP_RESOURCE_FORBIDDEN"
    And the order is still "received"

  @AUTH-6
  Scenario: A viewer cannot move an order
    Given the persona "viewer"
    When they ask to move an order of the busy restaurant from "received" to "accepted"
    Then the call fails with "MCP_RESOURCE_FORBIDDEN"
    And the order is still "received"

  @AUTH-6
  Scenario: A viewer cannot add an instruction
    Given the persona "viewer"
    When they create the instruction "Role check CANARY" in the busy restaurant with the key "role-CANARY"
    Then the call fails with "MCP_RESOURCE_FORBIDDEN"

  @AUTH-6
  Scenario: Staff cannot pause a restaurant
    Given the persona "staff"
    When they ask to set the busy restaurant to "paused"
    Then the call fails with "MCP_RESOURCE_FORBIDDEN"

  @AUTH-6
  Scenario: A manager cannot create a restaurant
    Given the persona "manager"
    When they create the restaurant "Role check CANARY" in the home organization with the key "role-CANARY"
    Then the call fails with "MCP_RESOURCE_FORBIDDEN"

  @AUTH-6
  Scenario: Staff limited to one restaurant cannot read another of the same organization
    Given the persona "staff"
    When they get the small restaurant
    Then the call fails with "MCP_RESOURCE_FORBIDDEN"

  @AUTH-7
  Scenario: A revoked membership grants nothing, whatever the token says
    Given the persona "revoked"
    When they get the busy restaurant
    Then the call fails with "MCP_RESOURCE_FORBIDDEN"
    When they list the organizations
    Then they are shown no organizations
    When they list the restaurants
    Then they are shown no restaurants

  # The scope on every surface that serves the restaurant's record: a resource that stands for
  # get_restaurant needs its scope. A server that advertises no resource template naming a
  # restaurant is not concerned.
  @AUTH-3
  Scenario: A token without the scope reads no restaurant as a resource either
    Given the persona "noscope"
    When they read the busy restaurant through every restaurant resource template the server lists
    Then every read is refused and tells nothing of the busy restaurant

  @AUTH-8
  Scenario: Whether the tool exists is checked before the scope
    Given the persona "noscope"
    When they call the tool "refund_order" with no arguments
    Then the answer is the JSON-RPC error -32602

  # A refusal is the whole answer: a write refused for the role has had no effect either (a check
  # made after the write would refuse it and keep it).
  @AUTH-8
  Scenario: A message a viewer may not send is not sent
    Given the persona "viewer"
    When they send the message "Viewer CANARY" in the long conversation with the key "auth8-viewer-CANARY"
    Then the call fails with "MCP_RESOURCE_FORBIDDEN"
    And the long conversation has exactly 0 messages "Viewer CANARY"

  # The same for a write refused for its scope: the check comes before the write, not after it.
  @AUTH-8
  Scenario: A restaurant status refused for the scope is not changed
    Given the persona "noscope"
    When they ask to set the small restaurant to "open", saying they saw it "paused"
    Then the call fails with "MCP_SCOPE_REQUIRED"
    Given the persona "owner"
    Then the small restaurant's status is still "paused"

  @AUTH-8
  Scenario: An instruction a viewer may not add is not added
    Given the persona "viewer"
    When they create the instruction "Viewer CANARY" in the busy restaurant with the key "auth8-viewer-CANARY"
    Then the call fails with "MCP_RESOURCE_FORBIDDEN"
    And the busy restaurant has exactly 0 instructions "Viewer CANARY"

  # The role is the caller's in the organization the record belongs to, not their highest
  # anywhere: any user may create an organization, and owns the one they create. (It stays, so
  # the server is reset after: a viewer's organizations are otherwise the dataset's.)
  @AUTH-6 @needs-control-reset
  Scenario: Owning another organization raises no role in this one
    Given a fresh server state
    And the persona "viewer"
    When they create the organization "Viewer's own CANARY" with the key "auth6-own-CANARY"
    Then the call succeeds
    When they send the message "Viewer owner CANARY" in the long conversation with the key "auth6-msg-CANARY"
    Then the call fails with "MCP_RESOURCE_FORBIDDEN"
    And the long conversation has exactly 0 messages "Viewer owner CANARY"
    When they create the instruction "Viewer owner CANARY" in the busy restaurant with the key "auth6-ins-CANARY"
    Then the call fails with "MCP_RESOURCE_FORBIDDEN"
    And the busy restaurant has exactly 0 instructions "Viewer owner CANARY"

  @AUTH-8
  Scenario: A call that fails the schema and the role changes nothing
    Given the persona "viewer"
    When they ask to move an order of the busy restaurant from "received" to "accepted" without saying what they saw
    Then the call fails with "MCP_INVALID_ARGUMENTS" or "MCP_RESOURCE_FORBIDDEN"
    And the order is still "received"

  @AUTH-8
  Scenario: A call that fails the scope and the membership reveals nothing
    Given the persona "noscope"
    When they get the foreign restaurant
    Then the call fails with "MCP_SCOPE_REQUIRED" or "MCP_RESOURCE_FORBIDDEN"

  @AUTH-8 @ext-check-order
  Scenario: The input schema is checked before the scope
    Given the persona "noscope"
    When they list the orders of the busy restaurant with limit 0
    Then the call fails with "MCP_INVALID_ARGUMENTS"

  @AUTH-8 @ext-check-order
  Scenario: The scope is checked before the membership
    Given the persona "noscope"
    When they get the foreign restaurant
    Then the call fails with "MCP_SCOPE_REQUIRED"

  @AUTH-8 @ext-check-order
  Scenario: The input schema is checked before the membership
    Given the persona "outsider"
    When they list the orders of the busy restaurant with limit 0
    Then the call fails with "MCP_INVALID_ARGUMENTS"

  @AUTH-8 @ext-check-order
  Scenario: The membership is checked before the role
    Given the persona "staff"
    When they ask to set the foreign restaurant to "paused"
    Then the call fails with "MCP_RESOURCE_FORBIDDEN"
