// One shard's Lease through the loss of its holder, as the runtime's leader election runs it
// (packages/runtime/src/leader-election.ts, client-go's algorithm): the holder renews by compare-and-swap
// every retryPeriod and steps down when it cannot renew within renewDeadline (a renewal that comes late
// because the process did not run still tries once); the other replicas read the Lease every
// retryPeriod × [1, 2.2) and take it when its record has not changed for leaseDuration of THEIR clock.
// While a replica believes it holds the shard it writes (the steps of the shard's Operations); the
// simulation records at the API server who wrote when, and so finds every write that landed after
// another replica had taken the shard: a double run. Replica clocks run at slightly different rates;
// requests take time on the wire; a paused process (GC, a frozen VM, a partition) runs nothing and sends
// nothing until it wakes, and what it had in hand goes out then. Pure: a run is a function of its seed.

import { EventQueue } from './events.ts';
import { between, seeded } from './random.ts';

/**
 * How a holder is kept from acting once someone else may hold the shard:
 * - `none`: it writes while it believes it leads (until a renewal fails or times out);
 * - `renew-deadline`: before each write it checks its own clock: less than renewDeadline since the last
 *   renewal it sent that succeeded, else it holds the write back;
 * - `token`: `renew-deadline`, and every write carries the Lease term it was made under, which the API
 *   server refuses once a later term has begun (in Kubernetes: a resourceVersion precondition, see the ADR).
 */
export type Fencing = 'none' | 'renew-deadline' | 'token';
export const FENCINGS: readonly Fencing[] = ['none', 'renew-deadline', 'token'];

/**
 * What happens to the holder: it crashes (and comes back later as a new process), pauses, shuts down
 * gracefully, or keeps running while its Lease renewals fail (an overloaded API server times them out)
 * and its other writes still land — the case where only its own clock tells it to stop.
 */
export type Loss = 'crash' | 'pause' | 'release' | 'renewals-fail';
export const LOSSES: readonly Loss[] = ['crash', 'pause', 'release', 'renewals-fail'];

export interface HandoverConfig {
  replicas: number;
  leaseDurationMs: number;
  renewDeadlineMs: number;
  retryPeriodMs: number;
  /** Each replica's clock runs at 1 ± up to this rate error (0.01 = 1 %). */
  clockDrift: number;
  /** One way, API server and back is twice this; uniform in [min, max). */
  latencyMs: readonly [number, number];
  /** From deciding to write until the request leaves the process (serialising, the connection pool). */
  sendDelayMs: readonly [number, number];
  /** Mean time between two writes of the holder while it acts (the shard's Operation steps). */
  writeEveryMs: number;
  /** How long a pause (or a spell of failing renewals) lasts, uniform. */
  pauseMs: readonly [number, number];
  /** After a crash, the replica is back as a new candidate after this long, uniform. */
  restartMs: readonly [number, number];
  fencing: Fencing;
  loss: Loss;
}

export const CLIENT_GO_DEFAULTS: HandoverConfig = {
  replicas: 3,
  leaseDurationMs: 15_000,
  renewDeadlineMs: 10_000,
  retryPeriodMs: 2_000,
  clockDrift: 0.01,
  latencyMs: [1, 20],
  sendDelayMs: [0, 5],
  writeEveryMs: 100,
  pauseMs: [1_000, 45_000],
  restartMs: [5_000, 60_000],
  fencing: 'renew-deadline',
  loss: 'pause',
};

export interface HandoverResult {
  /** When the loss happened (virtual ms). */
  lossAt: number;
  /** From the loss until another replica's acquisition landed; undefined when nobody took over. */
  handoverMs: number | undefined;
  /** From the old holder's last successful renewal landing until the new holder's acquisition landing. */
  sinceLastRenewalMs: number | undefined;
  /** Writes that landed from a replica after another replica's later term had begun. */
  staleWrites: number;
  /** Writes the API server refused because their term was over (token fencing only). */
  refusedWrites: number;
  /** How many times the shard changed hands. */
  transitions: number;
}

