/**
 * Preload (`bun --preload ./test/support/skew-clock.ts …`) that makes this process's clock run
 * SMITHERS_TEST_CLOCK_SKEW_MS ahead (negative: behind), as a host whose clock is off would: for
 * tests that what two hosts agree on (leases, staleness) does not depend on their clocks.
 */
const skewMs = Number(process.env.SMITHERS_TEST_CLOCK_SKEW_MS ?? 0);
const realNow = Date.now;
Date.now = () => realNow() + skewMs;
