import { describe, expect, it } from 'vitest';
import {
  anInput,
  aTerminatedPod,
  jobCondition,
  materialized,
  withStatus,
} from '../../../test/support/builders/engines.ts';
import { jobAdapter, RUN_CONTAINER } from './job.ts';
import {
  ANY_CONTAINER,
  decisiveJob,
  describeOutcomes,
  jobFinished,
  LOG_TAIL_CHARS,
  LOG_TAIL_LINES,
  logTail,
  podOutcome,
} from './runner-pod.ts';

const runCommand = () =>
  anInput({ type: 'RunCommand', engine: 'job', parameters: { command: ['sh', '-c', 'echo hello'] } });
const job = (status: Record<string, unknown>) => {
  const [child] = materialized(jobAdapter.materialize(runCommand()));
  if (!child) throw new Error('no child');
  return withStatus(child, status);
};

describe('pod outcomes of a finished Job', () => {
  it('reads the terminated state of the named container, current or last', () => {
    expect(podOutcome(aTerminatedPod('p', 'run', 3), 'run')).toEqual({
      pod: 'p',
      container: 'run',
      exitCode: 3,
      reason: 'Error',
    });
    const restarted = {
      metadata: { name: 'q' },
      status: {
        containerStatuses: [
          { name: 'run', state: { running: {} }, lastState: { terminated: { exitCode: 1 } } },
        ],
      },
    };
    expect(podOutcome(restarted, 'run')).toEqual({ pod: 'q', container: 'run', exitCode: 1 });
    expect(podOutcome(aTerminatedPod('p', 'other', 3), 'run')).toBeUndefined();
    expect(podOutcome({ metadata: { name: 'r' } }, 'run')).toBeUndefined();
  });

  it('keeps the last lines of a log, without terminal escapes or control characters, bounded', () => {
    expect(logTail('one\n\ntwo\r\n\x1b[31mthree\x1b[0m\n')).toBe('one | two | three');
    const many = Array.from({ length: 20 }, (_, i) => `line ${i}`).join('\n');
    expect(logTail(many).split(' | ')).toEqual(
      Array.from({ length: LOG_TAIL_LINES }, (_, i) => `line ${15 + i}`),
    );
    const long = logTail(`${'x'.repeat(2000)}END`);
    expect(long.length).toBe(LOG_TAIL_CHARS);
    expect(long.endsWith('END')).toBe(true);
    expect(logTail('\n\n')).toBe('');
  });

  it('describes the last pod: exit code, reason, log tail', () => {
    expect(describeOutcomes(undefined)).toBe('');
    expect(
      describeOutcomes([{ pod: 'p', container: 'run', exitCode: 3, reason: 'Error', logTail: 'boom' }]),
    ).toBe('container run of pod p exited with code 3 (Error); last log lines: boom');
    expect(describeOutcomes([{ pod: 'p', container: 'run' }])).toBe('container run of pod p ended');
  });

  it('ANY_CONTAINER: the container that exited non-zero, else the first that terminated', () => {
    const pod = {
      metadata: { name: 'h' },
      status: {
        containerStatuses: [
          { name: 'sidecar', state: { terminated: { exitCode: 0, reason: 'Completed' } } },
          { name: 'migrate', state: { terminated: { exitCode: 4, reason: 'Error' } } },
          { name: 'waiting', state: { waiting: {} } },
        ],
      },
    };
    expect(podOutcome(pod, ANY_CONTAINER)).toEqual({
      pod: 'h',
      container: 'migrate',
      exitCode: 4,
      reason: 'Error',
    });
    expect(podOutcome(aTerminatedPod('p', 'only', 0), ANY_CONTAINER)).toMatchObject({ container: 'only' });
    expect(podOutcome({ metadata: { name: 'r' } }, ANY_CONTAINER)).toBeUndefined();
  });

  it('the deciding Job of several: the first that failed, else the last once all finished, else none', () => {
    const done = job({ conditions: [jobCondition('Complete')] });
    const named = (n: string, j = done) => ({ ...j, metadata: { ...j.metadata, name: n } });
    const broke = named('b', job({ conditions: [jobCondition('FailureTarget')] }));
    const busy = named('c', job({ active: 1 }));
    expect(decisiveJob([named('a'), broke, busy])?.metadata?.name).toBe('b');
    expect(decisiveJob([named('a'), busy])).toBeUndefined();
    expect(decisiveJob([named('a'), named('z')])?.metadata?.name).toBe('z');
    expect(decisiveJob([busy])).toBeUndefined();
    expect(decisiveJob([])).toBeUndefined();
    // A Job created suspended that never ran (a helm Upgrade's unneeded rollback) decides nothing; once
    // resumed and started it counts like any other.
    const parked = { ...named('r', job({})), spec: { suspend: true } };
    expect(decisiveJob([named('a'), parked])?.metadata?.name).toBe('a');
    const started = {
      ...named('r', job({ active: 1, startTime: '2026-11-27T10:00:00Z' })),
      spec: { suspend: false },
    };
    expect(decisiveJob([named('a'), started])).toBeUndefined();
  });

  it('a Job is finished once any terminal condition is True', () => {
    expect(jobFinished(job({ active: 1 }))).toBe(false);
    for (const t of ['Complete', 'Failed', 'SuccessCriteriaMet', 'FailureTarget'])
      expect(jobFinished(job({ conditions: [jobCondition(t)] }))).toBe(true);
  });

  it('the job engine puts the exit code and the log tail into its observation', () => {
    const input = runCommand();
    expect(jobAdapter.podOutcomeContainer).toBe(RUN_CONTAINER);
    const failed = jobAdapter.observe(
      [job({ conditions: [jobCondition('Failed', 'BackoffLimitExceeded')] })],
      {
        ...input,
        pods: [{ pod: 'p', container: 'run', exitCode: 3, reason: 'Error', logTail: 'about to fail' }],
      },
    );
    expect(failed).toMatchObject({ phase: 'Failed', reason: 'JobFailed', retryable: true });
    expect(failed.message).toContain(
      'container run of pod p exited with code 3 (Error); last log lines: about to fail',
    );
    const ok = jobAdapter.observe([job({ conditions: [jobCondition('Complete')] })], {
      ...input,
      pods: [{ pod: 'p', container: 'run', exitCode: 0, reason: 'Completed', logTail: 'hello' }],
    });
    expect(ok).toMatchObject({ phase: 'Succeeded', reason: 'JobSucceeded' });
    expect(ok.message).toContain('exited with code 0 (Completed); last log lines: hello');
    // Without outcomes (pod gone, or no pods/log) the message is the Job's alone.
    expect(
      jobAdapter.observe([job({ conditions: [jobCondition('Complete')] })], input).message,
    ).not.toContain('exited');
  });
});
