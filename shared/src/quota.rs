//! Quota policy: what an organisation may spend, what it has spent, and whether a request fits.
//!
//! An organisation's whole quota state is one small [`Ledger`] document. Every host applies the
//! same arithmetic to it inside its own atomic step (a SQLite write transaction, a Durable
//! Object, a conditional DynamoDB write on `rev`), so the decision is identical everywhere and
//! concurrency is the store's job, not this module's. A request reserves its maximum token cost
//! before any work and settles the real cost after; the reservation is a lease that expires, so
//! a host that dies mid-request never locks the budget forever.
//!
//! Index jobs are counted in the same ledger, in fixed one-hour windows
//! ([`Ledger::admit_index_job`]): a host counts a job at the moment it starts or queues one, so
//! a job merged into one already queued, or refused before any work, costs nothing.

use serde::{Deserialize, Serialize};

/// A lease lives this long unless settled (a request that takes longer is abandoned).
pub const LEASE_MS: u64 = 120_000;
const DAY_MS: u64 = 86_400_000;
const MINUTE_MS: u64 = 60_000;
const HOUR_MS: u64 = 3_600_000;

/// Limits of one organisation; `None` is unlimited.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Limits {
    /// Tokens per UTC day.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens_per_day: Option<u64>,
    /// Tokens per UTC calendar month.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens_per_month: Option<u64>,
    /// Requests per minute (fixed one-minute windows).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requests_per_minute: Option<u32>,
    /// Requests in flight at once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub concurrency: Option<u32>,
    /// Index jobs started or queued per hour (fixed one-hour windows): project creation,
    /// re-index requests, webhook pushes and jobs the server starts itself.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub index_jobs_per_hour: Option<u32>,
}

impl Limits {
    /// No limit a call can meet: no concurrent call can overrun one, so a call needs no
    /// reservation and can be booked when it settles ([`Ledger::book`]). The index-job limit
    /// does not count here: it is charged when a job starts, never held by a call.
    pub fn calls_unlimited(&self) -> bool {
        Self {
            index_jobs_per_hour: None,
            ..*self
        } == Self::default()
    }
}

/// Tokens spent in one period.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Period {
    /// Which period (days since the epoch, or `year * 12 + month - 1`).
    pub id: u64,
    /// Tokens settled in it.
    pub used: u64,
}

/// A reservation not yet settled.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Lease {
    /// Unique per request.
    pub id: String,
    /// Tokens held.
    pub tokens: u64,
    /// When it lapses, milliseconds since the epoch.
    pub expires_ms: u64,
    /// The day it counts against.
    pub day: u64,
    /// The month it counts against.
    pub month: u64,
}

/// The quota state of one organisation.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ledger {
    /// Bumped on every change: stores with compare-and-swap writes condition on it.
    pub rev: u64,
    /// The current day's spend.
    pub day: Period,
    /// The current month's spend.
    pub month: Period,
    /// The current minute (minutes since the epoch) and its requests.
    pub minute: Period,
    /// Leases in flight.
    pub leases: Vec<Lease>,
    /// Requests ever admitted.
    pub requests_total: u64,
    /// Tokens ever settled.
    pub tokens_total: u64,
    /// The current hour (hours since the epoch) and its index jobs; ledgers written before
    /// index jobs were counted read as none.
    #[serde(default)]
    pub hour: Period,
    /// Index jobs ever admitted.
    #[serde(default)]
    pub index_jobs_total: u64,
}

/// Which limit refused a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LimitKind {
    /// `tokens_per_day`.
    TokensPerDay,
    /// `tokens_per_month`.
    TokensPerMonth,
    /// `requests_per_minute`.
    RequestsPerMinute,
    /// `concurrency`.
    Concurrency,
    /// `index_jobs_per_hour`.
    IndexJobsPerHour,
}

impl LimitKind {
    /// The limit's name in requests and responses.
    pub fn name(self) -> &'static str {
        match self {
            LimitKind::TokensPerDay => "tokens_per_day",
            LimitKind::TokensPerMonth => "tokens_per_month",
            LimitKind::RequestsPerMinute => "requests_per_minute",
            LimitKind::Concurrency => "concurrency",
            LimitKind::IndexJobsPerHour => "index_jobs_per_hour",
        }
    }
}

