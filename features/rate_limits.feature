Feature: Rate limits
  Each read tool takes 1000 calls a minute and each write tool 500, per OAuth client, user and
  tool. The seed fixes the rate, not the window: a sliding window, calendar minutes, a token
  bucket and the reference's window (opened by the pair's first call, lasting 60 s) all honour
  it, whatever second the run starts. So a burst goes on until the server refuses, and passes when
  the first 1000 (500) calls were served and a refusal came within 2 × 1000 + 1000 × seconds / 60
  calls (calendar minutes let twice the rate through across a minute's end; a bucket refills
  during the burst). That the very next call is refused is the reference's window (full level).
  A limited pair slows no one else: that is checked once the pair is refused.
  A burst's window would keep the next scenario on its pair waiting for up to a minute, so this
  file runs last and each burst starts once every scenario using its pair has finished: with a
  control API the clock moves past their windows; without one the run's earlier calls of the tool
  on the pair count in the verdict, as the first calls of the burst (suite/src/rate_verdict.rs).
  A burst that cannot be judged with what the run knows (refused before 1000 (500) calls could
  have been counted, as when an earlier run left its window full, or not exactly the
  reference's window with earlier calls in it) runs again a whole minute after its last answer,
  on a window nothing can be in, and that burst alone is the verdict.

  @LIM-2 @LIM-3
  Scenario: A read tool serves 1000 calls a minute, then refuses; nobody else is slowed
    Given the persona "owner_second_client"
    When they get the busy restaurant again and again, until they are refused
    Then the first 1000 calls were all served, and a refusal came in time
    And the refusal is a rate limit
    When they list the orders of the busy restaurant
    Then the call succeeds
    Given the persona "owner"
    When they get the busy restaurant
    Then the call succeeds
    Given the persona "manager"
    When they get the busy restaurant
    Then the call succeeds

  # Every kind of tool has its rate: analytics is read at the read rate. (The other tenant's owner
  # on their own restaurant: a pair no other burst's scenario uses, so the bursts run side by side.)
  @LIM-2
  Scenario: The analytics tool serves 1000 calls a minute, then refuses
    Given the persona "outsider"
    When they ask for the analytics of the foreign restaurant again and again, until they are refused
    Then the first 1000 calls were all served, and a refusal came in time
    And the refusal is a rate limit

  # Replays of one keyed message are successful calls that change nothing: a run adds one message
  # (with the scenario's canary) and the dataset stays re-runnable.
  @LIM-2
  Scenario: A write tool serves 500 calls a minute, then refuses
    Given the persona "staff"
    When they send the message "Rate check CANARY" in the long conversation with the key "lim2-CANARY", then again and again, until they are refused
    Then the first 500 calls were all served, and a refusal came in time
    And the refusal is a rate limit

  @LIM-2 @AUTH-8 @ext-failed-calls-count
  Scenario: Refused writes count against the limit too, which is checked before the role
    Given the persona "viewer"
    When they ask to set the busy restaurant to "closed" again and again, until they are refused
    Then the first 500 calls were all answered, and a refusal came in time
    And the refusal is a rate limit