interface Replica {
  id: number;
  rate: number;
  /** Bumped by a crash: events of an earlier life are dropped. */
  life: number;
  up: boolean;
  pausedUntil: number;
  /** Until then (virtual ms) the API server answers this replica's Lease writes with a timeout. */
  renewalsFailUntil: number;
  leading: boolean;
  /** The term this replica believes it leads (valid while `leading`). */
  term: number;
  /** Local time the last successful renewal (or the acquisition) was sent. */
  lastRenewSent: number;
  /** The Lease version this replica last wrote or read. */
  knownVersion: number;
  /** Local time this replica saw the Lease record change last. */
  observedAt: number;
  observedVersion: number;
}

interface Lease {
  holder: number;
  version: number;
  /** Bumped each time another replica acquires the Lease (leaseTransitions). */
  term: number;
}

const NOBODY = -1;
const JITTER = 1.2;

/** One seeded run: replica 0 holds the shard at time 0 and is lost at a random time in [20 s, 40 s). */
export function simulateHandover(config: HandoverConfig, seed: number): HandoverResult {
  const random = seeded(seed);
  // The holder's writes draw from their own stream, so the Lease's timeline of a seed is the same
  // whichever fencing holds the writes back, and the fencings are compared on the same runs.
  const writeRandom = seeded(seed ^ 0x5bd1e995);
  const q = new EventQueue();
  const cfg = config;
  const lease: Lease = { holder: 0, version: 1, term: 1 };
  const replicas: Replica[] = Array.from({ length: cfg.replicas }, (_, id) => ({
    id,
    rate: 1 + between(random, -cfg.clockDrift, cfg.clockDrift),
    life: 0,
    up: true,
    pausedUntil: 0,
    renewalsFailUntil: 0,
    leading: id === 0,
    term: id === 0 ? 1 : 0,
    lastRenewSent: 0,
    knownVersion: 1,
    observedAt: 0,
    observedVersion: 1,
  }));
  const local = (r: Replica) => q.now * r.rate;
  const latency = (rnd = random) => between(rnd, cfg.latencyMs[0], cfg.latencyMs[1]);
  const lossAt = between(random, 20_000, 40_000);
  let lastRenewalLanded = 0;
  let takenOverAt: number | undefined;
  let sinceLastRenewalMs: number | undefined;
  let staleWrites = 0;
  let refusedWrites = 0;
  let transitions = 0;

  /** Runs `fn` on replica `r` after `localMs` of its clock; deferred while paused, dropped after a crash. */
  const on = (r: Replica, localMs: number, fn: () => void) => {
    const life = r.life;
    const fire = () => {
      if (!r.up || r.life !== life) return;
      if (q.now < r.pausedUntil) {
        q.schedule(r.pausedUntil, fire);
        return;
      }
      fn();
    };
    q.schedule(q.now + localMs / r.rate, fire);
  };
  /** A request: leaves `r` after the send delay (a pause holds it), lands after the latency, answers back. */
  const request = (r: Replica, land: () => void, answer?: () => void, rnd = random) => {
    on(r, between(rnd, cfg.sendDelayMs[0], cfg.sendDelayMs[1]), () => {
      q.schedule(q.now + latency(rnd), () => {
        land();
        if (answer) q.schedule(q.now + latency(rnd), () => on(r, 0, answer));
      });
    });
  };

  const stepDown = (r: Replica) => {
    r.leading = false;
    campaign(r);
  };

  const act = (r: Replica) => {
    if (!r.leading) return;
    const mayWrite = cfg.fencing === 'none' || local(r) - r.lastRenewSent < cfg.renewDeadlineMs;
    if (mayWrite) {
      const term = r.term;
      request(
        r,
        () => {
          const later = lease.term > term;
          if (later && cfg.fencing === 'token') refusedWrites++;
          else if (later) staleWrites++;
        },
        undefined,
        writeRandom,
      );
    }
    on(r, -cfg.writeEveryMs * Math.log(1 - writeRandom()), () => act(r));
  };

  const renewLoop = (r: Replica) => {
    const planned = local(r) + cfg.retryPeriodMs;
    on(r, cfg.retryPeriodMs, () => {
      if (!r.leading) return;
      const started = local(r);
      let deadline = r.lastRenewSent + cfg.renewDeadlineMs;
      // As the runtime does: a timer that fires late because the process did not run tries once more.
      if (started >= deadline && started - planned >= cfg.retryPeriodMs)
        deadline = started + cfg.retryPeriodMs;
      if (started >= deadline) return stepDown(r);
      const expect = r.knownVersion;
      let outcome: 'ok' | 'held' | 'failed' = 'failed';
      request(
        r,
        () => {
          if (q.now < r.renewalsFailUntil) return;
          if (lease.version === expect && lease.holder === r.id) {
            lease.version++;
            outcome = 'ok';
            lastRenewalLanded = q.now;
          } else outcome = 'held';
        },
        () => {
          if (!r.leading) return;
          // As the runtime: an answer after the deadline counts as failed; another holder ends the term at
          // once; a failed attempt is retried until the deadline passes.
          if (outcome === 'ok' && local(r) < deadline) {
            r.lastRenewSent = started;
            r.knownVersion = expect + 1;
            renewLoop(r);
          } else if (outcome === 'held' || local(r) >= deadline) stepDown(r);
          else renewLoop(r);
        },
      );
    });
  };

  const lead = (r: Replica, term: number) => {
    r.leading = true;
    r.term = term;
    act(r);
    renewLoop(r);
  };

  const campaign = (r: Replica) => {
    on(r, cfg.retryPeriodMs * (1 + JITTER * random()), () => {
      if (r.leading) return;
      let seen: { holder: number; version: number } = { holder: NOBODY, version: 0 };
      request(
        r,
        () => {
          seen = { holder: lease.holder, version: lease.version };
        },
        () => {
          if (seen.version !== r.observedVersion) {
            r.observedVersion = seen.version;
            r.observedAt = local(r);
          }
          const expired = local(r) >= r.observedAt + cfg.leaseDurationMs;
          if (seen.holder !== NOBODY && seen.holder !== r.id && !expired) return campaign(r);
          const sent = local(r);
          let won = false;
          let term = 0;
          request(
            r,
            () => {
              if (lease.version !== seen.version || q.now < r.renewalsFailUntil) return;
              won = true;
              lease.version++;
              if (lease.holder !== r.id) {
                lease.term++;
                transitions++;
                if (takenOverAt === undefined && q.now >= lossAt) {
                  takenOverAt = q.now;
                  sinceLastRenewalMs = q.now - lastRenewalLanded;
                }
              }
              lease.holder = r.id;
              term = lease.term;
            },
            () => {
              if (!won) return campaign(r);
              r.lastRenewSent = sent;
              r.knownVersion = seen.version + 1;
              r.observedVersion = r.knownVersion;
              lead(r, term);
            },
          );
        },
      );
    });
  };

  const holder = replicas[0]!;
  lead(holder, 1);
  for (const r of replicas.slice(1)) campaign(r);

  q.schedule(lossAt, () => {
    if (cfg.loss === 'crash') {
      holder.up = false;
      holder.leading = false;
      q.schedule(q.now + between(random, cfg.restartMs[0], cfg.restartMs[1]), () => {
        // A new process: a new identity (`<pod>_<uuid>`), so it cannot mistake the old record for its own.
        Object.assign(holder, { id: cfg.replicas, up: true, life: holder.life + 1, observedVersion: 0 });
        campaign(holder);
      });
    } else if (cfg.loss === 'pause') {
      holder.pausedUntil = q.now + between(random, cfg.pauseMs[0], cfg.pauseMs[1]);
    } else if (cfg.loss === 'renewals-fail') {
      holder.renewalsFailUntil = q.now + between(random, cfg.pauseMs[0], cfg.pauseMs[1]);
    } else {
      // Graceful: the workers stop and drain (writes in hand go out and are answered), then the Lease
      // is released and the replica is gone.
      holder.leading = false;
      on(holder, cfg.sendDelayMs[1] + 2 * cfg.latencyMs[1], () => {
        request(holder, () => {
          if (lease.holder === holder.id) {
            lease.holder = NOBODY;
            lease.version++;
          }
        });
      });
    }
  });

  q.runUntil(lossAt + 120_000);
  return {
    lossAt,
    handoverMs: takenOverAt === undefined ? undefined : takenOverAt - lossAt,
    sinceLastRenewalMs,
    staleWrites,
    refusedWrites,
    transitions,
  };
}
