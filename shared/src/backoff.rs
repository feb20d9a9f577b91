//! When to try a remote call again, and after how long: capped exponential backoff with full
//! jitter (a delay drawn uniformly from zero to the exponential bound), so that many callers
//! throttled at once do not come back at once. Pure: the caller brings the randomness and the
//! clock.

/// How often and how patiently to retry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Backoff {
    /// The bound of the first retry's delay, in milliseconds.
    pub base_ms: u64,
    /// No delay is longer than this.
    pub cap_ms: u64,
    /// Tries in all, the first included (at least 1).
    pub max_attempts: u32,
}

impl Backoff {
    /// For calls a request waits on (the edge's S3 and DynamoDB reads): five tries within
    /// about two seconds at worst, so a throttled request still answers inside a Worker's time.
    pub const REQUEST: Backoff = Backoff {
        base_ms: 50,
        cap_ms: 1_000,
        max_attempts: 5,
    };

    /// For batch work (the indexer's optimistic updates and publishes), which can wait longer.
    pub const BATCH: Backoff = Backoff {
        base_ms: 25,
        cap_ms: 5_000,
        max_attempts: 50,
    };

    /// The delay before try number `attempt + 1` (after `attempt` failures, counting from 1),
    /// from a uniformly random `random`; `None` once the tries are spent.
    pub fn delay_ms(&self, attempt: u32, random: u64) -> Option<u64> {
        if attempt == 0 || attempt >= self.max_attempts.max(1) {
            return None;
        }
        let bound = self
            .base_ms
            .saturating_mul(1u64 << (attempt - 1).min(32))
            .min(self.cap_ms);
        Some(random % (bound + 1))
    }
}

/// Whether an AWS answer is worth trying again: throttling, a server fault, a lost race
/// between transactions. A failed condition, a missing item or a bad request is an answer,
/// not an accident, and is never retried.
pub fn retryable(status: u16, error_type: Option<&str>) -> bool {
    match status {
        429 | 500..=599 => true,
        400 => matches!(
            error_type,
            Some(
                "ThrottlingException"
                    | "Throttling"
                    | "ProvisionedThroughputExceededException"
                    | "RequestLimitExceeded"
                    | "TransactionConflictException"
                    | "TransactionInProgressException"
                    | "LimitExceededException"
                    | "SlowDown"
                    | "RequestTimeout"
            )
        ),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn throttling_and_faults_retry_answers_do_not() {
        assert!(retryable(503, None));
        assert!(retryable(500, None));
        assert!(retryable(429, None));
        assert!(retryable(400, Some("ThrottlingException")));
        assert!(retryable(
            400,
            Some("ProvisionedThroughputExceededException")
        ));
        assert!(!retryable(400, Some("ConditionalCheckFailedException")));
        assert!(!retryable(400, Some("ValidationException")));
        assert!(!retryable(404, None));
        assert!(!retryable(200, None));
    }

    #[test]
    fn tries_end_and_the_first_try_has_no_delay() {
        let b = Backoff::REQUEST;
        assert_eq!(b.delay_ms(0, 7), None);
        assert!(b.delay_ms(1, 7).is_some());
        assert!(b.delay_ms(4, 7).is_some());
        assert_eq!(b.delay_ms(5, 7), None);
    }

    proptest! {
        #[test]
        fn delays_stay_under_the_exponential_bound_and_the_cap(
            base in 1u64..1000, cap in 1u64..100_000, attempt in 1u32..200, random: u64
        ) {
            let b = Backoff { base_ms: base, cap_ms: cap, max_attempts: 1000 };
            let d = b.delay_ms(attempt, random).unwrap();
            prop_assert!(d <= cap);
            prop_assert!(d <= base.saturating_mul(1u64 << (attempt - 1).min(32)));
        }
    }
}
