Feature: Every rule on every protocol revision the server serves
  The run's other scenarios speak protocol revision 2025-06-18. These send the rows of the
  contract's tables over each other revision the server serves (2025-11-25 with a session,
  2026-07-28 without one), one row per tool and argument, judged as on 2025-06-18: a server
  whose checks or answers depend on the revision is caught under the rule it drops. A revision
  the server does not serve is shown by its answer to initialize (or to a stateless call): not
  applicable, never a pass.

  Background:
    Given the persona "owner"

  @AUTH-3
  Scenario Outline: Every tool refuses every persona whose token lacks its scope, over <revision>
    Given the rows are sent over protocol revision <revision>
    Then every tool refuses every persona that the scope table excludes

    Examples:
      | revision   |
      | 2025-11-25 |
      | 2026-07-28 |

  @AUTH-4
  Scenario Outline: Every tool refuses every persona outside the restaurant's memberships, over <revision>
    Given the rows are sent over protocol revision <revision>
    Then every tool refuses every persona that the membership table excludes

    Examples:
      | revision   |
      | 2025-11-25 |
      | 2026-07-28 |

  @AUTH-6
  Scenario Outline: Every tool refuses every persona whose role is too low, over <revision>
    Given the rows are sent over protocol revision <revision>
    Then every tool refuses every persona that the role table excludes

    Examples:
      | revision   |
      | 2025-11-25 |
      | 2026-07-28 |

  @AUTH-6
  Scenario Outline: Every read is served to every persona the tables allow, over <revision>
    Given the rows are sent over protocol revision <revision>
    Then every persona is served every read the scope, membership and role tables allow

    Examples:
      | revision   |
      | 2025-11-25 |
      | 2026-07-28 |

  @PROTO-3
  Scenario Outline: Every tool refuses each argument of the wrong type, missing, outside its enum or pattern, or unknown, over <revision>
    Given the rows are sent over protocol revision <revision>
    Then every input bound filed under PROTO-3 is refused past it and served on it

    Examples:
      | revision   |
      | 2025-11-25 |
      | 2026-07-28 |

  @PAG-2
  Scenario Outline: Every list refuses a limit past its bounds and serves one on them, over <revision>
    Given the rows are sent over protocol revision <revision>
    Then every input bound filed under PAG-2 is refused past it and served on it

    Examples:
      | revision   |
      | 2025-11-25 |
      | 2026-07-28 |

  @PAG-8
  Scenario Outline: The message page size is refused below its minimum and served on its bounds, over <revision>
    Given the rows are sent over protocol revision <revision>
    Then every input bound filed under PAG-8 is refused past it and served on it

    Examples:
      | revision   |
      | 2025-11-25 |
      | 2026-07-28 |

  @LIM-1
  Scenario Outline: Analytics metrics and date ranges are refused past their bounds and served on them, over <revision>
    Given the rows are sent over protocol revision <revision>
    Then every input bound filed under LIM-1 is refused past it and served on it

    Examples:
      | revision   |
      | 2025-11-25 |
      | 2026-07-28 |

  @LIM-7
  Scenario Outline: Every string argument is refused over its maximum length and served on it, over <revision>
    Given the rows are sent over protocol revision <revision>
    Then every input bound filed under LIM-7 is refused past it and served on it

    Examples:
      | revision   |
      | 2025-11-25 |
      | 2026-07-28 |

  @IDEM-1
  Scenario Outline: Every keyed write refuses an idempotency key missing, too short, too long or not a string, over <revision>
    Given the rows are sent over protocol revision <revision>
    Then every input bound filed under IDEM-1 is refused past it and served on it

    Examples:
      | revision   |
      | 2025-11-25 |
      | 2026-07-28 |

  @PRE-1
  Scenario Outline: Every write that changes a state refuses a call without expected_status, over <revision>
    Given the rows are sent over protocol revision <revision>
    Then every input bound filed under PRE-1 is refused past it and served on it

    Examples:
      | revision   |
      | 2025-11-25 |
      | 2026-07-28 |

  @ABS-2
  Scenario Outline: Every status outside the lifecycle's targets is refused, over <revision>
    Given the rows are sent over protocol revision <revision>
    Then every input bound filed under ABS-2 is refused past it and served on it

    Examples:
      | revision   |
      | 2025-11-25 |
      | 2026-07-28 |