/// A refused reservation: which limit, what remains, when to retry.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Refusal {
    /// The limit hit.
    pub limit: LimitKind,
    /// Its value.
    pub allowed: u64,
    /// What is left of it now (tokens or requests).
    pub remaining: u64,
    /// What the request asked for (tokens or 1 request).
    pub requested: u64,
    /// Seconds until retrying can succeed (the period's end, or a lease's expiry).
    pub retry_after_s: u64,
}

/// What is used and left, for `GET /v1/usage` and refusals.
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct UsageSummary {
    /// The limits.
    pub limits: Limits,
    /// Tokens settled today (UTC).
    pub tokens_today: u64,
    /// Tokens settled this month (UTC).
    pub tokens_this_month: u64,
    /// Tokens held by requests in flight.
    pub tokens_reserved: u64,
    /// Requests in flight.
    pub in_flight: u32,
    /// Requests in the current minute.
    pub requests_this_minute: u64,
    /// Tokens left today, when limited.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tokens_left_today: Option<u64>,
    /// Tokens left this month, when limited.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tokens_left_this_month: Option<u64>,
    /// Requests admitted ever.
    pub requests_total: u64,
    /// Tokens settled ever.
    pub tokens_total: u64,
    /// Index jobs started or queued in the current hour (UTC, fixed windows).
    #[serde(default)]
    pub index_jobs_this_hour: u64,
    /// Index jobs left this hour, when limited.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub index_jobs_left_this_hour: Option<u64>,
    /// Index jobs admitted ever.
    #[serde(default)]
    pub index_jobs_total: u64,
}

/// Days since the epoch of `ms`.
pub fn day_of(ms: u64) -> u64 {
    ms / DAY_MS
}

/// `year * 12 + month - 1` of `ms` (UTC), from the civil-from-days algorithm.
pub fn month_of(ms: u64) -> u64 {
    let (y, m, _) = civil(day_of(ms));
    y * 12 + m - 1
}

/// The UTC (year, month, day) of a day number.
fn civil(days: u64) -> (u64, u64, u64) {
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    ((if m <= 2 { y + 1 } else { y }) as u64, m as u64, d as u64)
}

/// Milliseconds from `ms` to the start of the next UTC month.
fn ms_to_next_month(ms: u64) -> u64 {
    let month = month_of(ms);
    let mut day = day_of(ms);
    while month_of(day * DAY_MS) == month {
        day += 1;
    }
    (day * DAY_MS).saturating_sub(ms)
}

impl Ledger {
    /// Rolls periods forward and drops lapsed leases.
    fn refresh(&mut self, now_ms: u64) {
        let (day, month, minute) = (day_of(now_ms), month_of(now_ms), now_ms / MINUTE_MS);
        let hour = now_ms / HOUR_MS;
        if self.hour.id != hour {
            self.hour = Period { id: hour, used: 0 };
        }
        if self.day.id != day {
            self.day = Period { id: day, used: 0 };
        }
        if self.month.id != month {
            self.month = Period { id: month, used: 0 };
        }
        if self.minute.id != minute {
            self.minute = Period {
                id: minute,
                used: 0,
            };
        }
        self.leases.retain(|l| l.expires_ms > now_ms);
    }

    fn reserved(&self, day: bool) -> u64 {
        let (d, m) = (self.day.id, self.month.id);
        self.leases
            .iter()
            .filter(|l| if day { l.day == d } else { l.month == m })
            .map(|l| l.tokens)
            .sum()
    }

