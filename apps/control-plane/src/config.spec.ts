import { loadControlPlaneConfig } from './config';

describe('LEASE_SWEEP_S', () => {
  it('defaults to one second and accepts fractions', () => {
    expect(loadControlPlaneConfig({}).LEASE_SWEEP_S).toBe(1);
    expect(loadControlPlaneConfig({ LEASE_SWEEP_S: '0.25' }).LEASE_SWEEP_S).toBe(0.25);
  });
  it('stops on a value that is not a sane interval, naming it', () => {
    for (const bad of ['0', '-1', 'often', '0.01', '7200']) {
      expect(() => loadControlPlaneConfig({ LEASE_SWEEP_S: bad })).toThrow(/^invalid configuration: LEASE_SWEEP_S: /);
    }
  });
});
