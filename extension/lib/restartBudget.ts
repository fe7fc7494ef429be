/**
 * Decides whether a crashed server may be restarted: at most `maxRestarts` within `windowMs`,
 * so a server that dies at start-up cannot spin in a crash loop.
 */
export class RestartBudget {
  private crashes: number[] = [];

  constructor(
    readonly maxRestarts = 3,
    readonly windowMs = 3 * 60 * 1000,
  ) {}

  /** Records a crash at `now` and returns whether a restart is still allowed. */
  recordCrash(now: number): boolean {
    this.crashes = this.crashes.filter((t) => now - t < this.windowMs);
    this.crashes.push(now);
    return this.crashes.length <= this.maxRestarts;
  }

  /** Forget past crashes (after a deliberate restart or an interpreter change). */
  reset(): void {
    this.crashes = [];
  }

  get recentCrashes(): number {
    return this.crashes.length;
  }
}