    /// Holds `tokens` for request `id` if every limit allows it; the ledger changes only on
    /// success.
    pub fn reserve(
        &mut self,
        limits: &Limits,
        id: &str,
        tokens: u64,
        now_ms: u64,
    ) -> Result<Lease, Refusal> {
        self.refresh(now_ms);
        if let Some(max) = limits.concurrency
            && self.leases.len() as u64 >= u64::from(max)
        {
            return Err(Refusal {
                limit: LimitKind::Concurrency,
                allowed: u64::from(max),
                remaining: 0,
                requested: 1,
                // Requests settle in milliseconds; a second is the shortest Retry-After.
                retry_after_s: 1,
            });
        }
        if let Some(max) = limits.requests_per_minute
            && self.minute.used >= u64::from(max)
        {
            return Err(Refusal {
                limit: LimitKind::RequestsPerMinute,
                allowed: u64::from(max),
                remaining: 0,
                requested: 1,
                retry_after_s: (MINUTE_MS - now_ms % MINUTE_MS).div_ceil(1000),
            });
        }
        let checks = [
            (
                LimitKind::TokensPerDay,
                limits.tokens_per_day,
                self.day.used + self.reserved(true),
                DAY_MS - now_ms % DAY_MS,
            ),
            (
                LimitKind::TokensPerMonth,
                limits.tokens_per_month,
                self.month.used + self.reserved(false),
                ms_to_next_month(now_ms),
            ),
        ];
        for (limit, max, spent, until_reset) in checks {
            if let Some(max) = max
                && spent + tokens > max
            {
                let remaining = max.saturating_sub(spent);
                // With leases outstanding, retry when one lapses or settles; else at reset.
                let retry_ms = if self.leases.is_empty() || remaining == 0 && spent >= max {
                    until_reset
                } else {
                    1000
                };
                return Err(Refusal {
                    limit,
                    allowed: max,
                    remaining,
                    requested: tokens,
                    retry_after_s: retry_ms.div_ceil(1000).max(1),
                });
            }
        }
        let lease = Lease {
            id: id.to_string(),
            tokens,
            expires_ms: now_ms + LEASE_MS,
            day: self.day.id,
            month: self.month.id,
        };
        self.leases.push(lease.clone());
        self.minute.used += 1;
        self.requests_total += 1;
        self.rev += 1;
        Ok(lease)
    }

    /// Releases lease `id` and books `used` tokens (never more than were reserved). Settling
    /// twice, or a lapsed lease, changes nothing: retries are safe.
    pub fn settle(&mut self, id: &str, used: u64, now_ms: u64) -> bool {
        let Some(pos) = self.leases.iter().position(|l| l.id == id) else {
            return false;
        };
        let lease = self.leases.remove(pos);
        let used = used.min(lease.tokens);
        self.refresh(now_ms);
        if lease.day == self.day.id {
            self.day.used += used;
        }
        if lease.month == self.month.id {
            self.month.used += used;
        }
        self.tokens_total += used;
        self.rev += 1;
        true
    }

    /// Books a call of an org without limits that reserved nothing: the request and its
    /// `used` tokens counted as a reservation settled at once would count them (in the
    /// periods of `now_ms`). Hosts call it in the write that records the call, which saves
    /// such an org's calls the reservation's round trip to its ledger.
    pub fn book(&mut self, id: &str, used: u64, now_ms: u64) {
        // Without limits a reservation cannot be refused.
        if self.reserve(&Limits::default(), id, used, now_ms).is_ok() {
            self.settle(id, used, now_ms);
        }
    }

    /// Counts one index job against the hour of `now_ms` if `limits` allow it; the ledger
    /// changes only on success. Hosts call it when they start or queue a job, never for one
    /// merged into a job already queued.
    pub fn admit_index_job(&mut self, limits: &Limits, now_ms: u64) -> Result<(), Refusal> {
        self.refresh(now_ms);
        if let Some(max) = limits.index_jobs_per_hour
            && self.hour.used >= u64::from(max)
        {
            return Err(Refusal {
                limit: LimitKind::IndexJobsPerHour,
                allowed: u64::from(max),
                remaining: 0,
                requested: 1,
                retry_after_s: (HOUR_MS - now_ms % HOUR_MS).div_ceil(1000),
            });
        }
        self.hour.used += 1;
        self.index_jobs_total += 1;
        self.rev += 1;
        Ok(())
    }

