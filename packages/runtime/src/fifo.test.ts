import { describe, expect, it } from 'vitest';
import { Fifo } from './fifo.ts';

describe('Fifo', () => {
  it('hands items out in the order they were pushed, across compactions', () => {
    const q = new Fifo<number>();
    const out: number[] = [];
    let next = 0;
    // Interleave pushes and shifts so the head passes the compaction point many times.
    for (let round = 0; round < 50; round++) {
      for (let i = 0; i < 700; i++) q.push(next++);
      for (let i = 0; i < 500; i++) out.push(q.shift() as number);
    }
    while (q.length > 0) out.push(q.shift() as number);
    expect(out).toEqual(Array.from({ length: next }, (_, i) => i));
    expect(q.shift()).toBeUndefined();
  });

  it('counts what is left and empties on clear', () => {
    const q = new Fifo<string>();
    expect(q.length).toBe(0);
    q.push('a');
    q.push('b');
    q.push('c');
    expect(q.shift()).toBe('a');
    expect(q.length).toBe(2);
    q.clear();
    expect(q.length).toBe(0);
    expect(q.shift()).toBeUndefined();
    q.push('d');
    expect(q.shift()).toBe('d');
  });
});
