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