    /// The usage as of `now_ms`.
    pub fn summary(&self, limits: &Limits, now_ms: u64) -> UsageSummary {
        let mut l = self.clone();
        l.refresh(now_ms);
        let reserved = l.reserved(true);
        UsageSummary {
            limits: *limits,
            tokens_today: l.day.used,
            tokens_this_month: l.month.used,
            tokens_reserved: reserved,
            in_flight: l.leases.len() as u32,
            requests_this_minute: l.minute.used,
            tokens_left_today: limits
                .tokens_per_day
                .map(|m| m.saturating_sub(l.day.used + reserved)),
            tokens_left_this_month: limits
                .tokens_per_month
                .map(|m| m.saturating_sub(l.month.used + l.reserved(false))),
            requests_total: l.requests_total,
            tokens_total: l.tokens_total,
            index_jobs_this_hour: l.hour.used,
            index_jobs_left_this_hour: limits
                .index_jobs_per_hour
                .map(|m| u64::from(m).saturating_sub(l.hour.used)),
            index_jobs_total: l.index_jobs_total,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const NOW: u64 = 1_795_000_000_000; // 2026-11-18

    #[test]
    fn months_follow_the_calendar() {
        // 2026-11-18 → November 2026.
        assert_eq!(month_of(NOW), 2026 * 12 + 10);
        let to_dec = ms_to_next_month(NOW);
        assert_eq!(month_of(NOW + to_dec), 2026 * 12 + 11);
        assert_eq!(month_of(NOW + to_dec - 1), 2026 * 12 + 10);
        assert_eq!(civil(0), (1970, 1, 1));
        assert_eq!(civil(day_of(951_782_400_000)), (2000, 2, 29));
    }

    #[test]
    fn day_budget_admits_exactly_what_fits() {
        let limits = Limits {
            tokens_per_day: Some(1000),
            ..Limits::default()
        };
        let mut l = Ledger::default();
        for i in 0..4 {
            l.reserve(&limits, &format!("r{i}"), 250, NOW).unwrap();
        }
        let refused = l.reserve(&limits, "r4", 1, NOW).unwrap_err();
        assert_eq!(refused.limit, LimitKind::TokensPerDay);
        assert_eq!(refused.remaining, 0);
        // Settling below the reservation frees the difference.
        assert!(l.settle("r0", 100, NOW));
        assert!(!l.settle("r0", 100, NOW), "settling twice is a no-op");
        let lease = l.reserve(&limits, "r5", 150, NOW).unwrap();
        assert_eq!(lease.tokens, 150);
        assert_eq!(l.summary(&limits, NOW).tokens_left_today, Some(0));
        // The next day starts afresh.
        assert!(l.reserve(&limits, "r6", 1000, NOW + DAY_MS).is_ok());
    }

    #[test]
    fn booking_counts_what_a_reservation_settled_at_once_counts() {
        let mut booked = Ledger::default();
        let mut leased = Ledger::default();
        for (i, (used, at)) in [(120, NOW), (0, NOW + 5), (900, NOW + DAY_MS)]
            .into_iter()
            .enumerate()
        {
            let id = format!("c{i}");
            booked.book(&id, used, at);
            leased.reserve(&Limits::default(), &id, 4000, at).unwrap();
            assert!(leased.settle(&id, used, at));
            assert_eq!(booked, leased, "after call {i}");
        }
        assert!(booked.leases.is_empty());
        assert_eq!(booked.requests_total, 3);
        assert_eq!(booked.tokens_total, 1020);
        assert_eq!(booked.day.used, 900);
        assert!(Limits::default().calls_unlimited());
        let limited = Limits {
            concurrency: Some(4),
            ..Limits::default()
        };
        assert!(!limited.calls_unlimited());
        // A limit on index jobs holds no call.
        let jobs_only = Limits {
            index_jobs_per_hour: Some(3),
            ..Limits::default()
        };
        assert!(jobs_only.calls_unlimited());
    }

    #[test]
    fn rate_and_concurrency_limits() {
        let limits = Limits {
            requests_per_minute: Some(2),
            concurrency: Some(1),
            ..Limits::default()
        };
        let mut l = Ledger::default();
        l.reserve(&limits, "a", 0, NOW).unwrap();
        let e = l.reserve(&limits, "b", 0, NOW).unwrap_err();
        assert_eq!(e.limit, LimitKind::Concurrency);
        l.settle("a", 0, NOW);
        l.reserve(&limits, "b", 0, NOW).unwrap();
        l.settle("b", 0, NOW);
        let e = l.reserve(&limits, "c", 0, NOW).unwrap_err();
        assert_eq!(e.limit, LimitKind::RequestsPerMinute);
        assert!(e.retry_after_s >= 1 && e.retry_after_s <= 60);
        // Lapsed leases stop counting.
        let mut l = Ledger::default();
        l.reserve(&limits, "x", 0, NOW).unwrap();
        assert!(l.reserve(&limits, "y", 0, NOW + LEASE_MS + 1).is_ok());
    }

    #[test]
    fn index_jobs_per_hour_in_fixed_windows() {
        let limits = Limits {
            index_jobs_per_hour: Some(2),
            ..Limits::default()
        };
        let mut l = Ledger::default();
        l.admit_index_job(&limits, NOW).unwrap();
        l.admit_index_job(&limits, NOW + 1).unwrap();
        let before = l.clone();
        let e = l.admit_index_job(&limits, NOW + 2).unwrap_err();
        assert_eq!(e.limit, LimitKind::IndexJobsPerHour);
        assert_eq!(e.limit.name(), "index_jobs_per_hour");
        assert_eq!((e.allowed, e.remaining, e.requested), (2, 0, 1));
        // Retry when the hour ends, never later.
        let hour_end = (NOW / HOUR_MS + 1) * HOUR_MS;
        assert_eq!(e.retry_after_s, (hour_end - NOW - 2).div_ceil(1000));
        assert!(e.retry_after_s >= 1 && e.retry_after_s <= 3600);
        assert_eq!(
            (l.rev, l.index_jobs_total),
            (before.rev, 2),
            "a refusal counts nothing"
        );
        let s = l.summary(&limits, NOW + 3);
        assert_eq!(s.index_jobs_this_hour, 2);
        assert_eq!(s.index_jobs_left_this_hour, Some(0));
        // The next window starts afresh, and the total carries on.
        l.admit_index_job(&limits, hour_end).unwrap();
        let s = l.summary(&limits, hour_end);
        assert_eq!((s.index_jobs_this_hour, s.index_jobs_total), (1, 3));
        assert_eq!(s.index_jobs_left_this_hour, Some(1));
        // Without a limit jobs are counted, never refused.
        let mut free = Ledger::default();
        for i in 0..100 {
            free.admit_index_job(&Limits::default(), NOW + i).unwrap();
        }
        let s = free.summary(&Limits::default(), NOW + 100);
        assert_eq!(
            (s.index_jobs_this_hour, s.index_jobs_left_this_hour),
            (100, None)
        );
        // Index jobs and calls are counted apart.
        let both = Limits {
            index_jobs_per_hour: Some(1),
            requests_per_minute: Some(1),
            ..Limits::default()
        };
        let mut l = Ledger::default();
        l.admit_index_job(&both, NOW).unwrap();
        l.reserve(&both, "call", 0, NOW).unwrap();
        assert!(l.admit_index_job(&both, NOW).is_err());
        assert_eq!(l.requests_total, 1);
    }

    #[test]
    fn ledgers_and_limits_from_before_index_jobs_still_parse() {
        let old = r#"{"rev":7,"day":{"id":20775,"used":10},"month":{"id":24322,"used":10},
            "minute":{"id":1,"used":1},"leases":[],"requests_total":3,"tokens_total":10}"#;
        let mut l: Ledger = serde_json::from_str(old).unwrap();
        assert_eq!((l.hour.used, l.index_jobs_total), (0, 0));
        let limits: Limits = serde_json::from_str(r#"{"requests_per_minute":5}"#).unwrap();
        assert_eq!(limits.index_jobs_per_hour, None);
        l.admit_index_job(&limits, NOW).unwrap();
        assert_eq!(l.rev, 8);
        let set: Limits = serde_json::from_str(r#"{"index_jobs_per_hour":4}"#).unwrap();
        assert_eq!(set.index_jobs_per_hour, Some(4));
        assert_eq!(
            serde_json::to_string(&Limits::default()).unwrap(),
            "{}",
            "an unset limit is not written"
        );
    }

    proptest! {
        /// Whatever the interleaving of reservations and settlements, settled plus reserved
        /// tokens never exceed the day's limit.
        #[test]
        fn never_overspends(ops in proptest::collection::vec((0u64..400, any::<bool>(), 0u64..500), 1..80)) {
            let limits = Limits { tokens_per_day: Some(1000), tokens_per_month: Some(1500), ..Limits::default() };
            let mut l = Ledger::default();
            let mut open: Vec<String> = Vec::new();
            for (n, (tokens, settle, used)) in ops.into_iter().enumerate() {
                if settle && !open.is_empty() {
                    let id = open.remove(0);
                    l.settle(&id, used, NOW);
                } else if l.reserve(&limits, &n.to_string(), tokens, NOW).is_ok() {
                    open.push(n.to_string());
                }
                let s = l.summary(&limits, NOW);
                prop_assert!(s.tokens_today + s.tokens_reserved <= 1000);
                prop_assert!(s.tokens_this_month <= 1500);
            }
        }
    }
}
