Feature: The contract's tables, every case
  What holds for every tool, filter, persona or transition are checked for every one of
  them, derived from the tables of the contract crate and the dataset (suite/src/matrices.rs),
  not for one hand-picked case. A new filter, tool, persona or status is covered with no new
  scenario.

  Background:
    Given the persona "owner"

  @PAG-6
  Scenario: A cursor is bound to every argument of every tool that pages
    Then every cursor is refused when one argument it was issued for changes

  @PAG-6
  Scenario: A cursor is refused by every other tool that pages
    Then every cursor is refused by every other tool that pages

  @PRE-3
  Scenario: Every move the lifecycle forbids, out of every status, is refused without effect
    Then every move the order lifecycle forbids is refused and leaves the order as it was

  @AUTH-3
  Scenario: Every tool refuses every persona whose token lacks its scope
    Then every tool refuses every persona that the scope table excludes

  @AUTH-4
  Scenario: Every tool refuses every persona outside the restaurant's memberships
    Then every tool refuses every persona that the membership table excludes

  @AUTH-6
  Scenario: Every tool refuses every persona whose role is too low
    Then every tool refuses every persona that the role table excludes

  @AUTH-6
  Scenario: Every read is served to every persona the tables allow
    Then every persona is served every read the scope, membership and role tables allow

  @PRE-3
  Scenario: Every step forward of the lifecycle from accepted on is served, with its effect
    Then every step forward the order lifecycle allows from accepted on is served and shows in the order

  @PROTO-3
  Scenario: Every tool refuses each argument of the wrong type, missing, outside its enum or pattern, or unknown
    Then every input bound filed under PROTO-3 is refused past it and served on it

  @PAG-2
  Scenario: Every list refuses a limit past its bounds and serves one on them
    Then every input bound filed under PAG-2 is refused past it and served on it

  @PAG-8
  Scenario: The message page size is refused below its minimum and served on its bounds
    Then every input bound filed under PAG-8 is refused past it and served on it

  @LIM-1
  Scenario: Analytics metrics and date ranges are refused past their bounds, across leap days, month and year ends, and served on them
    Then every input bound filed under LIM-1 is refused past it and served on it

  @LIM-7
  Scenario: Every string argument is refused over its maximum length and served on it
    Then every input bound filed under LIM-7 is refused past it and served on it

  @IDEM-1
  Scenario: Every keyed write refuses an idempotency key missing, too short, too long or not a string
    Then every input bound filed under IDEM-1 is refused past it and served on it

  @PRE-1
  Scenario: Every write that changes a state refuses a call without expected_status
    Then every input bound filed under PRE-1 is refused past it and served on it

  @ABS-2
  Scenario: Every status outside the lifecycle's targets is refused
    Then every input bound filed under ABS-2 is refused past it and served on it

  @AUTH-6
  Scenario: Every state change is let through to its precondition for every persona the tables allow
    Then every persona gets to the precondition of every state change the tables allow

  @PROTO-2 @needs-http
  Scenario: Every answer to an argument past its bounds carries the request's own id, whatever its kind
    # Strings, 0, negative and large integers, spread over the rows: a server's own validation
    # builds these answers, and a loose one turns the id into a number or drops it.
    Then every tool answers every argument past its bounds with the request's own id, whatever its kind

  @LIM-5
  Scenario: Every page too big for 128 KiB is cut, whatever the filter and the persona, and loses nothing
    Then every page the dataset makes too big for 128 KiB is cut and marked truncated, under every filter and for every persona that reaches it, and its walk loses nothing

  @LIM-6
  Scenario: Every record too big for 128 KiB is refused as too large, to every persona that reaches it
    Then every record the dataset makes too big for 128 KiB is refused as too large to every persona that reaches it
