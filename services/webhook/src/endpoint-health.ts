/**
 * Endpoint health (Svix's rule): a tenant's endpoint whose every attempt failed for
 * WEBHOOK_DISABLE_AFTER_MS (default 5 days) is disabled: its pending deliveries end failed, and
 * no new delivery is made to it until an operator enables it again. Plain functions over the
 * attempts of one written batch; the store applies them in the batch's transaction.
 */
export const DEFAULT_DISABLE_AFTER_MS = 5 * 24 * 3_600_000;

/** One written attempt, as the health rule sees it. */
export interface AttemptOutcome {
  tenant_id: string;
  environment: string;
  url: string;
  delivered: boolean;
  at: Date;
}

/** What a batch does to one target URL's failure streak. */
export interface StreakChange {
  tenantId: string;
  environment: string;
  url: string;
  /** An attempt succeeded in the batch: the streak restarts at firstFailure (none if null). */
  reset: boolean;
  /** The first failure after the batch's last success (or in the batch); null when none. */
  firstFailure: Date | null;
  /** The batch's latest attempt: the time the rule is judged at. */
  at: Date;
}

/** Groups a batch's attempts by target (tenant, environment, URL) into streak changes. */
export function streakChanges(outcomes: readonly AttemptOutcome[]): StreakChange[] {
  const by = new Map<string, AttemptOutcome[]>();
  for (const o of outcomes) {
    const key = JSON.stringify([o.tenant_id, o.environment, o.url]);
    by.set(key, [...(by.get(key) ?? []), o]);
  }
  return [...by.values()].map((list) => {
    const lastOk = Math.max(-Infinity, ...list.filter((o) => o.delivered).map((o) => o.at.getTime()));
    const failures = list.filter((o) => !o.delivered && o.at.getTime() > lastOk).map((o) => o.at.getTime());
    return {
      tenantId: list[0].tenant_id,
      environment: list[0].environment,
      url: list[0].url,
      reset: lastOk > -Infinity,
      firstFailure: failures.length ? new Date(Math.min(...failures)) : null,
      at: new Date(Math.max(...list.map((o) => o.at.getTime()))),
    };
  });
}

/** Whether a streak that began at `failingSince` disables its endpoint at `at`. */
export const shouldDisable = (failingSince: Date | null, at: Date, disableAfterMs: number): boolean =>
  failingSince !== null && at.getTime() - failingSince.getTime() >= disableAfterMs;

/** The reason recorded on the endpoint and in its deliveries' logs. */
export function disabledReason(failingSince: Date, disableAfterMs: number): string {
  const hours = disableAfterMs / 3_600_000;
  const span = hours >= 24 && hours % 24 === 0 ? `${hours / 24} days` : `${Math.round(disableAfterMs / 1000)} s`;
  return `every attempt failed since ${failingSince.toISOString()} (${span}): the endpoint is disabled until an operator enables it`;
}
