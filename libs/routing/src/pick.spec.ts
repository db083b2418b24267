import { Candidate, parseStrategy, pick, STRATEGIES } from './index';

function cand(id: string, inflight: number, extra: Partial<Candidate> = {}): Candidate {
  return { instance_id: id, inflight, qps_1m: null, waiting: null, saturated: false, weight: 1, max_inflight: null, is_alive: true, ...extra };
}
const input = (ticket = 0, rand1 = 0, rand2 = 0) => ({ ticket, rand1, rand2 });

describe('parseStrategy', () => {
  it('accepts canonical names and aliases', () => {
    expect(parseStrategy('ll')).toBe('least_load');
    expect(parseStrategy('least-load')).toBe('least_load');
    expect(parseStrategy('rr')).toBe('round_robin');
    expect(parseStrategy('p2c')).toBe('power_of_two');
    expect(parseStrategy('random')).toBe('random');
    for (const s of STRATEGIES) expect(parseStrategy(s)).toBe(s);
  });
  it('rejects unknown names', () => {
    expect(parseStrategy('fastest')).toBeUndefined();
  });
});

describe('pick least_load', () => {
  it('takes the lowest in-flight count', () => {
    expect(pick('least_load', [cand('a', 3), cand('b', 1), cand('c', 2)], input())).toEqual({ kind: 'picked', instance_id: 'b' });
  });
  it('breaks in-flight ties by qps_1m', () => {
    const r = pick('least_load', [cand('a', 1, { qps_1m: 5 }), cand('b', 1, { qps_1m: 2 })], input());
    expect(r).toEqual({ kind: 'picked', instance_id: 'b' });
  });
  it('breaks in-flight ties by the engine waiting count before qps_1m (null orders as 0)', () => {
    const cs = [cand('a', 1, { waiting: 3, qps_1m: 0 }), cand('b', 1, { waiting: 1, qps_1m: 9 }), cand('c', 2, { waiting: 0 })];
    expect(pick('least_load', cs, input())).toEqual({ kind: 'picked', instance_id: 'b' });
    expect(pick('least_load', [cand('a', 1, { waiting: 2 }), cand('b', 1)], input())).toEqual({ kind: 'picked', instance_id: 'b' });
    expect(pick('least_load', [cand('a', 1, { waiting: 0, qps_1m: 1 }), cand('b', 1, { qps_1m: 2 })], input())).toEqual({ kind: 'picked', instance_id: 'a' });
  });
  it('round-robins among full ties', () => {
    const cs = [cand('a', 0), cand('b', 0), cand('c', 0)];
    const picked = [0, 1, 2, 3].map((t) => (pick('least_load', cs, input(t)) as { instance_id: string }).instance_id);
    expect(picked).toEqual(['a', 'b', 'c', 'a']);
  });
  it('scales load by weight', () => {
    const r = pick('least_load', [cand('a', 1), cand('b', 1, { weight: 2 })], input());
    expect(r).toEqual({ kind: 'picked', instance_id: 'b' });
  });
  it('skips dead instances and those at max_inflight', () => {
    const cs = [cand('a', 0, { is_alive: false }), cand('b', 2, { max_inflight: 2 }), cand('c', 5)];
    expect(pick('least_load', cs, input())).toEqual({ kind: 'picked', instance_id: 'c' });
  });
  it('reports none alive and all full distinctly', () => {
    expect(pick('least_load', [cand('a', 0, { is_alive: false })], input())).toEqual({ kind: 'none_alive' });
    expect(pick('least_load', [cand('a', 1, { max_inflight: 1 })], input())).toEqual({ kind: 'all_full' });
    expect(pick('least_load', [], input())).toEqual({ kind: 'none_alive' });
  });
});

describe('saturation guard', () => {
  it('skips a saturated instance while another has room, whatever its load', () => {
    const cs = [cand('a', 0, { saturated: true }), cand('b', 7)];
    for (const strategy of STRATEGIES) {
      for (const t of [0, 1, 2]) expect(pick(strategy, cs, input(t, t / 3, 0.5))).toEqual({ kind: 'picked', instance_id: 'b' });
    }
  });
  it('serves from saturated instances when every one with room is saturated', () => {
    const cs = [cand('a', 3, { saturated: true }), cand('b', 1, { saturated: true }), cand('c', 0, { max_inflight: 0 })];
    expect(pick('least_load', cs, input())).toEqual({ kind: 'picked', instance_id: 'b' });
    expect(pick('round_robin', cs, input(1))).toEqual({ kind: 'picked', instance_id: 'b' });
  });
  it('does not count a full unsaturated instance as room', () => {
    const cs = [cand('a', 2, { max_inflight: 2 }), cand('b', 5, { saturated: true })];
    expect(pick('least_load', cs, input())).toEqual({ kind: 'picked', instance_id: 'b' });
  });
});

describe('other strategies', () => {
  const cs = [cand('b', 9), cand('a', 0), cand('c', 4)];
  it('round_robin walks candidates in id order regardless of load', () => {
    const picked = [0, 1, 2].map((t) => (pick('round_robin', cs, input(t)) as { instance_id: string }).instance_id);
    expect(picked).toEqual(['a', 'b', 'c']);
  });
  it('random maps the random number onto the candidates', () => {
    expect(pick('random', cs, input(0, 0.99))).toEqual({ kind: 'picked', instance_id: 'c' });
    expect(pick('random', cs, input(0, 0))).toEqual({ kind: 'picked', instance_id: 'a' });
  });
  it('power_of_two takes the less loaded of two distinct samples', () => {
    // rand1 -> index 1 (b, 9); rand2 -> index 0 of the rest, i.e. a (0)
    expect(pick('power_of_two', cs, input(0, 0.5, 0))).toEqual({ kind: 'picked', instance_id: 'a' });
    // rand1 -> c (4), rand2 -> b (9)
    expect(pick('power_of_two', cs, input(0, 0.9, 0.9))).toEqual({ kind: 'picked', instance_id: 'c' });
  });
});
